// The SM90 kernels' entry points, one per (dtype, configuration), each
// defined in a translation unit of its own that CMake generates from
// gemm_sm90_instance.cu.in (nvcc then compiles them in parallel, and only
// for sm_90a: WGMMA and TMA have no portable PTX).
#pragma once

#include <cuda_runtime_api.h>

#include "gemm.hpp"

namespace cutlax::kernels::sm90 {

template <class T, ops::GemmConfig C>
ffi::Error run_gemm(cudaStream_t stream, int device, const ops::GemmProblem& problem);

#define CUTLAX_GEMM_SM90_DECLARE(T, C) \
  template <>                          \
  ffi::Error run_gemm<T, ops::GemmConfig::C>(cudaStream_t, int, const ops::GemmProblem&);
CUTLAX_GEMM_SM90_DECLARE(cutlass::bfloat16_t, kCooperative128x256)
CUTLAX_GEMM_SM90_DECLARE(cutlass::bfloat16_t, kPingpong128x128)
CUTLAX_GEMM_SM90_DECLARE(cutlass::half_t, kCooperative128x256)
CUTLAX_GEMM_SM90_DECLARE(cutlass::half_t, kPingpong128x128)
#undef CUTLAX_GEMM_SM90_DECLARE

}  // namespace cutlax::kernels::sm90
