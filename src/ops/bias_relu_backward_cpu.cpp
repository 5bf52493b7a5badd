// bias_relu_backward's CPU twin (see bias_relu_backward.hpp).
#include <type_traits>
#include <vector>

#include "bias_relu_backward.hpp"
#include "elementwise_cpu.hpp"

namespace cutlax::kernels {

// The sweep over count columns of one row: dx = mask(y, g), and each
// column's dx added to its sum. U is the rows' type or, for half rows widened
// by F16C, float (masking and summing floats widened from halves gives the
// same values as on the halves).
template <class U>
inline void mask_and_sum(const U* y, const U* g, U* dx, float* sums, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    const float d = ops::ReluMask{}.masked(y[j], g[j]);
    dx[j] = from_float<U>(d);
    sums[j] += d;
  }
}

// dx = mask(y, g) over rows [first, end), and each column's sum of dx into
// sums. Row by row, so the inner loop runs over contiguous columns; the sizes
// are parameters, not captured references, because through a reference every
// store to dx might change them (this code builds with -fno-strict-aliasing)
// and the loop would not vectorise.
template <class T>
CUTLAX_HOST_LOOP void mask_and_sum_rows(Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                                        float* sums, int64_t first, int64_t end, int64_t width) {
  std::fill(sums, sums + width, 0.0f);
  for (int64_t r = first; r < end; ++r) mask_and_sum(&y(r, 0), &g(r, 0), &dx(r, 0), sums, width);
}

#if defined(CUTLAX_HAVE_F16C_PATH)
// The same for half rows on CPUs with F16C (elementwise_cpu.hpp says why):
// segments of up to 512 columns are widened to floats, swept, and dx
// narrowed back; the last width % 8 columns take the portable path.
CUTLAX_F16C_TARGET void mask_and_sum_half_rows(Matrix<const cutlass::half_t> y,
                                               Matrix<const cutlass::half_t> g,
                                               Matrix<cutlass::half_t> dx, float* sums,
                                               int64_t first, int64_t end, int64_t width) {
  constexpr int64_t kSegment = 512;
  const int64_t whole = width / 8 * 8;
  std::fill(sums, sums + width, 0.0f);
  for (int64_t r = first; r < end; ++r) {
    const cutlass::half_t* y_row = &y(r, 0);
    const cutlass::half_t* g_row = &g(r, 0);
    cutlass::half_t* dx_row = &dx(r, 0);
    for (int64_t j0 = 0; j0 < whole; j0 += kSegment) {
      const int64_t count = std::min(kSegment, whole - j0);
      float y_wide[kSegment], g_wide[kSegment], dx_wide[kSegment];
      widen_halves(y_row + j0, y_wide, count);
      widen_halves(g_row + j0, g_wide, count);
      mask_and_sum(y_wide, g_wide, dx_wide, sums + j0, count);
      narrow_to_halves(dx_wide, dx_row + j0, count);
    }
    mask_and_sum(y_row + whole, g_row + whole, dx_row + whole, sums + whole, width - whole);
  }
}
#endif

// The same split as the CUDA kernel: row chunk c is one pool task summing
// into partials' row c, and the chunks are added up in order afterwards, so
// the result does not depend on how many threads ran.
template <class T>
ffi::Error masked_column_sums(Host exec, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y), chunks = size<0>(partials);
  // No columns, nothing to compute, whatever the rows: an empty y may still
  // claim 2^40 of them, and walking those took hours (found by fuzz_handlers).
  if (width == 0) return ffi::Error::Success();
  const int64_t chunk_rows = rows_per_chunk(rows, chunks);
  exec.parallel_for(chunks, [&](int64_t chunk) {
    const int64_t first = chunk * chunk_rows, end = std::min(rows, first + chunk_rows);
#if defined(CUTLAX_HAVE_F16C_PATH)
    if constexpr (std::is_same_v<T, cutlass::half_t>) {
      if (cpu_has_f16c())
        return mask_and_sum_half_rows(y, g, dx, &partials(chunk, 0), first, end, width);
    }
#endif
    mask_and_sum_rows(y, g, dx, &partials(chunk, 0), first, end, width);
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
