// The Hopper kernels behind gemm (gemm.hpp): CUTLASS 3 GEMMs assembled by the
// collective builders. A producer warp feeds shared memory with TMA; one or
// two consumer warp groups multiply with WGMMA, accumulating in float32; the
// persistent tile scheduler keeps one CTA per SM walking the output tiles; the
// epilogue is CUTLASS's visitor tree LinCombPerColBiasEltActAux: z = acc +
// bias[n] (a null bias pointer reads as zeros, loading nothing), aux = z
// (skipped when its pointer is null), c = act(z); LinCombPerRowBiasEltActAux
// on c^T in the swapped float32 product (Gemm::kSwapped).
//
// Row-major a (M, K) is CUTLASS's K-major A and row-major b (K, N) its
// N-major B, which WGMMA reads from shared memory as they are: no transposing
// copies. The transposed forms (GemmTranspose) are the other layout tags: b
// given as (N, K) is a K-major B, a given as (K, M) an M-major A. TF32 WGMMA
// reads K-major operands only, so float32 a @ b runs as c^T = b^T a^T with b
// loaded through registers (Gemm::kSwapped), and float32 is also built for b
// transposed, where its promoted configuration keeps the truncating
// tensor-core accumulation to one K tile (3xTF32 as accurate as FP32,
// gemm_configs.hpp). Each
// kernel is instantiated in a translation unit of its own (CMake generates
// them from gemm_sm90_instance.cu.in), so that nvcc compiles them in
// parallel.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/kernel_hardware_info.h>

#include <cmath>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "gemm.hpp"
#include "gemm_sm90.hpp"

namespace cutlax::kernels::sm90 {

// The activation as a run-time argument of the epilogue, so one kernel
// serves none, relu and gelu (the branch is uniform across the grid).
template <class T>
struct RuntimeActivation {
  struct Arguments {
    ops::GemmActivation kind = ops::GemmActivation::kNone;
  };
  CUTLASS_HOST_DEVICE T operator()(T z, Arguments const& args) const {
    if (args.kind == ops::GemmActivation::kGelu) {
      return cutlass::epilogue::thread::GELU_taylor<T>{}(z);  // jax.nn.gelu's tanh form
    }
    // relu and none are one clamp from below, at 0 or at -infinity (which
    // returns z unchanged, -infinity included): one code path for both. As a
    // separate `return z`, none compiled into a slower epilogue than relu's
    // on the same kernel, whatever the results' values (bench/RESULTS.md,
    // "the epilogue").
    const T floor = args.kind == ops::GemmActivation::kRelu ? T(0) : T(-INFINITY);
    return z > floor || z != z ? z : floor;  // NaN kept, as jax.nn.relu keeps it
  }
};

template <class T, int N>
struct RuntimeActivation<cutlass::Array<T, N>> {
  using Arguments = typename RuntimeActivation<T>::Arguments;
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& z,
                                                      Arguments const& args) const {
    cutlass::Array<T, N> out;
    RuntimeActivation<T> act;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = act(z[i], args);
    return out;
  }
};

// A configuration: CTA tile (M x N, and K as 128 bytes of T), cluster, the
// mainloop/epilogue schedules, and whether the partial sums are promoted.
template <class T, int TileM, int TileN, int ClusterM, class KernelSchedule_,
          class EpilogueSchedule_, bool Promoted_ = false>
struct Config {
  using TileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<128 / sizeof(T)>>;
  using ClusterShape = cute::Shape<cute::Int<ClusterM>, cute::_1, cute::_1>;
  using KernelSchedule = KernelSchedule_;
  using EpilogueSchedule = EpilogueSchedule_;
  static constexpr bool kPromoted = Promoted_;
};

template <class T, ops::GemmConfig>
struct ConfigFor;
template <class T>
struct ConfigFor<T, ops::GemmConfig::kCooperative128x256>
    : Config<T, 128, 256, 2, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
             cutlass::epilogue::TmaWarpSpecializedCooperative> {};
template <class T>
struct ConfigFor<T, ops::GemmConfig::kPingpong128x128>
    : Config<T, 128, 128, 1, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
             cutlass::epilogue::TmaWarpSpecialized> {};
template <class T>
struct ConfigFor<T, ops::GemmConfig::kPingpong64x128>
    : Config<T, 64, 128, 1, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
             cutlass::epilogue::TmaWarpSpecialized> {};
// Two accumulator sets (64 + 64 registers per thread at 128x128 cooperative):
// 128x256 tiles would need more registers than a thread has.
template <class T>
struct ConfigFor<T, ops::GemmConfig::kCooperative128x128Promoted>
    : Config<T, 128, 128, 1, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
             cutlass::epilogue::TmaWarpSpecializedCooperative, /*Promoted=*/true> {};

// The builder's shared-memory mainloop with CUTLASS's FP8 dispatch policy in
// its place: the same TMA pipeline and WGMMAs, and after every
// mma_promotion_interval WGMMAs (its default 4: one 32-element K tile of
// TF32) the partial sums are added into register accumulators
// (GmmaFP8Accumulation, which is generic in the operand type).
template <class Mainloop>
struct WithPromotion;
template <int Stages, class Cluster, class Schedule, class... Rest>
struct WithPromotion<cutlass::gemm::collective::CollectiveMma<
    cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<Stages, Cluster, Schedule>, Rest...>> {
  using type = cutlass::gemm::collective::CollectiveMma<
      cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedFP8<Stages, Cluster, Schedule>, Rest...>;
};

template <class Mainloop, bool Promoted>
struct PromotedIf {
  using type = Mainloop;
};
template <class Mainloop>
struct PromotedIf<Mainloop, true> : WithPromotion<Mainloop> {};

// The builder's mainloop with another shared-memory layout atom for A. The
// register-sourced mainloop of the swapped float32 product (Gemm::kSwapped)
// reads b there, M-major; the builder picks 32-byte swizzled rows, whose
// register loads are free of bank conflicts but whose TMA boxes are 32 bytes
// wide. 128-byte rows (2-way conflicts) run faster, and only with them does
// the swapped kernel beat XLA's copy of b followed by the shared-memory
// kernel (bench/RESULTS.md, "float32"; bench/kernel_variant.sh with
// 's/Layout_MN_SW128_Atom/Layout_MN_SW32_Atom/' times another atom).
template <class Mainloop, class AtomA>
struct WithSmemAtomA;
template <class Policy, class Tile, class ElementA, class StrideA, class ElementB, class StrideB,
          class Mma, class CopyA, class BuiltAtomA, class SmemCopyA, class TransformA, class CopyB,
          class AtomB, class SmemCopyB, class TransformB, class AtomA>
struct WithSmemAtomA<cutlass::gemm::collective::CollectiveMma<
                         Policy, Tile, ElementA, StrideA, ElementB, StrideB, Mma, CopyA, BuiltAtomA,
                         SmemCopyA, TransformA, CopyB, AtomB, SmemCopyB, TransformB>,
                     AtomA> {
  using type =
      cutlass::gemm::collective::CollectiveMma<Policy, Tile, ElementA, StrideA, ElementB, StrideB,
                                               Mma, CopyA, AtomA, SmemCopyA, TransformA, CopyB,
                                               AtomB, SmemCopyB, TransformB>;
};

template <class T, ops::GemmTranspose Form, ops::GemmConfig C>
struct Gemm {
  using Cfg = ConfigFor<T, C>;
  using RowMajor = cutlass::layout::RowMajor;
  using ColumnMajor = cutlass::layout::ColumnMajor;
  // TF32 WGMMA reads K-major operands only, and float32 b (K, N) as JAX gives
  // it is N-major. So float32 a @ b runs as the product c^T = b^T a^T, whose
  // first operand is b read as it is and loaded through registers (the
  // builder's register-sourced mainloop: WGMMA takes a register operand in
  // any layout), whose second is a, K-major, and whose result c^T (N, M) is
  // column-major: c row-major, with the bias along its rows. The alternative
  // is XLA copying b to (N, K) first, which costs more than the register
  // loads (WithSmemAtomA).
  // (CUTLASS's own swap for this layout pairs the mainloop with an epilogue
  // that has no fusion.)
  static constexpr bool kSwapped = std::is_same_v<T, float> && Form == ops::GemmTranspose::kNone;
  // CUTLASS's tags for its A (M, K), B (N, K) and D (M, N): a (K, M)
  // row-major is A column-major, b (N, K) row-major is B column-major; in
  // the swapped product b (K, N) is A column-major (M-major), a (M, K) is B
  // column-major (K-major), c (M, N) is D column-major.
  using LayoutA =
      std::conditional_t<kSwapped || Form == ops::GemmTranspose::kA, ColumnMajor, RowMajor>;
  using LayoutB =
      std::conditional_t<kSwapped || Form == ops::GemmTranspose::kB, ColumnMajor, RowMajor>;
  using LayoutD = std::conditional_t<kSwapped, ColumnMajor, RowMajor>;
  static constexpr int kAlignment = 16 / sizeof(T);  // elements per 16-byte TMA row unit

  template <class Layout, template <class> class Act, class... Types>
  using BiasAlongN = std::conditional_t<
      kSwapped, cutlass::epilogue::fusion::LinCombPerRowBiasEltActAux<Layout, Act, Types...>,
      cutlass::epilogue::fusion::LinCombPerColBiasEltActAux<Layout, Act, Types...>>;
  using FusionOp = BiasAlongN<LayoutD, RuntimeActivation, T, float, /*ElementAux=*/T,
                              /*ElementBias=*/T, /*ElementSource=*/T, /*ElementScalar=*/float>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, typename Cfg::TileShape,
      typename Cfg::ClusterShape, cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      /*ElementC: no source operand*/ void, LayoutD, kAlignment, T, LayoutD, kAlignment,
      typename Cfg::EpilogueSchedule, FusionOp>::CollectiveOp;
  using BuiltMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, LayoutA, kAlignment, T, LayoutB,
      kAlignment, float, typename Cfg::TileShape, typename Cfg::ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      typename Cfg::KernelSchedule>::CollectiveOp;
  using SwappedSmemAtomA = cute::GMMA::Layout_MN_SW128_Atom<cute::tfloat32_t>;
  using Mainloop =
      typename std::conditional_t<kSwapped, WithSmemAtomA<BuiltMainloop, SwappedSmemAtomA>,
                                  PromotedIf<BuiltMainloop, Cfg::kPromoted>>::type;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop,
                                                      Epilogue, cutlass::gemm::PersistentScheduler>;
  using Adapter = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  // The SM count and how many clusters fit at once, per device: the
  // persistent grid's size. Asked once per device, after the kernel's shared
  // memory limit is raised (the occupancy query depends on it).
  static ffi::Error hardware(int device, cutlass::KernelHardwareInfo& info) {
    static std::mutex mutex;
    static std::unordered_map<int, cutlass::KernelHardwareInfo> known;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known.find(device);
    if (it == known.end()) {
      CUTLAX_RETURN_IF_ERROR(
          cuda_error(cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          Kernel::SharedStorageSize),
                     "cudaFuncSetAttribute(gemm kernel, shared memory)"));
      it = known
               .emplace(device,
                        cutlass::KernelHardwareInfo::make_kernel_hardware_info<Kernel>(device))
               .first;
    }
    info = it->second;
    return ffi::Error::Success();
  }

  static ffi::Error run(cudaStream_t stream, int device, const ops::GemmProblem& p,
                        const ops::GemmSchedule& schedule) {
    cutlass::KernelHardwareInfo hw;
    CUTLAX_RETURN_IF_ERROR(hardware(device, hw));

    // CUTLASS's problem: (M, N, K) and a, b, c, or in the swapped product
    // (N, M, K) and b, a, c^T.
    const int64_t rows = kSwapped ? p.n : p.m, cols = kSwapped ? p.m : p.n;
    const void* operand_a = kSwapped ? p.b : p.a;
    const void* operand_b = kSwapped ? p.a : p.b;
    // A (M, K, L): (K, 1, M K) row-major, (1, M, M K) column-major.
    typename Kernel::StrideA stride_a;
    if constexpr (std::is_same_v<LayoutA, ColumnMajor>) {
      stride_a = cute::make_stride(cute::_1{}, rows, rows * p.k);
    } else {
      stride_a = cute::make_stride(p.k, cute::_1{}, rows * p.k);
    }
    // B (N, K, L): (1, N, K N) row-major, (K, 1, K N) column-major.
    typename Kernel::StrideB stride_b;
    if constexpr (std::is_same_v<LayoutB, ColumnMajor>) {
      stride_b = cute::make_stride(p.k, cute::_1{}, p.k * cols);
    } else {
      stride_b = cute::make_stride(cute::_1{}, cols, p.k * cols);
    }
    // D (M, N, L): (N, 1, M N) row-major, (1, M, M N) column-major.
    typename Kernel::StrideD stride_d;
    if constexpr (std::is_same_v<LayoutD, ColumnMajor>) {
      stride_d = cute::make_stride(cute::_1{}, rows, rows * cols);
    } else {
      stride_d = cute::make_stride(cols, cute::_1{}, rows * cols);
    }

    typename Epilogue::FusionCallbacks::Arguments fusion{};
    fusion.alpha = 1.0f;
    fusion.beta = 0.0f;
    fusion.bias_ptr = static_cast<const T*>(p.bias);
    fusion.activation.kind = p.activation;
    fusion.aux_ptr = static_cast<T*>(p.aux);
    fusion.dAux = stride_d;

    typename Kernel::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {int(rows), int(cols), int(p.k), 1},
        {static_cast<const T*>(operand_a), stride_a, static_cast<const T*>(operand_b), stride_b},
        {fusion, nullptr, stride_d, static_cast<T*>(p.c), stride_d},
        hw};
    if constexpr (Cfg::kPromoted) {
      args.mainloop.mma_promotion_interval = uint32_t(schedule.promotion_interval);
    }
    // The raster is along CUTLASS's M or N: c's N or M in the swapped product.
    using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
    const ops::GemmTileOrder order = schedule.order;
    args.scheduler.max_swizzle_size = order.swizzle;
    args.scheduler.raster_order = order.raster == ops::GemmRaster::kAlongM   ? Raster::AlongM
                                  : order.raster == ops::GemmRaster::kAlongN ? Raster::AlongN
                                                                             : Raster::Heuristic;
    if (!Kernel::can_implement(args)) {
      return ffi::Error::InvalidArgument(
          "gemm: the SM90 kernel cannot take this problem (M = " + std::to_string(p.m) +
          ", N = " + std::to_string(p.n) + ", K = " + std::to_string(p.k) + ")");
    }
    // A handler may not allocate (XLA may capture it into a CUDA graph); the
    // data-parallel persistent schedule needs no workspace.
    if (Kernel::get_workspace_size(args) != 0) {
      return ffi::Error::Internal("gemm: this kernel configuration needs a workspace");
    }
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
    if (Adapter::run(params, stream) != cutlass::Status::kSuccess) {
      return launch_status("the gemm kernel");
    }
    return ffi::Error::Success();
  }
};

}  // namespace cutlax::kernels::sm90
