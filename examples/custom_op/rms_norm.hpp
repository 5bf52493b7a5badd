// RMSNorm over the last axis: y = x / sqrt(mean(x^2) + eps) * weight.
//
// XLA computes this as a reduction and then an elementwise pass, reading x
// twice from memory; here each row is read once, while one thread block
// keeps it in L1, and written once.
#pragma once

#include <cutlax/cutlax.hpp>

inline constexpr const char kRmsNormTarget[] = "rms_norm_example_v1";

// The static attribute: compiled into the program, one value per program.
struct RmsNormParams {
  float eps;
};
CUTLAX_PARAMS(RmsNormParams, eps)

// 1 / sqrt(mean square + eps) of a row's sum of squares.
CUTE_HOST_DEVICE float inverse_rms(float sum_of_squares, int64_t width, float eps) {
  return 1.0f / sqrtf(sum_of_squares / float(width) + eps);
}
