// to_float(x) and from_float<T>(f): the conversions between 16-bit floats and
// float that elementwise functors compute through (arithmetic in float,
// rounded once to the element type, round-to-nearest-even).
//
// On the GPU they are cutlass's conversions, which compile to the hardware's
// cvt instructions. On the host cutlass converts one value at a time with
// branches (and for half_t a normalisation loop), which keeps a CPU twin's
// loop from vectorising; the host versions here are the same IEEE
// conversions written without branches, so a loop over a run of elements
// becomes vector code (tests/cpp/convert_test.cpp checks them against
// cutlass's for every 16-bit pattern).
#pragma once

#include <cutlass/numeric_types.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cutlax {

namespace detail {
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// cond ? a : b as bit arithmetic: GCC will not turn a ?: whose arms hold
// float operations into a vector blend (they could trap), but it vectorises
// this.
inline uint32_t select(bool cond, uint32_t a, uint32_t b) {
  return b ^ ((a ^ b) & -uint32_t(cond));
}

inline float bf16_to_float(uint16_t h) { return float_of(uint32_t(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return uint16_t(select((u & 0x7fffffffu) > 0x7f800000u, quiet_nan, rounded));
}

inline float half_to_float(uint16_t h) {
  const uint32_t exponent_mask = 0x7c00u << 13;
  const uint32_t magnitude = uint32_t(h & 0x7fffu) << 13;
  const uint32_t exponent = magnitude & exponent_mask;
  const uint32_t normal = magnitude + ((127u - 15u) << 23);
  // Inf and NaN: the exponent goes all ones.
  const uint32_t special = normal + ((128u - 16u) << 23);
  // Zero and subnormals: let the FPU normalise (x * 2^-14 exactly).
  const uint32_t subnormal = bits_of(float_of(normal + (1u << 23)) - float_of(113u << 23));
  const uint32_t out =
      select(exponent == exponent_mask, special, select(exponent == 0, subnormal, normal));
  return float_of(out | (uint32_t(h & 0x8000u) << 16));
}

inline uint16_t float_to_half(float f) {
  const uint32_t u = bits_of(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t magnitude = u & 0x7fffffffu;
  // Too large for half: Inf, or a quiet NaN.
  const uint32_t overflow = select(magnitude > 0x7f800000u, 0x7e00u, 0x7c00u);
  // Below half's smallest normal: adding 0.5 aligns the bits to keep at the
  // bottom of the mantissa, and the FPU rounds them to nearest even.
  const uint32_t denormal_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const uint32_t subnormal =
      bits_of(float_of(magnitude) + float_of(denormal_magic)) - denormal_magic;
  // Normal: rebias, then round to nearest even on the 13 dropped bits.
  const uint32_t normal =
      (magnitude + ((15u - 127u) << 23) + 0xfffu + ((magnitude >> 13) & 1u)) >> 13;
  const uint32_t out = select(magnitude >= (143u << 23), overflow,
                              select(magnitude < (113u << 23), subnormal, normal));
  return uint16_t(out | sign);
}
}  // namespace detail

template <class T>
CUTE_HOST_DEVICE float to_float(T x) {
#if defined(__CUDA_ARCH__)
  return float(x);
#else
  if constexpr (std::is_same_v<T, cutlass::bfloat16_t>) {
    return detail::bf16_to_float(x.raw());
  } else if constexpr (std::is_same_v<T, cutlass::half_t>) {
    return detail::half_to_float(x.raw());
  } else {
    return float(x);
  }
#endif
}

template <class T>
CUTE_HOST_DEVICE T from_float(float f) {
#if defined(__CUDA_ARCH__)
  return T(f);
#else
  if constexpr (std::is_same_v<T, cutlass::bfloat16_t>) {
    return cutlass::bfloat16_t::bitcast(detail::float_to_bf16(f));
  } else if constexpr (std::is_same_v<T, cutlass::half_t>) {
    return cutlass::half_t::bitcast(detail::float_to_half(f));
  } else {
    return T(f);
  }
#endif
}

}  // namespace cutlax
