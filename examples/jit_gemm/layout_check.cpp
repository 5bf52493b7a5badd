// Host-side checks of the layout facts gemm.cuh rests on, with CuTe on the
// CPU (no GPU): built and run by tests/python/test_jit_gemm.py with g++.
//  1. Each consumer thread's WGMMA accumulators pair up as (m, n), (m, n + 1)
//     with n even (one 4-byte store per pair), and the threads cover the
//     tile exactly once: ping-pong (one warpgroup, 128 x 128) and
//     cooperative (two warpgroups, 128 x 256).
//  2. hopper.hpp's shared-memory layouts put each element where a TMA box
//     with the 128-byte swizzle lands it: a's (128, 64) box row-major, b's
//     (64 K, 64 N) boxes one after another along N.
#include <cstdio>
#include <vector>

// CUTLASS's pipeline header (which hopper.hpp includes) names CUDA's thread
// indices and __syncthreads in device functions; g++ needs them declared.
#include <vector_types.h>
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static inline void __syncthreads() {}

#include <cutlax/jit/hopper.hpp>

using namespace cute;

template <class T, int BN, int WarpGroups>
int check_accumulators() {
  using Atom = decltype(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BN>, _64>, GMMA::Major::K,
                                             GMMA::Major::MN>());
  auto mma = make_tiled_mma(Atom{}, Layout<Shape<Int<WarpGroups>, _1, _1>>{});
  std::vector<int> seen(128 * BN, 0);
  int bad = 0;
  for (int t = 0; t < 128 * WarpGroups; ++t) {
    auto coord = mma.get_thread_slice(t).partition_C(make_identity_tensor(Shape<_128, Int<BN>>{}));
    if (size(coord) != size(partition_fragment_C(mma, Shape<_128, Int<BN>>{}))) return 1;
    for (int i = 0; i < size(coord); i += 2) {
      const int m0 = get<0>(coord(i)), n0 = get<1>(coord(i));
      const int m1 = get<0>(coord(i + 1)), n1 = get<1>(coord(i + 1));
      bad += m1 != m0 || n1 != n0 + 1 || n0 % 2 != 0;
      seen[m0 * BN + n0]++;
      seen[m1 * BN + n1]++;
    }
  }
  for (int v : seen) bad += v != 1;
  std::printf("accumulators BN=%d warpgroups=%d: %d errors\n", BN, WarpGroups, bad);
  return bad;
}

// TMA's 128-byte swizzle on 2-byte elements: the 16-byte chunk (element bits
// 3..5) is XORed with the 128-byte row (bits 6..8).
int swizzled(int e) { return e ^ (((e >> 6) & 7) << 3); }

template <class T, class Layout>
long offset_of(Layout const& layout, int i, int j, int stage) {
  T* base = nullptr;
  auto t = make_tensor(make_smem_ptr(base), layout);
  return long(raw_pointer_cast(&t(i, j, stage)) - base);
}

template <class T, int BN, int Stages>
int check_smem() {
  int bad = 0;
  using A = cutlax::jit::SmemKMajor128B<T, 128, 64, Stages>;
  for (int s = 0; s < Stages; ++s)
    for (int m = 0; m < 128; ++m)
      for (int k = 0; k < 64; ++k)
        bad += offset_of<T>(A{}, m, k, s) != s * 128 * 64 + swizzled(m * 64 + k);
  using B = cutlax::jit::SmemMNMajor128B<T, BN, 64, Stages>;
  for (int s = 0; s < Stages; ++s)
    for (int n = 0; n < BN; ++n)
      for (int k = 0; k < 64; ++k)
        bad += offset_of<T>(B{}, n, k, s) !=
               s * BN * 64 + (n / 64) * 64 * 64 + swizzled(k * 64 + n % 64);
  std::printf("shared memory BN=%d stages=%d: %d errors\n", BN, Stages, bad);
  return bad;
}

int main() {
  int bad = check_accumulators<cutlass::bfloat16_t, 128, 1>() +
            check_accumulators<cutlass::bfloat16_t, 256, 2>() +
            check_accumulators<cutlass::half_t, 128, 1>() +
            check_smem<cutlass::bfloat16_t, 128, 6>() + check_smem<cutlass::half_t, 256, 4>();
  std::printf(bad ? "FAILED\n" : "ok\n");
  return bad != 0;
}
