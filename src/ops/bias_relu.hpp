// bias_relu: out = max(x + bias, 0) with bias over the last axis of x, fused
// into one pass (load x, add bias[col], max, store once), f32/f16/bf16.
#pragma once

#include <cutlass/fast_math.h>

#include "elementwise.hpp"

namespace cutlax::ops {

// The flat-indexing functor: a run's column is its flat index modulo the
// width. VectorBias (GPU): the run's bias slice is loaded with 128-bit
// accesses, which needs width % run length == 0 (every run then starts a
// multiple of the run length into its row) and a 16-byte aligned bias.
template <class T, bool VectorBias>
struct BiasRelu {
  const T* bias;
  int64_t width;
  // The column of a flat index is index % width; a multiply-high division by
  // a constant is several times cheaper than a 64-bit modulo per run.
  cutlass::FastDivmodU64 by_width;

  // relu in float, then one rounding: the same value as rounding first (only
  // a sum in (-tiny, 0) differs, as +0 instead of -0), and one conversion
  // fewer on the host.
  template <class U>
  CUTE_HOST_DEVICE U apply(U x, T b) const {
    return from_float<U>(kernels::relu(to_float(x) + to_float(b)));
  }
  template <class Out, class In>
  CUTE_HOST_DEVICE void run(Out& out, int64_t first, In const& x) const {
    using namespace cute;
    constexpr int n = decltype(size(out))::value;
    const int64_t col = first - int64_t(by_width.divide(first)) * width;
    if (col + n <= width) {  // the run stays in one row
#if defined(__CUDA_ARCH__)
      // Into registers, with 128-bit loads where VectorBias allows them.
      constexpr int kBits = VectorBias ? 128 : 8 * sizeof(T);
      auto b = make_tensor<T>(Int<n>{});
      copy(AutoVectorizingCopyWithAssumedAlignment<kBits>{},
           make_tensor(make_gmem_ptr(bias + col), Int<n>{}), b);
#else
      // On the host a staging copy only costs time: the loop below vectorises
      // over plain reads.
      auto b = make_tensor(bias + col, Int<n>{});
#endif
      CUTE_UNROLL
      for (int i = 0; i < n; ++i) out(i) = apply(x(i), b(i));
    } else {  // the run wraps into the next row(s)
      int64_t c = col;
      CUTE_UNROLL
      for (int i = 0; i < n; ++i) {
        out(i) = apply(x(i), bias[c]);
        c = c + 1 == width ? 0 : c + 1;
      }
    }
  }
  CUTE_HOST_DEVICE T element(int64_t index, T x) const { return apply(x, bias[index % width]); }
};

template <class Exec>
ffi::Error bias_relu(Exec exec, Buffer<FloatTypes> x, Buffer<FloatTypes> bias,
                     ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_min_rank(x, "x", 1));
  CUTLAX_RETURN_IF_ERROR(expect_rank(bias, "bias", 1));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(bias, "bias", x, "x"));
  const int64_t width = x.dimensions().back();
  CUTLAX_RETURN_IF_ERROR(expect_dim(bias, "bias", 0, width, "the width of x's last axis"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", x, "x"));
  if (width == 0) return ffi::Error::Success();
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* b = static_cast<const T*>(bias.untyped_data());
    const cutlass::FastDivmodU64 by_width{static_cast<uint64_t>(width)};
    if (width % kernels::kVectorElements<T> == 0 && is_aligned_16(b)) {
      return kernels::map_indexed(exec, "bias_relu", BiasRelu<T, true>{b, width, by_width},
                                  flat_view<T>(out), flat_view<T>(x));
    }
    return kernels::map_indexed(exec, "bias_relu", BiasRelu<T, false>{b, width, by_width},
                                flat_view<T>(out), flat_view<T>(x));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_bias_relu_v1", bias_relu, "bias_relu(x, bias) -> out")

}  // namespace cutlax::ops
