// bias_relu_backward: bias_relu's reverse-mode step in one sweep over the
// forward result y and the cotangent g: dx = g where y > 0, else 0 (relu's
// mask, relu_backward.hpp), and dbias = the column sums of dx.
//
// dbias is accumulated in f32, one partial sum per (row chunk, column) in
// `partials`, a (chunks, width) f32 scratch result, and the chunks are summed
// in a second, short pass. The order of additions is fixed, so dbias is
// deterministic (no atomics), and a result buffer is allocated by XLA ahead of
// time (FFI scratch memory is not), so the handler stays capturable in a
// command buffer. The caller picks the chunk count through partials' shape.
#pragma once

#include "elementwise.hpp"
#include "relu_backward.hpp"

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
ffi::Error bias_relu_backward(Exec exec, Buffer<FloatTypes> y, Buffer<FloatTypes> g,
                              ffi::Result<ffi::AnyBuffer> dx, ffi::Result<ffi::AnyBuffer> dbias,
                              Scratch<float> partials) {
  CUTLAX_RETURN_IF_ERROR(expect_min_rank(y, "y", 1));
  CUTLAX_RETURN_IF_ERROR(expect_like(g, "g", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*dx, "dx", y, "y"));
  const int64_t width = y.dimensions().back();
  CUTLAX_RETURN_IF_ERROR(expect_rank(*dbias, "dbias", 1));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(*dbias, "dbias", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*dbias, "dbias", 0, width, "the width of y's last axis"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(partials.buffer(), "partials", 2));
  CUTLAX_RETURN_IF_ERROR(
      expect_dim(partials.buffer(), "partials", 1, width, "the width of y's last axis"));
  if (partials.dim(0) < 1) {
    return invalid_argument(
        "partials", "must have at least one row chunk, got shape " + shape_string(partials.dims()));
  }
  return dispatch(FloatTypes{}, y.element_type(), "y", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::masked_column_sums(exec, matrix_view<T>(y), matrix_view<T>(g),
                                       matrix_view<T>(dx), flat_view<T>(dbias), partials.matrix());
  });
}
CUTLAX_OP_TEMPLATE("cutlax_bias_relu_backward_v1", bias_relu_backward,
                   "bias_relu_backward(y, g) -> dx, dbias, partials")

}  // namespace cutlax::ops
