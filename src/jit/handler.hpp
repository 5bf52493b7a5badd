// The FFI targets of cutlax.jit kernels: one handler per platform and stage,
// for Python to register (bindings.cpp hands them out).
//
// Operands: every input, then every output, any dtype, rank 0 to 8, each
// passed to the kernel by value as a cutlax::jit::Tensor<T, Rank>.
// Attributes: `cubin` (the artifact, u8 array), `entry` (the lowered name),
// `kernel` (the name users wrote, for messages), `launch` (the launch
// program, launch_program.hpp), `shared_mem` (bytes of dynamic shared
// memory), and from version 2 `tma` (TMA descriptor requests, tma.hpp: one
// more kernel parameter each, after the arrays).
//
// cutlax_jit_v2 is what Python lowers to; cutlax_jit_v1 (no `tma`, six-word
// launch programs) stays registered so artifacts exported before it still run.
#pragma once

#include "xla/ffi/api/c_api.h"

namespace cutlax::jit {

inline constexpr const char* kTargetName = "cutlax_jit_v2";
inline constexpr const char* kTargetNameV1 = "cutlax_jit_v1";

// CPU, both versions: always an error naming the kernel (a jit kernel has no
// CPU code; Python lowers the cpu= function there instead).
XLA_FFI_Handler* cpu_handler();

// CUDA, instantiate stage (version 1 or 2): verifies the artifact and loads
// the kernel into every active CUDA context.
XLA_FFI_Handler* cuda_instantiate_handler(int version);

// CUDA, execute stage (version 1 or 2): evaluates the launch program, encodes
// the TMA descriptors and launches on XLA's stream (with cuLaunchKernelEx
// for a cluster); command-buffer compatible.
XLA_FFI_Handler* cuda_execute_handler(int version);

}  // namespace cutlax::jit
