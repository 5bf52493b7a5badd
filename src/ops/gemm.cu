// gemm for CUDA: picks the SM90 kernel for the dtype, transpose and configuration
// (gemm_sm90.hpp). The kernels are built for sm_90a only, so other GPUs get
// a clear error instead of a missing-image launch failure.
#include <array>
#include <mutex>
#include <type_traits>

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

// The built kernels (gemm_sm90.hpp); expect_built_kernel has refused the
// others, so the fall-through is unreachable short of a bug.
template <class T>
ffi::Error run(cudaStream_t stream, int device, GemmConfig config, const GemmProblem& problem) {
  using kernels::sm90::run_gemm;
  constexpr bool k16Bit = !std::is_same_v<T, float>;
  const bool pingpong = config == GemmConfig::kPingpong128x128;
  switch (problem.transpose) {
    case GemmTranspose::kNone:
      if constexpr (k16Bit) {
        return pingpong ? run_gemm<T, GemmTranspose::kNone, GemmConfig::kPingpong128x128>(
                              stream, device, problem)
                        : run_gemm<T, GemmTranspose::kNone, GemmConfig::kCooperative128x256>(
                              stream, device, problem);
      }
      break;
    case GemmTranspose::kB:
      if constexpr (k16Bit) {
        return run_gemm<T, GemmTranspose::kB, GemmConfig::kPingpong128x128>(stream, device,
                                                                            problem);
      } else {
        return pingpong ? run_gemm<T, GemmTranspose::kB, GemmConfig::kPingpong128x128>(
                              stream, device, problem)
                        : run_gemm<T, GemmTranspose::kB, GemmConfig::kCooperative128x256>(
                              stream, device, problem);
      }
    case GemmTranspose::kA:
      if constexpr (k16Bit) {
        return run_gemm<T, GemmTranspose::kA, GemmConfig::kPingpong128x128>(stream, device,
                                                                            problem);
      }
      break;
  }
  return ffi::Error::Internal("gemm: no kernel for transpose " +
                              std::to_string(static_cast<int64_t>(problem.transpose)));
}

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
  const GemmConfig config = problem.config == GemmConfig::kAuto
                                ? choose_gemm_config(problem.m, problem.n, problem.k, info.sm_count)
                                : problem.config;
  return dispatch(GemmTypes{}, dtype, "a", [&](auto tag) {
    return run<typename decltype(tag)::type>(exec.stream, device, config, problem);
  });
}

}  // namespace cutlax::ops
