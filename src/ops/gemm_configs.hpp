// gemm's kernel configurations, operand layouts and the heuristic that picks
// a configuration per shape, apart from the op (gemm.hpp) so that the
// extension module can list their names for Python (build_info()) without
// registering it.
#pragma once

#include <cstdint>
#include <cutlax/parallel.hpp>

namespace cutlax::ops {

// The kernel configurations (gemm_sm90.cuh; the FFI attribute "config"):
// CTA tile M x N, cluster, schedule. The K tile is 128 bytes (64 16-bit or 32
// float32 elements). kAuto picks one per shape with choose_gemm_config. The
// CPU twin accepts every value and computes the same thing.
enum class GemmConfig : int64_t { kAuto = 0, kCooperative128x256 = 1, kPingpong128x128 = 2 };
inline constexpr int64_t kGemmConfigCount = 3;
inline constexpr const char* kGemmConfigNames[kGemmConfigCount] = {
    "auto", "cooperative_128x256_2x1", "pingpong_128x128_1x1"};

// Which operand arrives transposed (the FFI attribute "transpose"): the
// backward's products a @ b.T and a.T @ b read the forward's arrays as they
// are instead of copying them. Only kNone has every configuration; the
// transposed forms have the ping-pong kernel (the backward's shapes are the
// forward's, and one kernel each keeps the build short).
enum class GemmTranspose : int64_t {
  kNone = 0,  // c = a @ b,   a (M, K), b (K, N)
  kB = 1,     // c = a @ b.T, a (M, K), b (N, K)
  kA = 2,     // c = a.T @ b, a (K, M), b (K, N)
};
inline constexpr int64_t kGemmTransposeCount = 3;
inline constexpr const char* kGemmTransposeNames[kGemmTransposeCount] = {"none", "b", "a"};

// TMA moves rows of 16 bytes: each array's rows (its last dimension) must be
// a multiple of 16 bytes. cutlax.gemm pads other shapes before calling the op.
inline constexpr int64_t kGemmRowBytes = 16;

// The documented heuristic (docs/gemm.md, measured on the H200): the 128x256
// cooperative kernel when its tiles fill every SM at least four times and K
// is long (the bigger tile reads each operand byte fewer times, and the wave
// tail and the epilogue are then small parts of the work), else the 128x128
// ping-pong kernel, which overlaps one warp group's epilogue with the other's
// mainloop: 1.0-1.1x the cooperative one at 4096^3 and 4096x4096x1024.
inline GemmConfig choose_gemm_config(int64_t m, int64_t n, int64_t k, int64_t sm_count) {
  const int64_t big_tiles = ceil_div(m, 128) * ceil_div(n, 256);
  return big_tiles >= 4 * sm_count && k >= 4096 ? GemmConfig::kCooperative128x256
                                                : GemmConfig::kPingpong128x128;
}

}  // namespace cutlax::ops
