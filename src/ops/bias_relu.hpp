// bias_relu: out = max(x + bias, 0) with bias over the last axis of x, fused
// into one pass (load x, add bias[col], max, store once), f32/f16/bf16.
#pragma once

#include <cutlass/fast_math.h>

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kBiasReluTarget[] = "cutlax_bias_relu_v1";

template <class T>
struct BiasRelu {
  const T* bias;
  int64_t width;
  // The column of a flat index is index % width; a multiply-high division by
  // a constant is several times cheaper than a 64-bit modulo per run.
  cutlass::FastDivmodU64 by_width;

  CUTE_HOST_DEVICE T apply(T x, int64_t col) const {
    return kernels::relu(T(float(x) + float(bias[col])));
  }
  template <class Frag>
  CUTE_HOST_DEVICE void run(Frag& frag, int64_t first) const {
    const int64_t col = first - int64_t(by_width.divide(first)) * width;
    if (col + cute::size(frag) <= width) {  // the run stays in one row
      CUTE_UNROLL
      for (int i = 0; i < cute::size(frag); ++i) frag(i) = apply(frag(i), col + i);
    } else {
      CUTE_UNROLL
      for (int i = 0; i < cute::size(frag); ++i) frag(i) = element(frag(i), first + i);
    }
  }
  CUTE_HOST_DEVICE T element(T x, int64_t index) const {
    return apply(x, index % width);
  }
};

template <class Exec>
ffi::Error bias_relu(Exec exec, ffi::AnyBuffer x, ffi::AnyBuffer bias,
                     ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_min_rank(x, "x", 1));
  CUTLAX_RETURN_IF_ERROR(expect_rank(bias, "bias", 1));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(bias, "bias", x, "x"));
  const int64_t width = x.dimensions().back();
  CUTLAX_RETURN_IF_ERROR(
      expect_dim(bias, "bias", 0, width, "the width of x's last axis"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", x, "x"));
  if (width == 0) return ffi::Error::Success();
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    BiasRelu<T> fn{static_cast<const T*>(bias.untyped_data()), width,
                   cutlass::FastDivmodU64(uint64_t(width))};
    return kernels::map_flat(exec, "bias_relu", fn, flat_view<T>(out),
                             flat_view<T>(x));
  });
}

}  // namespace cutlax::ops
