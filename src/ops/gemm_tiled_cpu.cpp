// The GEMM's CPU twin: C = A B over the same CuTe views, blocked like the GPU
// kernel's per-thread work: a tile of kTileRows x kTileCols outputs is summed
// in registers over all of K (per step of K, kTileRows broadcasts of A and
// kTileCols / 8 vector loads of B feed kTileRows * kTileCols / 8 vector FMAs
// in the x86-64-v3 clone, whose 16 AVX registers hold the 12 accumulators),
// and panels of rows are spread over XLA:CPU's thread pool. Rows and columns
// past the last whole tile take a plain i-k-j loop. Every output sums its K
// products in order, p = 0, 1, ..., so the result does not depend on how many
// threads ran.
#include <algorithm>
#include <cstring>

#include "gemm_tiled.hpp"

namespace cutlax::ops {
namespace {

constexpr int64_t kTileRows = 6;
constexpr int64_t kTileCols = 16;
// A pool task: 8 tiles of rows, 48 x N outputs, in steps of 256 along K.
constexpr int64_t kPanelRows = 8 * kTileRows;
constexpr int64_t kDepthBlock = 256;

// Row-major operands: a is m x k, b is k x n, c is m x n. The sizes are
// members, not captured references, so that stores to c cannot change them
// as far as the compiler knows (this code builds with -fno-strict-aliasing).
struct RowMajor {
  const float* a;
  const float* b;
  float* c;
  int64_t n, k;
};

// Eight floats as one value: GCC and Clang give its arithmetic to AVX in the
// x86-64-v3 clone and to pairs of SSE operations in the baseline. (An array
// of plain floats as the accumulator tile is split into scalars and spilled.)
using Float8 = float __attribute__((vector_size(32)));
constexpr int64_t kVectorsPerTileRow = kTileCols / 8;

// Adds the products p in [p_begin, p_end) to C(i, j) for i in [row_begin,
// row_end) and j in [0, col_end), both ranges a whole number of tiles (the
// first block of K starts from zero instead of C). Column panels outside,
// row tiles inside: one panel of B (a block of K x kTileCols) stays in cache
// while the task's rows go past it.
CUTLAX_HOST_LOOP void whole_tiles(RowMajor g, int64_t row_begin, int64_t row_end, int64_t col_end,
                                  int64_t p_begin, int64_t p_end) {
  for (int64_t j0 = 0; j0 < col_end; j0 += kTileCols) {
    for (int64_t i0 = row_begin; i0 < row_end; i0 += kTileRows) {
      Float8 acc[kTileRows][kVectorsPerTileRow] = {};
      if (p_begin > 0) {
        for (int64_t r = 0; r < kTileRows; ++r) {
          std::memcpy(acc[r], g.c + (i0 + r) * g.n + j0, sizeof(acc[r]));
        }
      }
      for (int64_t p = p_begin; p < p_end; ++p) {
        Float8 b[kVectorsPerTileRow];
        for (int64_t v = 0; v < kVectorsPerTileRow; ++v) {
          std::memcpy(&b[v], g.b + p * g.n + j0 + 8 * v, sizeof(Float8));
        }
#pragma GCC unroll 8
        for (int64_t r = 0; r < kTileRows; ++r) {
          const Float8 a_rp = Float8{} + g.a[(i0 + r) * g.k + p];
          for (int64_t v = 0; v < kVectorsPerTileRow; ++v) acc[r][v] += a_rp * b[v];
        }
      }
      for (int64_t r = 0; r < kTileRows; ++r) {
        std::memcpy(g.c + (i0 + r) * g.n + j0, acc[r], sizeof(acc[r]));
      }
    }
  }
}

// C(i, j) for i in [row_begin, row_end) and j in [col_begin, n): an i-k-j
// loop whose inner loop runs along contiguous rows of B and C.
CUTLAX_HOST_LOOP void plain_rows(RowMajor g, int64_t row_begin, int64_t row_end,
                                 int64_t col_begin) {
  for (int64_t i = row_begin; i < row_end; ++i) {
    float* c_row = g.c + i * g.n;
    std::fill(c_row + col_begin, c_row + g.n, 0.0f);
    for (int64_t p = 0; p < g.k; ++p) {
      const float a_ip = g.a[i * g.k + p];
      const float* b_row = g.b + p * g.n;
      for (int64_t j = col_begin; j < g.n; ++j) c_row[j] += a_ip * b_row[j];
    }
  }
}

}  // namespace

ffi::Error gemm_tiled_launch(Host exec, Matrix<float> c, Matrix<const float> a, GemmB b) {
  const int64_t m = cute::size<0>(a), n = cute::size<0>(b), k = cute::size<1>(a);
  // An empty result, nothing to compute, as the CUDA launcher returns: an
  // empty c may still claim 2^35 rows, and walking their 2^35 / 48 panels
  // timed the fuzzer out under ASan (found by fuzz_handlers in CI).
  if (m == 0 || n == 0) return ffi::Error::Success();
  const RowMajor g{a.data().get(), b.data().get(), c.data().get(), n, k};
  const int64_t whole_cols = n / kTileCols * kTileCols;
  // Blocks of K keep a task's slices of A and B in L2 (the effect is in
  // bench/RESULTS.md, the GEMM CPU twin); adding block after block into C
  // keeps each output's order of additions. K = 0 still takes one block,
  // which writes the zeros.
  const int64_t depth_blocks = std::max<int64_t>(1, ceil_div(k, kDepthBlock));
  exec.parallel_for(ceil_div(m, kPanelRows), [&](int64_t panel) {
    const int64_t first = panel * kPanelRows, end = std::min(m, first + kPanelRows);
    const int64_t whole_rows_end = first + (end - first) / kTileRows * kTileRows;
    for (int64_t block = 0; block < depth_blocks; ++block) {
      const int64_t p = block * kDepthBlock;
      whole_tiles(g, first, whole_rows_end, whole_cols, p, std::min(k, p + kDepthBlock));
    }
    plain_rows(g, first, whole_rows_end, whole_cols);
    plain_rows(g, whole_rows_end, end, 0);
  });
  return ffi::Error::Success();
}

}  // namespace cutlax::ops
