// A fast non-cryptographic 64-bit hash: the artifact checksum and, two seeds
// side by side, the 128-bit key of the compile cache. It guards against
// truncated or corrupted files and accidental collisions, not adversaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cutlax::jit {

uint64_t hash64(const void* data, size_t size, uint64_t seed);

// Collects fields into one unambiguous byte string (each field prefixed with
// its length) and hashes it with two seeds: a 128-bit key as 32 hex digits.
class KeyBuilder {
 public:
  KeyBuilder& add(std::string_view field);
  KeyBuilder& add(uint64_t value);
  std::string hex() const;
  uint64_t hash() const;  // the first 64 bits of the key

 private:
  std::string bytes_;
};

}  // namespace cutlax::jit
