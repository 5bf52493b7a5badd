// gemm's kernel configurations, operand forms, the list of kernels that are
// built, and the heuristic that picks one per shape, apart from the op
// (gemm.hpp) so that gemm's part of the extension module (gemm_module.cpp)
// can list them for Python and the GPU sanitize driver can run each, without
// registering the op.
#pragma once

#include <cstdint>
#include <cutlax/ffi.hpp>
#include <cutlax/parallel.hpp>

namespace cutlax::ops {

// The kernel configurations (gemm_sm90.cuh; the FFI attribute "config"):
// CTA tile M x N, cluster, schedule. The K tile is 128 bytes (64 16-bit or 32
// float32 elements). kAuto picks one per shape with choose_gemm_schedule. The
// CPU twin accepts every built one and computes the same thing.
enum class GemmConfig : int64_t {
  kAuto = 0,
  kCooperative128x256 = 1,
  kPingpong128x128 = 2,
  kPingpong64x128 = 3,
  // float32: the WGMMA partial sums are added into a second set of float32
  // registers after every K tile (as CUTLASS's FP8 mainloop does), so that
  // the tensor cores' own accumulation, which truncates, covers 32 products
  // at a time instead of all K: 3xTF32 on it is as accurate as FP32
  // (precision="highest").
  kCooperative128x128Promoted = 4,
};
inline constexpr int64_t kGemmConfigCount = 5;
inline constexpr const char* kGemmConfigNames[kGemmConfigCount] = {
    "auto", "cooperative_128x256_2x1", "pingpong_128x128_1x1", "pingpong_64x128_1x1",
    "cooperative_128x128_1x1_promoted"};

// Which operand arrives transposed (the FFI attribute "transpose"): the
// backward's products a @ b.T and a.T @ b read the forward's arrays as they
// are instead of copying them.
enum class GemmTranspose : int64_t {
  kNone = 0,  // c = a @ b,   a (M, K), b (K, N)
  kB = 1,     // c = a @ b.T, a (M, K), b (N, K)
  kA = 2,     // c = a.T @ b, a (K, M), b (K, N)
};
inline constexpr int64_t kGemmTransposeCount = 3;
inline constexpr const char* kGemmTransposeNames[kGemmTransposeCount] = {"none", "b", "a"};

// The kernels that are built (gemm_kernels.def): not every configuration for
// every dtype and form, so that the build stays short.
struct GemmKernel {
  ffi::DataType dtype;
  GemmTranspose transpose;
  GemmConfig config;
};
inline constexpr GemmKernel kGemmKernels[] = {
#define CUTLAX_GEMM_KERNEL(T, Form, Config) \
  {ffi::DataType::T, GemmTranspose::Form, GemmConfig::Config},
#include "gemm_kernels.def"
#undef CUTLAX_GEMM_KERNEL
};

constexpr bool gemm_kernel_built(ffi::DataType dtype, GemmTranspose transpose, GemmConfig config) {
  for (const GemmKernel& kernel : kGemmKernels) {
    if (kernel.dtype == dtype && kernel.transpose == transpose && kernel.config == config) {
      return true;
    }
  }
  return false;
}

// TMA moves rows of 16 bytes: each array's rows (its last dimension) must be
// a multiple of 16 bytes. cutlax.gemm pads other shapes before calling the op.
inline constexpr int64_t kGemmRowBytes = 16;

// The order in which the persistent scheduler walks the output tiles: in
// strips `swizzle` tiles wide (1, 2, 4 or 8), the strips along M or N. A
// wave of CTAs then works on a block of tiles that shares operand rows and
// columns in L2, instead of a line of tiles that reads all of one operand.
enum class GemmRaster : int { kHeuristic = 0, kAlongM = 1, kAlongN = 2 };
struct GemmTileOrder {
  int swizzle = 1;
  GemmRaster raster = GemmRaster::kHeuristic;
};

// How often the promoted kernel adds the WGMMA partial sums into its float32
// accumulators: every this many WGMMAs of K 8 (CUTLASS's
// mma_promotion_interval; 4 is one 32-element K tile, and it must be a
// multiple of 4). Each promotion waits for the WGMMAs in flight, so a longer
// interval runs faster and lets the truncating accumulation cover more
// products; 8 and 16 measured within noise of 4 in speed and in error
// (bench/RESULTS.md).
inline constexpr int kGemmPromotionInterval = 4;

// What a launch runs: the configuration, its tile order and (for the
// promoted kernel) its promotion interval, passed to the kernel per call.
struct GemmSchedule {
  GemmConfig config;
  GemmTileOrder order;
  int promotion_interval = kGemmPromotionInterval;
};

#if CUTLAX_GEMM_TUNING
// A tuning build (the CMake option CUTLAX_GEMM_TUNING, for
// bench/gemm_tune.py) replaces the heuristic's tile order and promotion
// interval with what the tuning script set; bench/gemm_tuning.cpp defines
// it. Other builds have no such state.
GemmSchedule tuned_gemm_schedule(GemmSchedule schedule);
#endif

// The heuristic (docs/gemm.md explains it; bench/RESULTS.md, "Hopper GEMM",
// has the measurements behind each choice):
// - float32 (TF32): the 128x256 cooperative kernel, the fastest built one
//   in TF32 and 3xTF32. (The promoted kernel is slower and is asked for by
//   name: precision="highest" does.)
// - 16-bit, long K and many tiles: the 128x256 cooperative kernel, whose
//   2x1 cluster shares each tile of b between two CTAs and whose tiles are
//   twice as large, so it reads half as much from L2 per product as the
//   128x128 ping-pong kernel; where K is long, that traffic looks like the
//   ping-pong kernel's limit.
// - 16-bit otherwise: the 128x128 ping-pong kernel, which overlaps one warp
//   group's epilogue with the other's mainloop; the 64x128 ping-pong kernel
//   when 128x128 tiles would leave SMs idle (the backward's weight gradient,
//   1024x1024 with long K: 64 tiles for 132 SMs; bf16 only, float16 takes
//   the 128x128 one).
// Where that one is not built for the dtype and form, the first that is in
// GemmConfig's order (the backward's transposed products: the 128x128
// ping-pong).
// The ping-pong kernels walk tiles in strips 8 wide, far ahead of CUTLASS's
// default strips of 1 at large shapes and close to the best of ten orders
// at most of the shapes measured; the cooperative kernel, whose 2x1 cluster
// already pairs tiles, keeps strips of 1 (bench/RESULTS.md, "tile order").
inline constexpr int kPingpongSwizzle = 8;
// 16-bit products take the cooperative kernel from this K, where its
// 128x256 tiles fill at least this many waves of the SMs (8192^3: 2048
// tiles, 15 waves on 132 SMs). The shapes measured put the bounds between
// 4096^3 and 4096x4096x1024 (512 tiles), where the kernel loses, and
// 8192^3, where it wins; docs/gemm.md names the tuning command that would
// place them more closely.
inline constexpr int64_t kCooperativeMinK16 = 8192;
inline constexpr int64_t kCooperativeMinWaves16 = 4;

inline GemmSchedule choose_gemm_schedule(ffi::DataType dtype, GemmTranspose transpose,
                                         GemmConfig requested, int64_t m, int64_t n, int64_t k,
                                         int64_t sm_count) {
  GemmSchedule schedule{requested, {}};
  if (requested == GemmConfig::kAuto) {
    const int64_t tiles = ceil_div(m, 128) * ceil_div(n, 128);
    const bool long_k_and_many_tiles =
        k >= kCooperativeMinK16 &&
        ceil_div(m, 128) * ceil_div(n, 256) >= kCooperativeMinWaves16 * sm_count;
    GemmConfig preferred = GemmConfig::kPingpong128x128;
    if (dtype == ffi::DataType::F32 || long_k_and_many_tiles) {
      preferred = GemmConfig::kCooperative128x256;
    } else if (tiles < sm_count) {
      preferred = GemmConfig::kPingpong64x128;
    }
    schedule.config = preferred;
    for (int64_t c = 1;
         c < kGemmConfigCount && !gemm_kernel_built(dtype, transpose, schedule.config); ++c) {
      schedule.config = static_cast<GemmConfig>(c);
    }
  }
  const bool pingpong = schedule.config == GemmConfig::kPingpong128x128 ||
                        schedule.config == GemmConfig::kPingpong64x128;
  schedule.order.swizzle = pingpong ? kPingpongSwizzle : 1;
  return schedule;
}

}  // namespace cutlax::ops
