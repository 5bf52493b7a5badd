// CUDA-side helpers for launchers: error mapping and launch geometry. Host
// code may include it (op.hpp does, to report a launcher's launch errors);
// the CUDA runtime is only needed where a CUDA launcher is instantiated.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "cutlax/ffi.hpp"
#include "cutlax/parallel.hpp"  // ceil_div, for grid sizes

namespace cutlax {

inline ffi::Error cuda_error(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(what) + ": " + cudaGetErrorName(err) + ": " +
                              cudaGetErrorString(err));
}

// Reports a failed launch (bad configuration, no kernel image for this GPU)
// as an ffi::Error. cudaGetLastError neither syncs nor allocates, so it is
// safe while XLA captures the stream into a command buffer.
inline ffi::Error launch_status(std::string_view kernel) {
  return cuda_error(cudaGetLastError(), std::string("launching ") + std::string(kernel));
}

// Grid x is limited to 2^31 - 1 blocks; sizes beyond that are rejected up
// front rather than launched wrong.
inline constexpr int64_t kMaxGridBlocks = (int64_t{1} << 31) - 1;

inline ffi::Error expect_grid_fits(int64_t blocks, std::string_view arg) {
  if (blocks <= kMaxGridBlocks) return ffi::Error::Success();
  return ffi::Error::InvalidArgument(std::string(arg) + " is too large for one launch (" +
                                     std::to_string(blocks) + " blocks, limit " +
                                     std::to_string(kMaxGridBlocks) + ")");
}

}  // namespace cutlax
