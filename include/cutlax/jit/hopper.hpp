// Hopper (sm_90a) pieces for cutlax.jit kernels that take TMA descriptors.
// A kernel includes this header itself (the prelude does not: it would cost
// every kernel CuTe's whole atom library on a cold compile).
//
//   cutlax::jit::TmaDescriptor       the CUtensorMap the runtime encodes per
//                                    tma= request; a kernel parameter
//                                    `const __grid_constant__ TmaDescriptor`.
//   tma_load(desc, bar, smem, i, j)  one box into shared memory, completing
//                                    `bar`'s transaction bytes; coordinates in
//                                    the array's axis order (outermost first),
//                                    the box's first element.
//   tma_load_multicast(..., mask, ...) the same box into every CTA of the
//                                    cluster named in `mask` (same smem and
//                                    barrier offsets in each).
//   tma_store(desc, smem, i, j)      one box from shared memory; elements
//                                    outside the array are dropped. Before:
//                                    tma_store_fence() after the smem writes,
//                                    and a barrier over the writing threads.
//                                    After: tma_store_commit(), then
//                                    tma_store_wait<N>() before the smem is
//                                    written again.
//   prefetch(desc)                   the descriptor into the TMA unit's cache.
//   SmemKMajor128B<T, Rows, Cols, S> / SmemMNMajor128B<T, MN, K, S>
//                                    shared-memory layouts that a TMA box with
//                                    swizzle=128 fills and WGMMA reads (CuTe's
//                                    GMMA::Layout_{K,MN}_SW128_Atom tiled).
//   TmaPipeline<Stages>              CUTLASS's PipelineTmaAsync: full barriers
//                                    completed by TMA bytes, empty barriers by
//                                    consumer arrivals.
//   set_max_registers<N>()           setmaxnreg (inc or dec) for warp-specialised
//                                    kernels: producers give registers to consumers.
//   Turnstile                        two warpgroups taking turns (named barriers).
//
// PTX numbers TMA coordinates innermost first (dimension 0 is the array's
// last axis); the functions here take them outermost first, as the array's
// shape and the tma= box are written, and reverse them.
//
// Everything compiles under NVRTC (no standard headers) and with nvcc.
#pragma once

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/sm90_pipeline.hpp>

namespace cutlax::jit {

using TmaDescriptor = cute::TmaDescriptor;
static_assert(sizeof(TmaDescriptor) == 128, "a TMA descriptor is 128 bytes");
// 64 under NVRTC (CuTe's own definition), 128 with nvcc (CUDA 13's CUtensorMap);
// TMA needs 64.
static_assert(alignof(TmaDescriptor) >= 64, "a TMA descriptor is at least 64-byte aligned");

// The L2 eviction hint every copy here passes: CuTe's default for TMA.
constexpr uint64_t kTmaCacheHint = uint64_t(cute::TMA::CacheHintSm90::EVICT_NORMAL);

namespace detail {

template <class... Coords>
struct Innermost {
  static constexpr int kRank = sizeof...(Coords);
  static_assert(kRank >= 1 && kRank <= 5, "TMA takes 1 to 5 coordinates");
  int32_t c[kRank];
  // c[0] is the innermost (the array's last axis), as PTX numbers them.
  CUTE_DEVICE explicit Innermost(Coords... outermost_first) {
    const int32_t in_order[kRank] = {int32_t(outermost_first)...};
    for (int i = 0; i < kRank; ++i) c[i] = in_order[kRank - 1 - i];
  }
};

}  // namespace detail

template <class... Coords>
CUTE_DEVICE void tma_load(TmaDescriptor const* desc, uint64_t* bar, void* smem, Coords... coords) {
  const detail::Innermost<Coords...> x(coords...);
  using namespace cute;
  if constexpr (sizeof...(Coords) == 1) {
    SM90_TMA_LOAD_1D::copy(desc, bar, kTmaCacheHint, smem, x.c[0]);
  } else if constexpr (sizeof...(Coords) == 2) {
    SM90_TMA_LOAD_2D::copy(desc, bar, kTmaCacheHint, smem, x.c[0], x.c[1]);
  } else if constexpr (sizeof...(Coords) == 3) {
    SM90_TMA_LOAD_3D::copy(desc, bar, kTmaCacheHint, smem, x.c[0], x.c[1], x.c[2]);
  } else if constexpr (sizeof...(Coords) == 4) {
    SM90_TMA_LOAD_4D::copy(desc, bar, kTmaCacheHint, smem, x.c[0], x.c[1], x.c[2], x.c[3]);
  } else {
    SM90_TMA_LOAD_5D::copy(desc, bar, kTmaCacheHint, smem, x.c[0], x.c[1], x.c[2], x.c[3], x.c[4]);
  }
}

// `cta_mask` has bit i set for the CTA of rank i in the cluster; each one's
// barrier at `bar`'s offset expects the box's bytes.
template <class... Coords>
CUTE_DEVICE void tma_load_multicast(TmaDescriptor const* desc, uint64_t* bar, uint16_t cta_mask,
                                    void* smem, Coords... coords) {
  const detail::Innermost<Coords...> x(coords...);
  using namespace cute;
  if constexpr (sizeof...(Coords) == 1) {
    SM90_TMA_LOAD_MULTICAST_1D::copy(desc, bar, cta_mask, kTmaCacheHint, smem, x.c[0]);
  } else if constexpr (sizeof...(Coords) == 2) {
    SM90_TMA_LOAD_MULTICAST_2D::copy(desc, bar, cta_mask, kTmaCacheHint, smem, x.c[0], x.c[1]);
  } else if constexpr (sizeof...(Coords) == 3) {
    SM90_TMA_LOAD_MULTICAST_3D::copy(desc, bar, cta_mask, kTmaCacheHint, smem, x.c[0], x.c[1],
                                     x.c[2]);
  } else if constexpr (sizeof...(Coords) == 4) {
    SM90_TMA_LOAD_MULTICAST_4D::copy(desc, bar, cta_mask, kTmaCacheHint, smem, x.c[0], x.c[1],
                                     x.c[2], x.c[3]);
  } else {
    SM90_TMA_LOAD_MULTICAST_5D::copy(desc, bar, cta_mask, kTmaCacheHint, smem, x.c[0], x.c[1],
                                     x.c[2], x.c[3], x.c[4]);
  }
}

template <class... Coords>
CUTE_DEVICE void tma_store(TmaDescriptor const* desc, void const* smem, Coords... coords) {
  const detail::Innermost<Coords...> x(coords...);
  using namespace cute;
  if constexpr (sizeof...(Coords) == 1) {
    SM90_TMA_STORE_1D::copy(desc, smem, x.c[0]);
  } else if constexpr (sizeof...(Coords) == 2) {
    SM90_TMA_STORE_2D::copy(desc, smem, x.c[0], x.c[1]);
  } else if constexpr (sizeof...(Coords) == 3) {
    SM90_TMA_STORE_3D::copy(desc, smem, x.c[0], x.c[1], x.c[2]);
  } else if constexpr (sizeof...(Coords) == 4) {
    SM90_TMA_STORE_4D::copy(desc, smem, x.c[0], x.c[1], x.c[2], x.c[3]);
  } else {
    SM90_TMA_STORE_5D::copy(desc, smem, x.c[0], x.c[1], x.c[2], x.c[3], x.c[4]);
  }
}

// Shared-memory writes by ordinary stores become visible to the TMA unit
// (the async proxy) only after this fence; each writing thread runs it, then
// the threads meet at a barrier, then one thread issues tma_store.
CUTE_DEVICE void tma_store_fence() { cute::tma_store_fence(); }

// Closes the group of TMA stores this thread issued since the last commit.
CUTE_DEVICE void tma_store_commit() { cute::tma_store_arrive(); }

// Waits until at most `Pending` committed groups still read shared memory,
// so their source buffers may be written again (the global writes may still
// be in flight; kernel exit completes them).
template <int Pending = 0>
CUTE_DEVICE void tma_store_wait() {
  cute::tma_store_wait<Pending>();
}

CUTE_DEVICE void prefetch(TmaDescriptor const* desc) { cute::prefetch_tma_descriptor(desc); }

// Shared-memory layouts filled by one TMA box per (stage, 64-element block)
// with swizzle=128, and read by WGMMA through CuTe's descriptors.
//
// K-major (Rows x Cols, Cols contiguous, Cols = 128 bytes of T): a box of
// (Rows, Cols) lands as Rows rows of 128 bytes. JAX's a (M, K) as WGMMA's A.
template <class T, int Rows, int Cols, int Stages = 1>
using SmemKMajor128B = decltype(cute::tile_to_shape(
    cute::GMMA::Layout_K_SW128_Atom<T>{},
    cute::make_shape(cute::Int<Rows>{}, cute::Int<Cols>{}, cute::Int<Stages>{})));

// MN-major (MN x K, MN contiguous): K-blocks of one 128-byte MN column block
// are adjacent, so a box of (K, 128 bytes of MN) from a row-major (K, N)
// array fills one column block; MN / (128 / sizeof(T)) boxes fill a stage.
// JAX's b (K, N) as WGMMA's B ("transposed", 16-bit types only).
template <class T, int MN, int K, int Stages = 1>
using SmemMNMajor128B = decltype(cute::tile_to_shape(
    cute::GMMA::Layout_MN_SW128_Atom<T>{},
    cute::make_shape(cute::Int<MN>{}, cute::Int<K>{}, cute::Int<Stages>{}),
    cute::Step<cute::_2, cute::_1, cute::_3>{}));

template <int Stages>
using TmaPipeline = cutlass::PipelineTmaAsync<Stages>;

// setmaxnreg: a warpgroup's register budget from here on (a multiple of 8,
// 24 to 256). Every thread of the warpgroup must run it. Lowering the
// producer's and raising the consumers' lets WGMMA accumulators fit.
template <int Registers, bool Increase>
CUTE_DEVICE void set_max_registers() {
  static_assert(Registers % 8 == 0 && Registers >= 24 && Registers <= 256,
                "setmaxnreg takes 24..256, by 8");
  if constexpr (Increase) {
    cutlass::arch::warpgroup_reg_alloc<Registers>();
  } else {
    cutlass::arch::warpgroup_reg_dealloc<Registers>();
  }
}

// Two warpgroups that take turns at a section (the ping-pong GEMM's
// mainloops): a warpgroup waits for its turn, runs, then passes the turn.
// Named barriers `first_id` (warpgroup 0's turn) and `first_id + 1`; each
// pass meets exactly one wait, so a warpgroup passes only when the other
// will take another turn. Ids 1..15 (0 is __syncthreads).
struct Turnstile {
  int first_id;
  CUTE_DEVICE void wait(int warpgroup) const {
    asm volatile("bar.sync %0, 256;" : : "r"(first_id + warpgroup) : "memory");
  }
  CUTE_DEVICE void pass(int warpgroup) const {
    asm volatile("bar.arrive %0, 256;" : : "r"(first_id + (warpgroup ^ 1)) : "memory");
  }
};

}  // namespace cutlax::jit
