// gemm's part of the extension module (module_part.hpp): the names Python
// builds cutlax.ops.gemm's CONFIGS, transposes and KERNELS from, so that the
// C++ enums and gemm_kernels.def stay their one source.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cutlax/cutlax.hpp>
#include <string>

#include "gemm_configs.hpp"
#include "module_part.hpp"

namespace nb = nanobind;

namespace cutlax::ops {
namespace {

void gemm_info(nb::dict& info) {
  nb::list configs;  // cutlax.gemm's impl names, in GemmConfig's order
  for (const char* name : kGemmConfigNames) configs.append(name);
  info["gemm_configs"] = configs;
  nb::list transposes;  // gemm's "transpose" attribute values, in GemmTranspose's order
  for (const char* name : kGemmTransposeNames) transposes.append(name);
  info["gemm_transposes"] = transposes;
  nb::list kernels;  // the SM90 kernels built (gemm_kernels.def): (dtype, transpose, config)
  for (const GemmKernel& kernel : kGemmKernels) {
    kernels.append(nb::make_tuple(std::string(dtype_name(kernel.dtype)),
                                  kGemmTransposeNames[static_cast<int64_t>(kernel.transpose)],
                                  kGemmConfigNames[static_cast<int64_t>(kernel.config)]));
  }
  info["gemm_kernels"] = kernels;
}

CUTLAX_MODULE_PART(nullptr, gemm_info);

}  // namespace
}  // namespace cutlax::ops
