// The fuzzer's bytes, read front to back by a harness: bytes, little-endian
// integers and NUL-terminated strings. Past the end every read gives zeros
// (or an empty string), so any input decodes to something.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace cutlax::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool done() const { return at_ >= size_; }
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }

  // n bytes into out, zero-filled past the end.
  void bytes(void* out, size_t n) {
    const size_t take = std::min(n, size_ - std::min(at_, size_));
    if (take) std::memcpy(out, data_ + at_, take);
    std::memset(static_cast<uint8_t*>(out) + take, 0, n - take);
    at_ += take;
  }

  template <class Int>
  Int integer() {
    static_assert(std::is_integral_v<Int>);
    std::make_unsigned_t<Int> value = 0;
    for (size_t i = 0; i < sizeof(Int); ++i) {
      value |= static_cast<std::make_unsigned_t<Int>>(byte()) << (8 * i);
    }
    return static_cast<Int>(value);
  }

  // Up to the next NUL (consumed) or the end.
  std::string_view string() {
    if (done()) return "";
    const size_t start = at_;
    const void* nul = std::memchr(data_ + start, 0, size_ - start);
    const size_t end = nul ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - data_) : size_;
    at_ = end + 1;
    return {reinterpret_cast<const char*>(data_ + start), end - start};
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

}  // namespace cutlax::fuzz
