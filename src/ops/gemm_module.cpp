// gemm's part of the extension module (module_part.hpp): the facts Python
// builds cutlax.ops.gemm from (configurations, the promoted one, transposes,
// activations, the row rule, the kernels built), so that the C++ enums,
// constants and gemm_kernels.def stay their one source.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cutlax/cutlax.hpp>
#include <string>

#include "gemm.hpp"
#include "gemm_configs.hpp"
#include "module_part.hpp"

namespace nb = nanobind;

namespace cutlax::ops {
namespace {

void gemm_info(nb::dict& info) {
  nb::list configs;  // cutlax.gemm's impl names, in GemmConfig's order
  for (const char* name : kGemmConfigNames) configs.append(name);
  info["gemm_configs"] = configs;
  // The configuration whose partial sums are promoted: precision="highest"'s.
  info["gemm_promoted_config"] =
      kGemmConfigNames[static_cast<int64_t>(GemmConfig::kCooperative128x128Promoted)];
  nb::list activations;  // gemm's "activation" attribute values, in GemmActivation's order
  for (const char* name : kGemmActivationNames) activations.append(name);
  info["gemm_activations"] = activations;
  info["gemm_row_bytes"] = kGemmRowBytes;  // each array's rows: a multiple of this (TMA)
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
