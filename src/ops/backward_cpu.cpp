// CPU twins of the backward passes (see backward.hpp).
#include <vector>

#include "backward.hpp"
#include "elementwise_cpu.hpp"

namespace cutlax::kernels {

// dx = mask(y, g) over rows [first, end), and each column's sum of dx into
// sums. Row by row, so the inner loop runs over contiguous columns; the sizes
// are parameters, not captured references, because through a reference every
// store to dx might change them (this code builds with -fno-strict-aliasing)
// and the loop would not vectorise.
template <class T>
CUTLAX_HOST_LOOP void mask_and_sum_rows(Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                                        float* sums, int64_t first, int64_t end, int64_t width) {
  std::fill(sums, sums + width, 0.0f);
  for (int64_t r = first; r < end; ++r) {
    const T* y_row = &y(r, 0);
    const T* g_row = &g(r, 0);
    T* dx_row = &dx(r, 0);
    for (int64_t j = 0; j < width; ++j) {
      const float d = ops::ReluMask{}.masked(y_row[j], g_row[j]);
      dx_row[j] = from_float<T>(d);
      sums[j] += d;
    }
  }
}

// The same split as the CUDA kernel: row chunk c is one pool task summing
// into partials' row c, and the chunks are added up in order afterwards, so
// the result does not depend on how many threads ran.
template <class T>
ffi::Error masked_column_sums(Host exec, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y), chunks = size<0>(partials);
  const int64_t chunk_rows = rows_per_chunk(rows, chunks);
  exec.parallel_for(chunks, [&](int64_t chunk) {
    mask_and_sum_rows(y, g, dx, &partials(chunk, 0), chunk * chunk_rows,
                      std::min(rows, (chunk + 1) * chunk_rows), width);
  });
  // Row by row, in chunk order (the same additions as a loop over chunks per
  // column, so the same bits), to read partials contiguously: summed per
  // column, its strided reads took longer than the sweep itself at 2^20
  // elements.
  std::vector<float> totals(width, 0.0f);
  for (int64_t c = 0; c < chunks; ++c) {
    const float* row = &partials(c, 0);
    for (int64_t j = 0; j < width; ++j) totals[j] += row[j];
  }
  for (int64_t j = 0; j < width; ++j) dbias(j) = from_float<T>(totals[j]);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels

CUTLAX_OP(cutlax::ops::kReluBackwardTarget, cutlax::ops::relu_backward<cutlax::Host>,
          "relu_backward(y, g) -> dx")
CUTLAX_OP(cutlax::ops::kBiasReluBackwardTarget, cutlax::ops::bias_relu_backward<cutlax::Host>,
          "bias_relu_backward(y, g) -> dx, dbias, partials")
