// The FFI target cutlax_jit_v1: one handler per platform and stage, for
// Python to register (bindings.cpp hands them out).
//
// Operands: every input, then every output, any dtype, rank 0 to 8, each
// passed to the kernel by value as a cutlax::jit::Tensor<T, Rank>.
// Attributes: `cubin` (the artifact, u8 array), `entry` (the lowered name),
// `kernel` (the name users wrote, for messages), `launch` (the launch
// program, launch_program.hpp), `shared_mem` (bytes of dynamic shared memory).
#pragma once

#include "xla/ffi/api/c_api.h"

namespace cutlax::jit {

inline constexpr const char* kTargetName = "cutlax_jit_v1";

// CPU: always an error naming the kernel (a jit kernel has no CPU code;
// Python lowers the cpu= function there instead).
XLA_FFI_Handler* cpu_handler();

// CUDA, instantiate stage: verifies the artifact and loads the kernel into
// every active CUDA context.
XLA_FFI_Handler* cuda_instantiate_handler();

// CUDA, execute stage: evaluates the launch program and launches on XLA's
// stream; command-buffer compatible.
XLA_FFI_Handler* cuda_execute_handler();

}  // namespace cutlax::jit
