// gemm_tiled (cutlax.gemm's impl="tiled"): c[M, N] = a[M, K] @ b[K, N] in
// float32, the teaching CuTe GEMM (gemm_tiled.cu) and its CPU twin
// (gemm_tiled_cpu.cpp). M, N and K come
// from the buffers' shapes at run time, so one compiled kernel serves every
// size, including ones that are not multiples of the tile.
#pragma once

#include <cutlax/cutlax.hpp>

namespace cutlax::ops {

// CuTe's convention: the GEMM is C(m, n) = sum_k A(m, k) * B(n, k), so b[K, N]
// in row-major order is viewed as B(n, k) with strides (1, N).
using GemmBLayout = cute::Layout<cute::Shape<int64_t, int64_t>, cute::Stride<cute::_1, int64_t>>;
using GemmB = GlobalTensor<const float, GemmBLayout>;

ffi::Error gemm_tiled_launch(Host, Matrix<float> c, Matrix<const float> a, GemmB b);
ffi::Error gemm_tiled_launch(Cuda, Matrix<float> c, Matrix<const float> a, GemmB b);

template <class Exec>
ffi::Error gemm_tiled(Exec exec, Buffer<Float32> a, Buffer<Float32> b,
                      ffi::Result<ffi::AnyBuffer> c) {
  CUTLAX_RETURN_IF_ERROR(expect_rank(a, "a", 2));
  CUTLAX_RETURN_IF_ERROR(expect_rank(b, "b", 2));
  const int64_t m = a.dimensions()[0], k = a.dimensions()[1], n = b.dimensions()[1];
  CUTLAX_RETURN_IF_ERROR(expect_dim(b, "b", 0, k, "a's columns, K"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(*c, "result", 2));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 0, m, "a's rows, M"));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 1, n, "b's columns, N"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(*c, "result", a, "a"));
  GemmB b_nk =
      view<float>(b, cute::make_layout(cute::make_shape(n, k), cute::make_stride(cute::_1{}, n)));
  return gemm_tiled_launch(exec, matrix_view<float>(c), matrix_view<float>(a), b_nk);
}
CUTLAX_OP_TEMPLATE("cutlax_gemm_tiled_v1", gemm_tiled, "gemm_tiled(a, b) -> c")

}  // namespace cutlax::ops
