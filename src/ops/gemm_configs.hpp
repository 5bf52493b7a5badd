// gemm's kernel configurations, operand forms, the list of kernels that are
// built, and the heuristic that picks one per shape, apart from the op
// (gemm.hpp) so that the extension module can list them for Python
// (build_info()) and the GPU sanitize driver can run each, without
// registering the op.
#pragma once

#include <atomic>
#include <cstdint>
#include <cutlax/parallel.hpp>

#include "xla/ffi/api/ffi.h"

namespace cutlax::ops {

// The kernel configurations (gemm_sm90.cuh; the FFI attribute "config"):
// CTA tile M x N, cluster, schedule. The K tile is 128 bytes (64 16-bit or 32
// float32 elements). kAuto picks one per shape with choose_gemm_schedule. The
// CPU twin accepts every built one and computes the same thing.
enum class GemmConfig : int64_t { kAuto = 0, kCooperative128x256 = 1, kPingpong128x128 = 2 };
inline constexpr int64_t kGemmConfigCount = 3;
inline constexpr const char* kGemmConfigNames[kGemmConfigCount] = {
    "auto", "cooperative_128x256_2x1", "pingpong_128x128_1x1"};

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

// "auto" falls back on the 128x128 ping-pong kernel, so every dtype and form
// that has a kernel must have that one.
constexpr bool every_form_has_the_pingpong_kernel() {
  for (const GemmKernel& kernel : kGemmKernels) {
    if (!gemm_kernel_built(kernel.dtype, kernel.transpose, GemmConfig::kPingpong128x128)) {
      return false;
    }
  }
  return true;
}
static_assert(every_form_has_the_pingpong_kernel(),
              "gemm_kernels.def: a dtype and form without a kPingpong128x128 kernel");

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

// A process-wide tile order that replaces the heuristic's, for tuning
// (bench/gemm_tune.py, through _cutlax.set_gemm_tile_order); swizzle 0 means
// none is set.
inline std::atomic<int> gemm_swizzle_override{0};
inline std::atomic<int> gemm_raster_override{0};
inline GemmTileOrder gemm_tile_order_override() {
  return {gemm_swizzle_override.load(std::memory_order_relaxed),
          static_cast<GemmRaster>(gemm_raster_override.load(std::memory_order_relaxed))};
}

struct GemmSchedule {
  GemmConfig config;
  GemmTileOrder order;
};

// The documented heuristic (docs/gemm.md, measured on the H200): the 128x256
// cooperative kernel when its tiles fill every SM at least four times and K
// is long (the bigger tile reads each operand byte fewer times, and the wave
// tail and the epilogue are then small parts of the work), else the 128x128
// ping-pong kernel, which overlaps one warp group's epilogue with the other's
// mainloop: 1.0-1.1x the cooperative one at 4096^3 and 4096x4096x1024. Each
// time the first of these that is built for the dtype and form (the
// transposed 16-bit forms have no 128x256 kernel). Tiles are walked in
// strips of kGemmSwizzle: CUTLASS's default, until bench/gemm_tune.py's
// measurements on the H200 say otherwise.
inline constexpr int kGemmSwizzle = 1;

inline GemmSchedule choose_gemm_schedule(ffi::DataType dtype, GemmTranspose transpose,
                                         GemmConfig requested, int64_t m, int64_t n, int64_t k,
                                         int64_t sm_count) {
  GemmSchedule schedule{requested, {kGemmSwizzle, GemmRaster::kHeuristic}};
  if (const GemmTileOrder forced = gemm_tile_order_override(); forced.swizzle > 0) {
    schedule.order = forced;
  }
  if (requested != GemmConfig::kAuto) return schedule;  // the handler has checked it is built
  const int64_t big_tiles = ceil_div(m, 128) * ceil_div(n, 256);
  const GemmConfig preferred[] = {big_tiles >= 4 * sm_count && k >= 4096
                                      ? GemmConfig::kCooperative128x256
                                      : GemmConfig::kPingpong128x128,
                                  GemmConfig::kPingpong128x128};
  for (GemmConfig config : preferred) {
    if (gemm_kernel_built(dtype, transpose, config)) {
      schedule.config = config;
      break;
    }
  }
  return schedule;
}

}  // namespace cutlax::ops
