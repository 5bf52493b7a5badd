// The GEMM's CPU twin: C = A B over the same CuTe views, as an i-k-j loop
// whose inner loop runs along contiguous rows of B and C (vectorisable), in
// blocks of rows so each row of B is reused from cache.
#include <algorithm>

#include "gemm.hpp"

namespace cutlax::ops {

ffi::Error gemm_tiled_launch(Host, Matrix<float> c, Matrix<const float> a, GemmB b) {
  const int64_t m = cute::size<0>(a), n = cute::size<0>(b), k = cute::size<1>(a);
  const float* pa = a.data().get();
  const float* pb = b.data().get();
  float* pc = c.data().get();
  std::fill(pc, pc + m * n, 0.0f);
  constexpr int64_t kRowBlock = 8;
  for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
    const int64_t i1 = std::min(m, i0 + kRowBlock);
    for (int64_t p = 0; p < k; ++p) {
      const float* b_row = pb + p * n;
      for (int64_t i = i0; i < i1; ++i) {
        const float a_ip = pa[i * k + p];
        float* c_row = pc + i * n;
        for (int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
      }
    }
  }
  return ffi::Error::Success();
}

}  // namespace cutlax::ops

CUTLAX_OP(cutlax::ops::kGemmTiledTarget, cutlax::ops::gemm_tiled<cutlax::Host>,
          "gemm_tiled(a, b) -> c")
