#include "hash.hpp"

#include <cstring>

namespace cutlax::jit {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

// The two halves of a 128-bit key.
constexpr uint64_t kSeed1 = 0x6375746c6178;
constexpr uint64_t kSeed2 = 0x6a69745f6b6579;

constexpr uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const unsigned char* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

// One word into the running state: spread its bits before they meet the state.
uint64_t absorb(uint64_t state, uint64_t word) {
  state ^= rotl(word * kPrime2, 31) * kPrime1;
  return rotl(state, 27) * kPrime1 + kPrime3;
}

// Final avalanche, so every input bit affects every output bit.
uint64_t finish(uint64_t h) {
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

}  // namespace

uint64_t hash64(const void* data, size_t size, uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t state = seed + kPrime3 + static_cast<uint64_t>(size) * kPrime1;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) state = absorb(state, load64(bytes + i));
  uint64_t tail = 0;
  for (size_t j = 0; i + j < size; ++j) tail |= uint64_t{bytes[i + j]} << (8 * j);
  return finish(absorb(state, tail));
}

uint64_t KeyBuilder::hash() const { return hash64(bytes_.data(), bytes_.size(), kSeed1); }

KeyBuilder& KeyBuilder::add(std::string_view field) {
  add(static_cast<uint64_t>(field.size()));
  bytes_.append(field);
  return *this;
}

KeyBuilder& KeyBuilder::add(uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>(value >> (8 * i)));
  return *this;
}

std::string KeyBuilder::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint64_t seed : {kSeed1, kSeed2}) {
    uint64_t h = hash64(bytes_.data(), bytes_.size(), seed);
    for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kDigits[(h >> shift) & 0xF]);
  }
  return out;
}

}  // namespace cutlax::jit
