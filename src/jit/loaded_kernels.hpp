// Kernels loaded into CUDA contexts: one module per (artifact, entry,
// context), loaded when XLA instantiates the custom call, never in the launch
// path, so launches stay capturable in CUDA graphs. Modules live as long as
// the process (a CUBIN costs a few hundred KB of device memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "driver.hpp"

namespace cutlax::jit {

struct LoadedKernel {
  cu::Context context;
  cu::Device device;
  cu::Function function;
  // The device's multiprocessor count, for launch programs (sm_count()).
  int64_t multiprocessor_count;
  // What CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES allows now.
  int64_t dynamic_shared_limit;
  // The byte size of each kernel parameter, from the CUBIN; unknown (and
  // unchecked) with drivers older than CUDA 12.4.
  bool param_sizes_known;
  std::vector<size_t> param_sizes;
};

// The instantiate stage: loads `entry` from the artifact into every CUDA
// context active now (XLA's devices) and allows it `shared_mem` bytes of
// dynamic shared memory. Returns an empty string or what failed.
std::string load_in_active_contexts(const Driver& api, const uint8_t* artifact, size_t size,
                                    std::string_view entry, int64_t shared_mem);

// The execute stage: the kernel for the stream's `context`. Normally loaded
// already; a context that was not active at instantiate time (or an
// executable deserialised without instantiating) loads it here, with the
// thread's stream-capture mode relaxed so a capture in progress survives.
std::string find_loaded_kernel(const Driver& api, cu::Context context, const uint8_t* artifact,
                               size_t size, std::string_view entry, int64_t shared_mem,
                               const LoadedKernel*& kernel);

}  // namespace cutlax::jit
