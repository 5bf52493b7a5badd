// gemm for CUDA: picks the SM90 kernel for the dtype and configuration
// (gemm_sm90.hpp). The kernels are built for sm_90a only, so other GPUs get
// a clear error instead of a missing-image launch failure.
#include <array>
#include <mutex>

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

template <class T>
ffi::Error run(cudaStream_t stream, int device, GemmConfig config, const GemmProblem& problem) {
  using kernels::sm90::run_gemm;
  switch (config) {
    case GemmConfig::kCooperative128x256:
      return run_gemm<T, GemmConfig::kCooperative128x256>(stream, device, problem);
    case GemmConfig::kPingpong128x128:
      return run_gemm<T, GemmConfig::kPingpong128x128>(stream, device, problem);
    case GemmConfig::kAuto:
      break;
  }
  return ffi::Error::Internal("gemm: no kernel for configuration " +
                              std::to_string(static_cast<int64_t>(config)));
}

}  // namespace

ffi::Error gemm_launch(Cuda exec, ffi::DataType dtype, const GemmProblem& problem) {
  int device = 0;
  CUTLAX_RETURN_IF_ERROR(cuda_error(cudaGetDevice(&device), "cudaGetDevice"));
  DeviceInfo info;
  CUTLAX_RETURN_IF_ERROR(device_info(device, info));
  if (info.major != 9 || info.minor != 0) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "gemm: the bf16/f16 kernels are built for Hopper (sm_90a), this GPU is sm_" +
                          std::to_string(info.major) + std::to_string(info.minor) +
                          "; use float32 with impl=\"tiled\"");
  }
  const GemmConfig config = problem.config == GemmConfig::kAuto
                                ? choose_gemm_config(problem.m, problem.n, info.sm_count)
                                : problem.config;
  return dispatch(Float16Types{}, dtype, "a", [&](auto tag) {
    return run<typename decltype(tag)::type>(exec.stream, device, config, problem);
  });
}

}  // namespace cutlax::ops
