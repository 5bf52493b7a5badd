// gemm for CUDA: picks the SM90 kernel for the dtype, transpose and configuration
// (choose_gemm_schedule, gemm_configs.hpp) among those built (gemm_kernels.def). The kernels are
// built for sm_90a only, so other GPUs get a clear error instead of a missing-image launch failure.
#include <array>
#include <iterator>
#include <mutex>
#include <string>

#include "gemm.hpp"
#include "gemm_sm90.hpp"

namespace cutlax::ops {
namespace {

struct DeviceInfo {
  int major = 0, minor = 0, sm_count = 0;
};

ffi::Error device_info(int device, DeviceInfo& out) {
  static std::mutex mutex;
  static std::array<DeviceInfo, 64> known{};
  if (device < 0 || device >= static_cast<int>(known.size())) {
    return ffi::Error::Internal("gemm: device ordinal " + std::to_string(device) + " out of range");
  }
  std::lock_guard<std::mutex> lock(mutex);
  DeviceInfo& info = known[device];
  if (info.sm_count == 0) {
    CUTLAX_RETURN_IF_ERROR(
        cuda_error(cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, device),
                   "cudaDeviceGetAttribute"));
    CUTLAX_RETURN_IF_ERROR(
        cuda_error(cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, device),
                   "cudaDeviceGetAttribute"));
    CUTLAX_RETURN_IF_ERROR(
        cuda_error(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device),
                   "cudaDeviceGetAttribute"));
  }
  out = info;
  return ffi::Error::Success();
}

// The entry point of each built kernel, in kGemmKernels' order (both come
// from gemm_kernels.def); expect_built_kernel has refused the others and
// choose_gemm_schedule picks only these, so a miss is a bug.
using KernelRunner = ffi::Error (*)(cudaStream_t, int, const GemmProblem&, const GemmSchedule&);
constexpr KernelRunner kKernelRunners[] = {
#define CUTLAX_GEMM_KERNEL(T, Form, Config) \
  &kernels::sm90::run_gemm<ffi::DataType::T, GemmTranspose::Form, GemmConfig::Config>,
#include "gemm_kernels.def"
#undef CUTLAX_GEMM_KERNEL
};
static_assert(std::size(kKernelRunners) == std::size(kGemmKernels));

}  // namespace

ffi::Error gemm_launch(Cuda exec, ffi::DataType dtype, const GemmProblem& problem) {
  int device = 0;
  CUTLAX_RETURN_IF_ERROR(cuda_error(cudaGetDevice(&device), "cudaGetDevice"));
  DeviceInfo info;
  CUTLAX_RETURN_IF_ERROR(device_info(device, info));
  if (info.major != 9 || info.minor != 0) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "gemm: the kernels are built for Hopper (sm_90a), this GPU is sm_" +
                          std::to_string(info.major) + std::to_string(info.minor) +
                          "; use float32 with impl=\"tiled\"");
  }
  GemmSchedule schedule = choose_gemm_schedule(dtype, problem.transpose, problem.config, problem.m,
                                               problem.n, problem.k, info.sm_count);
#if CUTLAX_GEMM_TUNING
  schedule = tuned_gemm_schedule(schedule);
#endif
  for (size_t i = 0; i < std::size(kGemmKernels); ++i) {
    const GemmKernel& kernel = kGemmKernels[i];
    if (kernel.dtype == dtype && kernel.transpose == problem.transpose &&
        kernel.config == schedule.config) {
      return kKernelRunners[i](exec.stream, device, problem, schedule);
    }
  }
  return ffi::Error::Internal(
      "gemm: no kernel for " + std::string(dtype_name(dtype)) + ", transpose " +
      kGemmTransposeNames[static_cast<int64_t>(problem.transpose)] + ", config " +
      kGemmConfigNames[static_cast<int64_t>(schedule.config)]);
}

}  // namespace cutlax::ops
