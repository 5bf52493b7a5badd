// A Hopper GEMM as a cutlax.jit kernel: c = epilogue(a @ b) for a (M, K)
// and b (K, N) row-major, as JAX stores them, in bf16 or f16 with f32
// accumulation. jit_gemm.py compiles this file with NVRTC after cutlax's
// prelude, followed by one epilogue's generated code and entry (see there).
//
// Structure (per CTA, 384 threads, one CTA per SM, persistent):
//   warpgroup 0   producer: one thread issues TMA loads of a's and b's
//                 tiles into a ring of shared-memory stages (CUTLASS's
//                 PipelineTmaAsync: a full barrier per stage completed by
//                 the TMA's bytes, an empty barrier completed by consumers);
//                 it keeps only 40 registers (setmaxnreg).
//   warpgroups 1-2 consumers (232 registers each): WGMMA from shared memory
//                 into f32 accumulators, then the epilogue applied to each
//                 accumulator with its (m, n), stored straight from registers
//                 (two columns per store), predicated for partial tiles.
// Two schedules:
//   cooperative   128 x 256 tiles; both consumer warpgroups work on every
//                 tile (64 rows each). Fewer, larger tiles: half the L2
//                 traffic per product of 128 x 128, best for long K.
//   ping-pong     128 x 128 tiles; the consumer warpgroups take alternate
//                 tiles and their mainloops take turns (a Turnstile), so one
//                 warpgroup's epilogue runs under the other's mainloop.
// a's tile is one TMA box (128 rows x 64 K-columns, 128-byte swizzle): the
// K-major layout WGMMA reads as A. b's tile is BN / 64 boxes (64 K-rows x 64
// N-columns each): the MN-major layout WGMMA reads as a transposed B (16-bit
// types only), so neither operand is copied or transposed. K beyond the
// array reads as zeros (TMA's out-of-bounds fill), so any K works; so do M
// and N beyond the array, whose results are not stored.
#include <cutlax/jit/hopper.hpp>

namespace jit_gemm {

using namespace cute;  // Tensor below is cute::Tensor; the kernel's parameters are
                       // cutlax::jit::Tensor
using cutlax::jit::TmaDescriptor;

// Functions an epilogue body may call (f32 in, f32 out).
namespace math {
CUTE_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }
CUTE_DEVICE float silu(float x) { return x * sigmoid(x); }
CUTE_DEVICE float relu(float x) { return fmaxf(x, 0.0f); }
// jax.nn.gelu's default (the tanh form).
CUTE_DEVICE float gelu(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
}  // namespace math

template <class T_, int BN_, int Stages_, bool Cooperative_>
struct Config {
  using T = T_;
  static constexpr int BM = 128, BN = BN_, BK = 64, Stages = Stages_;
  static constexpr bool Cooperative = Cooperative_;
  static constexpr int kThreads = 384;  // producer warpgroup + two consumer warpgroups
  static constexpr int kBoxN = 64;      // b's box: BK rows x 64 columns = 128 bytes per row
  static_assert(sizeof(T) == 2,
                "16-bit operands: WGMMA transposes only 16-bit B from shared memory");
  static_assert(BK * sizeof(T) == 128 && kBoxN * sizeof(T) == 128,
                "boxes are 128-byte rows (swizzle=128)");
  static_assert(BN % kBoxN == 0, "b's tile is whole boxes");

  // One warpgroup computes 64 x BN per instruction: cooperative puts the two
  // consumer warpgroups side by side along M (each 64 rows of a 128-row
  // tile); ping-pong gives one warpgroup the whole tile (two 64-row steps).
  using Atom = decltype(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BN>, Int<BK>>,
                                             GMMA::Major::K, GMMA::Major::MN>());
  using TiledMma =
      decltype(make_tiled_mma(Atom{}, Layout<Shape<Int<Cooperative ? 2 : 1>, _1, _1>>{}));
  static constexpr int kMmaThreads = Cooperative ? 256 : 128;

  using SmemA = cutlax::jit::SmemKMajor128B<T, BM, BK, Stages>;   // (BM, BK, Stages)
  using SmemB = cutlax::jit::SmemMNMajor128B<T, BN, BK, Stages>;  // (BN, BK, Stages)
  using Pipeline = cutlax::jit::TmaPipeline<Stages>;
  // Every stage receives whole boxes, zero-filled past the array's edges.
  static constexpr uint32_t kStageBytes = (BM + BN) * BK * sizeof(T);

  struct Storage {
    cute::array_aligned<T, cosize_v<SmemA>, 1024> a;  // 1024: the 128-byte swizzle's period
    cute::array_aligned<T, cosize_v<SmemB>, 1024> b;
    typename Pipeline::SharedStorage pipeline;
  };
  // Dynamic shared memory is only 16-byte aligned: 1024 bytes of slack.
  static constexpr int kSharedMem = int(sizeof(Storage)) + 1024;
};

// The tile order: strips of kGroup tile rows, walked column by column, so
// the CTAs running at once share rows of a and columns of b in L2.
CUTE_DEVICE void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int group = tile / per_group;
  const int first_m = group * kGroup;
  const int rows = min(tiles_m - first_m, kGroup);
  const int in_group = tile - group * per_group;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

// Extra operands, read at an accumulator pair's (m, n) and (m, n + 1) as
// f32: n is even and N a multiple of 8, so a pair never crosses a row and
// its two 16-bit (or f32) values are one aligned 4-byte (8-byte) load.
template <class E>
CUTE_DEVICE float2 load_pair(E const* p) {
  if constexpr (sizeof(E) == 2) {
    const uint32_t bits = __ldg(reinterpret_cast<unsigned int const*>(p));
    return make_float2(float(E::bitcast(uint16_t(bits & 0xffffu))),
                       float(E::bitcast(uint16_t(bits >> 16))));
  } else {
    static_assert(sizeof(E) == 4, "extra operands are f16, bf16 or f32");
    return __ldg(reinterpret_cast<float2 const*>(p));
  }
}

template <class E>
CUTE_DEVICE float2 col_pair(cutlax::jit::Tensor<const E, 1> const& v, int64_t n) {
  return load_pair(raw_pointer_cast(v.data()) + n);
}

template <class E>
CUTE_DEVICE float row_value(cutlax::jit::Tensor<const E, 1> const& v, int64_t m) {
  return float(raw_pointer_cast(v.data())[m]);
}

template <class E>
CUTE_DEVICE float2 matrix_pair(cutlax::jit::Tensor<const E, 2> const& x, int64_t m, int64_t n) {
  return load_pair(raw_pointer_cast(x.data()) + x.layout()(m, n));
}

template <class T>
CUTE_DEVICE void store_pair(T* p, float x, float y) {
  const uint32_t bits = uint32_t(T(x).raw()) | (uint32_t(T(y).raw()) << 16);
  *reinterpret_cast<uint32_t*>(p) = bits;
}

// The kernel. `epilogue(acc0, acc1, m, n)` returns the f32 results of the
// pair at (m, n) and (m, n + 1).
template <class Cfg, class Epilogue>
CUTE_DEVICE void run(cutlax::jit::Tensor<const typename Cfg::T, 2> const& a,
                     cutlax::jit::Tensor<const typename Cfg::T, 2> const& b,
                     cutlax::jit::Tensor<typename Cfg::T, 2> const& c, TmaDescriptor const* tma_a,
                     TmaDescriptor const* tma_b, Epilogue const& epilogue) {
  using T = typename Cfg::T;
  using Pipeline = typename Cfg::Pipeline;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;

  extern __shared__ char smem_raw[];
  const uint32_t misalignment = cast_smem_ptr_to_uint(smem_raw) & 1023u;
  auto& s = *reinterpret_cast<typename Cfg::Storage*>(smem_raw + ((1024u - misalignment) & 1023u));

  const int64_t M = size<0>(a), K = size<1>(a), N = size<1>(b);
  const int tiles_m = int((M + BM - 1) / BM), tiles_n = int((N + BN - 1) / BN);
  const int tiles = tiles_m * tiles_n;
  const int k_tiles = int((K + BK - 1) / BK);  // >= 1: the Python side never launches K = 0
  const int warpgroup = threadIdx.x / 128;

  typename Pipeline::Params params;
  params.transaction_bytes = Cfg::kStageBytes;
  params.role =
      warpgroup == 0 ? Pipeline::ThreadCategory::Producer : Pipeline::ThreadCategory::Consumer;
  params.is_leader =
      threadIdx.x == 0;  // the one thread that arms the full barriers and issues the TMA
  params.num_consumers =
      Cfg::kMmaThreads;  // every consumer thread of a stage arrives on its empty barrier
  Pipeline pipeline(s.pipeline, params, Shape<_1, _1, _1>{});  // warp 0 initializes the barriers
  if (threadIdx.x == 0) {
    cutlax::jit::prefetch(tma_a);
    cutlax::jit::prefetch(tma_b);
  }
  __syncthreads();  // the barriers' init is visible before anyone waits on them

  if (warpgroup == 0) {
    cutlax::jit::set_max_registers<40, false>();
    if (threadIdx.x == 0) {
      auto state = cutlass::make_producer_start_state<Pipeline>();
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int tm, tn;
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
        for (int kt = 0; kt < k_tiles; ++kt) {
          pipeline.producer_acquire(state);  // the stage is free; arms its barrier for kStageBytes
          uint64_t* bar = pipeline.producer_get_barrier(state);
          const int stage = state.index();
          cutlax::jit::tma_load(tma_a, bar, s.a.data() + stage * (BM * BK), tm * BM, kt * BK);
          CUTE_UNROLL
          for (int j = 0; j < BN / Cfg::kBoxN; ++j) {
            cutlax::jit::tma_load(tma_b, bar,
                                  s.b.data() + stage * (BN * BK) + j * (Cfg::kBoxN * BK), kt * BK,
                                  tn * BN + j * Cfg::kBoxN);
          }
          ++state;
        }
      }
      pipeline.producer_tail(state);  // every stage consumed before the producer exits
    }
    return;
  }

  cutlax::jit::set_max_registers<232, true>();
  const int consumer = warpgroup - 1;
  typename Cfg::TiledMma mma;
  auto thr = mma.get_thread_slice(Cfg::Cooperative ? threadIdx.x - 128 : threadIdx.x % 128);
  Tensor sA = make_tensor(make_smem_ptr(s.a.data()), typename Cfg::SmemA{});
  Tensor sB = make_tensor(make_smem_ptr(s.b.data()), typename Cfg::SmemB{});
  Tensor tCrA =
      thr.make_fragment_A(thr.partition_A(sA));  // (MMA, MMA_M, MMA_K, Stages): smem descriptors
  Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));             // (MMA, MMA_N, MMA_K, Stages)
  Tensor acc = partition_fragment_C(mma, Shape<Int<BM>, Int<BN>>{});  // (MMA, MMA_M, MMA_N) f32
  Tensor coord =
      thr.partition_C(make_identity_tensor(Shape<Int<BM>, Int<BN>>{}));  // (m, n) in the tile
  static_assert(decltype(size(acc))::value % 2 == 0, "accumulators come in column pairs");

  const cutlax::jit::Turnstile turns{1};
  typename Pipeline::PipelineState read;  // stage 0, phase 0
  int local = 0;                          // this CTA's tile count so far
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++local) {
    if (!Cfg::Cooperative && (local & 1) != consumer) {
      read.advance(k_tiles);  // the other warpgroup's tile: its stages
      continue;
    }
    int tm, tn;
    tile_coords(tile, tiles_m, tiles_n, tm, tn);
    // Ping-pong: wait until the other warpgroup has waited on every stage
    // of its tile. Besides keeping the mainloops apart, this keeps each
    // wait on a stage's full barrier within one phase of its completion, as
    // a parity wait needs.
    if (!Cfg::Cooperative && local > 0) turns.wait(consumer);

    auto release = read;
    mma.accumulate_ = GMMA::ScaleOut::Zero;
    warpgroup_fence_operand(acc);
    pipeline.consumer_wait(read);
    {
      const int stage = read.index();
      warpgroup_arrive();
      CUTE_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      ++read;
    }
    warpgroup_fence_operand(acc);
    for (int kt = 1; kt < k_tiles; ++kt) {
      pipeline.consumer_wait(read);
      const int stage = read.index();
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      cute::gemm(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), acc);
      warpgroup_commit_batch();
      warpgroup_wait<1>();  // the previous stage's WGMMAs are done: free it
      warpgroup_fence_operand(acc);
      pipeline.consumer_release(release);
      ++read;
      ++release;
    }
    if (!Cfg::Cooperative && tile + int(gridDim.x) < tiles) turns.pass(consumer);
    warpgroup_fence_operand(acc);
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    pipeline.consumer_release(release);

    // Epilogue: each thread's accumulators in pairs of adjacent columns.
    const int64_t m0 = int64_t(tm) * BM, n0 = int64_t(tn) * BN;
    T* out = raw_pointer_cast(c.data());
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 2) {
      const int64_t m = m0 + get<0>(coord(i)), n = n0 + get<1>(coord(i));
      if (m < M && n < N) {
        const float2 r = epilogue(acc(i), acc(i + 1), m, n);
        store_pair(out + m * N + n, r.x, r.y);
      }
    }
  }
}

}  // namespace jit_gemm
