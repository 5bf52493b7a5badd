// gemm's kernel configurations and the heuristic that picks one per shape,
// apart from the op (gemm.hpp) so that the extension module can list their
// names for Python (build_info()["gemm_configs"]) without registering it.
#pragma once

#include <cstdint>
#include <cutlax/parallel.hpp>

namespace cutlax::ops {

// The kernel configurations (gemm_sm90.cuh; the FFI attribute "config").
// kAuto picks one per shape with choose_gemm_config. The CPU twin accepts
// every value and computes the same thing.
enum class GemmConfig : int64_t { kAuto = 0, kCooperative128x256 = 1, kPingpong128x128 = 2 };
inline constexpr int64_t kGemmConfigCount = 3;
inline constexpr const char* kGemmConfigNames[kGemmConfigCount] = {
    "auto", "cooperative_128x256x64_2x1", "pingpong_128x128x64_1x1"};

// TMA moves rows of 16 bytes at a time: N and K must be multiples of 8
// elements. cutlax.gemm pads other shapes before calling the op.
inline constexpr int64_t kGemmAlignment = 8;

// The documented heuristic: the 128x256 cooperative kernel when its tiles
// fill every SM at least once (large M and N: the bigger tile reads each
// operand byte fewer times), else the 128x128 ping-pong kernel, which makes
// twice the tiles and overlaps one warp group's epilogue with the other's
// mainloop (better when there are few tiles or K is short).
inline GemmConfig choose_gemm_config(int64_t m, int64_t n, int64_t sm_count) {
  const int64_t big_tiles = ceil_div(m, 128) * ceil_div(n, 256);
  return big_tiles >= sm_count ? GemmConfig::kCooperative128x256 : GemmConfig::kPingpong128x128;
}

}  // namespace cutlax::ops
