// The teaching GEMM: a CuTe tiled SGEMM (decomposition in gemm_tiling.hpp).
#include "gemm_tiled.hpp"
#include "gemm_tiling.hpp"

namespace cutlax::kernels::sgemm {

template <class CopyA, class CopyB, class TensorB>
__global__ void __launch_bounds__(kThreads, 2)
    sgemm_tiled_kernel(Matrix<float> mC, Matrix<const float> mA, TensorB mB) {
  __shared__ alignas(16) float smem_a[cosize_v<SmemLayoutA>];
  __shared__ alignas(16) float smem_b[cosize_v<SmemLayoutB>];
  Tensor sA = make_tensor(make_smem_ptr(smem_a), SmemLayoutA{});  // (BM, BK, 2)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), SmemLayoutB{});  // (BN, BK, 2)

  // This block's tiles, and the matching coordinates for bounds checks.
  auto tiler = make_shape(BM{}, BN{}, BK{});
  auto coord = make_coord(blockIdx.x, blockIdx.y, _);
  Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});  // (BM, BK, k)
  Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});  // (BN, BK, k)
  Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});  // (BM, BN)
  Tensor cA = local_tile(make_identity_tensor(shape(mA)), tiler, coord, Step<_1, X, _1>{});
  Tensor cB = local_tile(make_identity_tensor(shape(mB)), tiler, coord, Step<X, _1, _1>{});
  Tensor cC = local_tile(make_identity_tensor(shape(mC)), tiler, coord, Step<_1, _1, X>{});

  CopyA copy_a;
  CopyB copy_b;
  auto thr_copy_a = copy_a.get_thread_slice(threadIdx.x);
  auto thr_copy_b = copy_b.get_thread_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);  // (CPY, CPY_M, CPY_K, k)
  Tensor tAcA = thr_copy_a.partition_S(cA);
  Tensor tAsA = thr_copy_a.partition_D(sA);  // (CPY, CPY_M, CPY_K, stage)
  Tensor tArA = make_fragment_like(tAsA(_, _, _, 0));
  Tensor tBgB = thr_copy_b.partition_S(gB);
  Tensor tBcB = thr_copy_b.partition_S(cB);
  Tensor tBsB = thr_copy_b.partition_D(sB);
  Tensor tBrB = make_fragment_like(tBsB(_, _, _, 0));

  TiledMma mma;
  auto thr_mma = mma.get_thread_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);  // (MMA, MMA_M, MMA_K, stage)
  Tensor tCsB = thr_mma.partition_B(sB);  // (MMA, MMA_N, MMA_K, stage)
  Tensor tCgC = thr_mma.partition_C(gC);  // (MMA, MMA_M, MMA_N)
  Tensor tCcC = thr_mma.partition_C(cC);
  Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, 0));
  Tensor tCrB = thr_mma.partition_fragment_B(sB(_, _, 0));
  Tensor tCrC = thr_mma.make_fragment_C(tCgC);
  clear(tCrC);

  // Global -> registers; elements outside the matrix read as zero, which
  // makes partial tiles at the M, N and K edges contribute nothing.
  auto load_tile = [&](int k_tile) {
    CUTE_UNROLL
    for (int i = 0; i < size<1>(tArA); ++i) {
      CUTE_UNROLL
      for (int j = 0; j < size<2>(tArA); ++j) {
        if (elem_less(tAcA(0, i, j, k_tile), shape(mA))) {
          copy(copy_a, tAgA(_, i, j, k_tile), tArA(_, i, j));
        } else {
          clear(tArA(_, i, j));
        }
      }
    }
    CUTE_UNROLL
    for (int i = 0; i < size<1>(tBrB); ++i) {
      CUTE_UNROLL
      for (int j = 0; j < size<2>(tBrB); ++j) {
        if (elem_less(tBcB(0, i, j, k_tile), shape(mB))) {
          copy(copy_b, tBgB(_, i, j, k_tile), tBrB(_, i, j));
        } else {
          clear(tBrB(_, i, j));
        }
      }
    }
  };
  auto store_tile = [&](int stage) {
    copy(tArA, tAsA(_, _, _, stage));
    copy(tBrB, tBsB(_, _, _, stage));
  };

  const int k_tiles = size<3>(tAgA);
  if (k_tiles > 0) {
    load_tile(0);
    store_tile(0);
  }
  __syncthreads();
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    const int stage = k_tile & 1;
    const bool more = k_tile + 1 < k_tiles;
    if (more) load_tile(k_tile + 1);  // in flight during the multiply
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tCrA); ++k) {
      copy(tCsA(_, _, k, stage), tCrA(_, _, k));
      copy(tCsB(_, _, k, stage), tCrB(_, _, k));
      gemm(mma, tCrA(_, _, k), tCrB(_, _, k), tCrC);
    }
    // The other stage was last read before the previous barrier, so it can
    // be overwritten now; the barrier below publishes it.
    if (more) store_tile(stage ^ 1);
    __syncthreads();
  }

  CUTE_UNROLL
  for (int i = 0; i < size(tCrC); ++i) {
    if (elem_less(tCcC(i), shape(mC))) tCgC(i) = tCrC(i);
  }
}

}  // namespace cutlax::kernels::sgemm

namespace cutlax::ops {

ffi::Error gemm_tiled_launch(Cuda exec, Matrix<float> c, Matrix<const float> a, GemmB b) {
  using namespace kernels::sgemm;
  const int64_t m = size<0>(a), n = size<0>(b), k = size<1>(a);
  if (m == 0 || n == 0) return ffi::Error::Success();
  const int64_t m_tiles = ceil_div(m, BM{}), n_tiles = ceil_div(n, BN{});
  CUTLAX_RETURN_IF_ERROR(expect_grid_fits(m_tiles, "a (rows)"));
  if (n_tiles > 65535) {
    return ffi::Error::InvalidArgument("b has too many columns for one launch (" +
                                       std::to_string(n) + ", limit " +
                                       std::to_string(65535 * 128) + ")");
  }
  const dim3 grid(m_tiles, n_tiles);
  const bool vector_loads =
      k % 4 == 0 && n % 4 == 0 && is_aligned_16(a.data().get()) && is_aligned_16(b.data().get());
  if (vector_loads) {
    sgemm_tiled_kernel<VectorCopyA, VectorCopyB><<<grid, kThreads, 0, exec.stream>>>(c, a, b);
  } else {
    sgemm_tiled_kernel<ScalarCopyA, ScalarCopyB><<<grid, kThreads, 0, exec.stream>>>(c, a, b);
  }
  return launch_status("gemm (tiled)");
}

}  // namespace cutlax::ops
