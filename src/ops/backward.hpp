// Backward passes of relu and bias_relu, from the forward result y and the
// cotangent g (y > 0 exactly where the forward input was > 0, so y is the
// only residual either needs):
//   relu_backward       dx = g where y > 0, else 0 (relu's mask)
//   bias_relu_backward  the same dx, and dbias = the column sums of dx, in one
//                       sweep over y and g
// dbias is accumulated in f32, one partial sum per (row chunk, column) in
// `partials`, a (chunks, width) f32 result, and the chunks are summed in a
// second, short pass. The order of additions is fixed, so dbias is
// deterministic (no atomics), and a result buffer is allocated by XLA ahead of
// time (FFI scratch memory is not), so the handler stays capturable in a
// command buffer. The caller picks the chunk count through partials' shape.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kReluBackwardTarget[] = "cutlax_relu_backward_v1";
inline constexpr const char kBiasReluBackwardTarget[] = "cutlax_bias_relu_backward_v1";

struct ReluMask {
  // g where y > 0, else 0, as a float. The select is on floats (and rounding
  // it back is exact: g is already a T) so that host loops vectorise; a ?:
  // over 16-bit class objects stays a branch.
  template <class T>
  CUTE_HOST_DEVICE float masked(T y, T g) const {
    const float gradient = to_float(g);
    return to_float(y) > 0.0f ? gradient : 0.0f;
  }
  template <class T>
  CUTE_HOST_DEVICE T operator()(T y, T g) const {
    return from_float<T>(masked(y, g));
  }
};

template <class Exec>
ffi::Error relu_backward(Exec exec, ffi::AnyBuffer y, ffi::AnyBuffer g,
                         ffi::Result<ffi::AnyBuffer> dx) {
  CUTLAX_RETURN_IF_ERROR(expect_like(g, "g", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*dx, "dx", y, "y"));
  return dispatch(FloatTypes{}, y.element_type(), "y", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "relu_backward", ReluMask{}, flat_view<T>(dx), flat_view<T>(y),
                        flat_view<T>(g));
  });
}

}  // namespace cutlax::ops

namespace cutlax::kernels {

// dx = mask(y, g) and partials(c, j) = sum of dx(i, j) over chunk c's rows,
// then dbias(j) = sum over c of partials(c, j). The chunks split the rows
// evenly (the last may be shorter).
template <class T>
ffi::Error masked_column_sums(Cuda exec, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials);
template <class T>
ffi::Error masked_column_sums(Host exec, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials);

inline int64_t rows_per_chunk(int64_t rows, int64_t chunks) { return ceil_div(rows, chunks); }

}  // namespace cutlax::kernels

namespace cutlax::ops {

template <class Exec>
ffi::Error bias_relu_backward(Exec exec, ffi::AnyBuffer y, ffi::AnyBuffer g,
                              ffi::Result<ffi::AnyBuffer> dx, ffi::Result<ffi::AnyBuffer> dbias,
                              ffi::Result<ffi::AnyBuffer> partials) {
  CUTLAX_RETURN_IF_ERROR(expect_min_rank(y, "y", 1));
  CUTLAX_RETURN_IF_ERROR(expect_like(g, "g", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*dx, "dx", y, "y"));
  const int64_t width = y.dimensions().back();
  CUTLAX_RETURN_IF_ERROR(expect_rank(*dbias, "dbias", 1));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(*dbias, "dbias", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*dbias, "dbias", 0, width, "the width of y's last axis"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(*partials, "partials", 2));
  CUTLAX_RETURN_IF_ERROR(expect_dtype(partials->element_type(), "partials", Float32{}));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*partials, "partials", 1, width, "the width of y's last axis"));
  if (partials->dimensions()[0] < 1) {
    return invalid_argument("partials", "must have at least one row chunk, got shape " +
                                            shape_string(partials->dimensions()));
  }
  return dispatch(FloatTypes{}, y.element_type(), "y", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::masked_column_sums(exec, matrix_view<T>(y), matrix_view<T>(g),
                                       matrix_view<T>(dx), flat_view<T>(dbias),
                                       matrix_view<float>(partials));
  });
}

}  // namespace cutlax::ops
