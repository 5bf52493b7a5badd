// The SM90 kernels' entry points, one per (dtype, transpose, configuration), each
// defined in a translation unit of its own that CMake generates from
// gemm_sm90_instance.cu.in (nvcc then compiles them in parallel, and only
// for sm_90a: WGMMA and TMA have no portable PTX).
#pragma once

#include <cuda_runtime_api.h>

#include "gemm.hpp"

namespace cutlax::kernels::sm90 {

template <class T, ops::GemmTranspose Form, ops::GemmConfig C>
ffi::Error run_gemm(cudaStream_t stream, int device, const ops::GemmProblem& problem);

// The kernels that are built: expect_built_kernel (gemm.hpp) keeps the
// handler from asking for others.
#define CUTLAX_GEMM_SM90_DECLARE(T, Form, C)                                              \
  template <>                                                                             \
  ffi::Error run_gemm<T, ops::GemmTranspose::Form, ops::GemmConfig::C>(cudaStream_t, int, \
                                                                       const ops::GemmProblem&);
#define CUTLAX_GEMM_SM90_DECLARE_16BIT(T)                 \
  CUTLAX_GEMM_SM90_DECLARE(T, kNone, kCooperative128x256) \
  CUTLAX_GEMM_SM90_DECLARE(T, kNone, kPingpong128x128)    \
  CUTLAX_GEMM_SM90_DECLARE(T, kB, kPingpong128x128)       \
  CUTLAX_GEMM_SM90_DECLARE(T, kA, kPingpong128x128)
CUTLAX_GEMM_SM90_DECLARE_16BIT(cutlass::bfloat16_t)
CUTLAX_GEMM_SM90_DECLARE_16BIT(cutlass::half_t)
CUTLAX_GEMM_SM90_DECLARE(float, kB, kCooperative128x256)
CUTLAX_GEMM_SM90_DECLARE(float, kB, kPingpong128x128)
#undef CUTLAX_GEMM_SM90_DECLARE_16BIT
#undef CUTLAX_GEMM_SM90_DECLARE

}  // namespace cutlax::kernels::sm90
