// CPU twins of the backward passes (see backward.hpp).
#include "backward.hpp"
#include "elementwise_cpu.hpp"

namespace cutlax::kernels {

template <class T>
ffi::Error masked_column_sums(Host, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y), chunks = size<0>(partials);
  const int64_t chunk_rows = std::max<int64_t>(rows_per_chunk(rows, chunks), 1);
  // Row by row, so the inner loop runs over contiguous columns and vectorises.
  for (int64_t c = 0; c < chunks; ++c) {
    float* sums = &partials(c, 0);
    std::fill(sums, sums + width, 0.0f);
    for (int64_t r = c * chunk_rows; r < std::min(rows, (c + 1) * chunk_rows); ++r) {
      const T* y_row = &y(r, 0);
      const T* g_row = &g(r, 0);
      T* dx_row = &dx(r, 0);
      for (int64_t j = 0; j < width; ++j) {
        dx_row[j] = ops::ReluMask<T>{}(y_row[j], g_row[j]);
        sums[j] += float(dx_row[j]);
      }
    }
  }
  for (int64_t j = 0; j < width; ++j) {
    float total = 0;
    for (int64_t c = 0; c < chunks; ++c) total += partials(c, j);
    dbias(j) = T(total);
  }
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels

CUTLAX_REGISTER(cutlax::ops::kReluBackwardTarget, Host, cutlax::ops::relu_backward)
CUTLAX_REGISTER(cutlax::ops::kBiasReluBackwardTarget, Host, cutlax::ops::bias_relu_backward)
