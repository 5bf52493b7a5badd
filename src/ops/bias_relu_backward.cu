// bias_relu_backward's CUDA kernels (see bias_relu_backward.hpp).
#include "bias_relu_backward.hpp"
#include "elementwise.cuh"

namespace cutlax::kernels {

// A block is one warp across the columns and kRowThreads rows of threads
// walking down its row chunk; each thread owns a run of Vec adjacent columns,
// so a warp reads 32 * Vec contiguous elements of a row per step.
inline constexpr int kRowThreads = 8;
inline constexpr int kColumnThreads = 32;

template <int Vec, int AlignBits, class T>
__global__ void __launch_bounds__(kColumnThreads* kRowThreads)
    masked_column_sums_kernel(Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Matrix<float> partials, int64_t chunk_rows) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y);
  const int64_t col = (int64_t(blockIdx.x) * kColumnThreads + threadIdx.x) * Vec;
  const int64_t chunk = blockIdx.y;
  const int64_t row_end = cute::min(rows, (chunk + 1) * chunk_rows);
  auto run = [&](auto matrix, int64_t row) {
    return make_tensor(make_gmem_ptr(&matrix(row, col)), Int<Vec>{});
  };
  float sums[Vec] = {};
  if (col < width) {
    for (int64_t r = chunk * chunk_rows + threadIdx.y; r < row_end; r += kRowThreads) {
      auto y_run = make_tensor<T>(Int<Vec>{});
      auto g_run = make_tensor<T>(Int<Vec>{});
      copy_vectorized<AlignBits>(run(y, r), y_run);
      copy_vectorized<AlignBits>(run(g, r), g_run);
      CUTE_UNROLL
      for (int i = 0; i < Vec; ++i) {
        g_run(i) = ops::ReluMask{}(y_run(i), g_run(i));
        sums[i] += float(g_run(i));
      }
      auto dst = run(dx, r);
      copy_vectorized<AlignBits>(g_run, dst);
    }
  }
  // Sum the kRowThreads partial sums of each column through shared memory.
  __shared__ float block_sums[kRowThreads][kColumnThreads * Vec];
  CUTE_UNROLL
  for (int i = 0; i < Vec; ++i) block_sums[threadIdx.y][threadIdx.x * Vec + i] = sums[i];
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    CUTE_UNROLL
    for (int i = 0; i < Vec; ++i) {
      float total = 0;
      for (int t = 0; t < kRowThreads; ++t) total += block_sums[t][threadIdx.x * Vec + i];
      partials(chunk, col + i) = total;
    }
  }
}

// dbias(j) = the sum over chunks of partials(c, j). A block takes
// kColumnThreads columns, its kRowThreads rows of threads stride down the
// chunks (a warp reads 128 contiguous bytes of a chunk's row), and the
// rows' sums meet in shared memory in a fixed order: deterministic, and
// thousands of chunks in flight at once instead of one thread walking them
// all (a column per thread left 4 blocks for 1024 columns and 512 chunks,
// ten times slower in the bf16 MLP's profile: bench/RESULTS.md).
template <class T>
__global__ void __launch_bounds__(kColumnThreads* kRowThreads)
    sum_chunks_kernel(Matrix<float> partials, Vector<T> dbias) {
  using namespace cute;
  const int64_t chunks = size<0>(partials), width = size<1>(partials);
  const int64_t col = int64_t(blockIdx.x) * kColumnThreads + threadIdx.x;
  float sum = 0;
  if (col < width) {
    for (int64_t c = threadIdx.y; c < chunks; c += kRowThreads) sum += partials(c, col);
  }
  __shared__ float row_sums[kRowThreads][kColumnThreads];
  row_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    float total = 0;
    for (int t = 0; t < kRowThreads; ++t) total += row_sums[t][threadIdx.x];
    dbias(col) = T(total);
  }
}

template <class T>
ffi::Error masked_column_sums(Cuda exec, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y), chunks = size<0>(partials);
  if (width == 0) return ffi::Error::Success();
  if (chunks > 65535) {
    return invalid_argument("partials", "has " + std::to_string(chunks) +
                                            " row chunks; at most 65535 fit in one launch");
  }
  const int64_t chunk_rows = std::max<int64_t>(rows_per_chunk(rows, chunks), 1);
  constexpr int vec = kVectorElements<T>;
  // Vector runs need every row to start 16-byte aligned: width a multiple of
  // the run, and aligned base pointers.
  const bool vector = width % vec == 0 && is_aligned_16(y.data().get()) &&
                      is_aligned_16(g.data().get()) && is_aligned_16(dx.data().get());
  const int64_t column_blocks = ceil_div(width, int64_t(kColumnThreads) * (vector ? vec : 1));
  CUTLAX_RETURN_IF_ERROR(expect_grid_fits(column_blocks, "bias_relu_backward"));
  const dim3 grid{unsigned(column_blocks), unsigned(chunks)};
  const dim3 block{kColumnThreads, kRowThreads};
  if (vector) {
    masked_column_sums_kernel<vec, 128>
        <<<grid, block, 0, exec.stream>>>(y, g, dx, partials, chunk_rows);
  } else {
    masked_column_sums_kernel<1, 8 * sizeof(T)>
        <<<grid, block, 0, exec.stream>>>(y, g, dx, partials, chunk_rows);
  }
  CUTLAX_RETURN_IF_ERROR(launch_status("bias_relu_backward"));
  sum_chunks_kernel<<<unsigned(ceil_div(width, int64_t(kColumnThreads))), block, 0, exec.stream>>>(
      partials, dbias);
  return launch_status("bias_relu_backward (sum of chunks)");
}

}  // namespace cutlax::kernels
