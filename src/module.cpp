// The cutlax extension module. The built-in ops register through the same
// table a user's op library exports (CUTLAX_LIBRARY, read by
// cutlax.load_library); this module adds only what `python -m cutlax doctor`
// reports about the build and the machine.
#include <cutlass/version.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cutlax/cutlax.hpp>
#include <string>

#include "jit/bindings.hpp"
#include "jit/nvrtc.hpp"
#include "ops/gemm_configs.hpp"

#if CUTLAX_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

CUTLAX_LIBRARY()

namespace nb = nanobind;

namespace {

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

nb::dict build_info() {
  nb::dict info;
  info["xla_ffi_api"] = std::to_string(XLA_FFI_API_MAJOR) + "." + std::to_string(XLA_FFI_API_MINOR);
  info["jaxlib_headers"] = CUTLAX_JAXLIB_HEADERS;
  info["cutlass"] = std::to_string(CUTLASS_MAJOR) + "." + std::to_string(CUTLASS_MINOR) + "." +
                    std::to_string(CUTLASS_PATCH);
  info["library_abi"] = CUTLAX_LIBRARY_ABI_VERSION;
  nb::list gemm_configs;  // cutlax.gemm's impl names, in GemmConfig's order
  for (const char* name : cutlax::ops::kGemmConfigNames) gemm_configs.append(name);
  info["gemm_configs"] = gemm_configs;
  nb::list gemm_transposes;  // gemm's "transpose" attribute values, in GemmTranspose's order
  for (const char* name : cutlax::ops::kGemmTransposeNames) gemm_transposes.append(name);
  info["gemm_transposes"] = gemm_transposes;
#if CUTLAX_WITH_CUDA
  info["cuda"] = true;
  info["cuda_architectures"] = CUTLAX_CUDA_ARCHITECTURES;
  info["cuda_runtime_built"] = cuda_version_string(CUDART_VERSION);
#else
  info["cuda"] = false;
#endif
  return info;
}

// What the machine offers now. Without a driver every field says so rather
// than failing: the CPU build must work there.
nb::dict cuda_status() {
  nb::dict status;
  status["nvrtc"] = cutlax::jit::nvrtc_version_or_reason();
#if CUTLAX_WITH_CUDA
  int driver = 0, devices = 0;
  cudaError_t err = cudaDriverGetVersion(&driver);
  status["driver"] =
      err == cudaSuccess && driver > 0 ? cuda_version_string(driver) : std::string("none");
  err = cudaGetDeviceCount(&devices);
  status["devices"] = err == cudaSuccess ? devices : 0;
  if (err != cudaSuccess) status["error"] = std::string(cudaGetErrorString(err));
#else
  status["driver"] = "not queried (CPU-only build)";
  status["devices"] = 0;
#endif
  return status;
}

}  // namespace

NB_MODULE(_cutlax, m) {
  m.doc() = "cutlax's built-in op library and build information";
  m.def("build_info", &build_info, "How this extension was built.");
  m.def("cuda_status", &cuda_status, "CUDA driver, devices and NVRTC seen now.");
  cutlax::jit::bind(m);
}
