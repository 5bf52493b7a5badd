// The SM90 kernels' entry points, one per line of gemm_kernels.def (dtype,
// transpose, configuration), each defined in a translation unit of its own
// that CMake generates from gemm_sm90_instance.cu.in (nvcc then compiles them
// in parallel, and only for sm_90a: WGMMA and TMA have no portable PTX).
#pragma once

#include <cuda_runtime_api.h>

#include "gemm.hpp"

namespace cutlax::kernels::sm90 {

template <ffi::DataType D, ops::GemmTranspose Form, ops::GemmConfig C>
ffi::Error run_gemm(cudaStream_t stream, int device, const ops::GemmProblem& problem,
                    const ops::GemmSchedule& schedule);

#define CUTLAX_GEMM_KERNEL(T, Form, Config)                                                 \
  template <>                                                                               \
  ffi::Error run_gemm<ffi::DataType::T, ops::GemmTranspose::Form, ops::GemmConfig::Config>( \
      cudaStream_t, int, const ops::GemmProblem&, const ops::GemmSchedule&);
#include "gemm_kernels.def"
#undef CUTLAX_GEMM_KERNEL

}  // namespace cutlax::kernels::sm90
