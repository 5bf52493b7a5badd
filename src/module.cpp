// The cutlax extension module. The built-in ops register through the same
// table a user's op library exports (CUTLAX_LIBRARY, read by
// cutlax.load_library with read_library_table below); this module adds only
// that reader and what `python -m cutlax doctor` reports about the build and
// the machine.
#include <cutlass/version.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cutlax/cutlax.hpp>
#include <cutlax/library_reader.hpp>
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
  nb::list gemm_kernels;  // the SM90 kernels built (gemm_kernels.def): (dtype, transpose, config)
  for (const cutlax::ops::GemmKernel& kernel : cutlax::ops::kGemmKernels) {
    gemm_kernels.append(
        nb::make_tuple(std::string(cutlax::dtype_name(kernel.dtype)),
                       cutlax::ops::kGemmTransposeNames[static_cast<int64_t>(kernel.transpose)],
                       cutlax::ops::kGemmConfigNames[static_cast<int64_t>(kernel.config)]));
  }
  info["gemm_kernels"] = gemm_kernels;
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

// cutlax.Signature's fields, by keyword.
nb::dict signature_fields(const cutlax::OpSignature& op) {
  nb::dict fields;
  fields["name"] = op.name;
  fields["args"] = nb::tuple(nb::cast(op.args));
  fields["results"] = nb::tuple(nb::cast(op.results));
  fields["arg_dtypes"] = nb::tuple(nb::cast(op.arg_dtypes));
  fields["result_dtypes"] = nb::tuple(nb::cast(op.result_dtypes));
  nb::dict attrs;  // in declaration order
  for (const auto& [name, type] : op.attrs) attrs[nb::cast(name)] = type;
  fields["attrs"] = attrs;
  fields["scratch"] = nb::tuple(nb::cast(op.scratch));
  return fields;
}

// The table at `address` (what a library's cutlax_library_handlers returned),
// checked: one (target, platform, signature, Signature's fields, handler
// address) per entry, or ValueError with the reader's message.
nb::list read_library_table(uintptr_t address, const std::string& library) {
  const cutlax::ReadTableResult read =
      cutlax::read_handler_table(reinterpret_cast<const cutlax_handler_table*>(address), library);
  if (!read.ok()) throw nb::value_error(read.error.c_str());
  nb::list entries;
  for (const cutlax::TableEntry& entry : read.value) {
    entries.append(nb::make_tuple(entry.target, entry.platform, entry.signature,
                                  signature_fields(entry.op),
                                  reinterpret_cast<uintptr_t>(entry.handler)));
  }
  return entries;
}

nb::dict parse_signature(const std::string& target, const std::string& signature,
                         const std::string& types) {
  const auto parsed = cutlax::parse_signature(target, signature, types);
  if (!parsed.ok()) throw nb::value_error(parsed.error.c_str());
  return signature_fields(parsed.value);
}

}  // namespace

NB_MODULE(_cutlax, m) {
  m.doc() = "cutlax's built-in op library and build information";
  m.def("build_info", &build_info, "How this extension was built.");
  m.def("cuda_status", &cuda_status, "CUDA driver, devices and NVRTC seen now.");
  m.def(
      "set_gemm_tile_order",
      [](int swizzle, int raster) {
        if (swizzle < 0 || swizzle > 8 || (swizzle & (swizzle - 1)) != 0) {
          throw nb::value_error(
              ("swizzle must be 0 (the heuristic's), 1, 2, 4 or 8, got " + std::to_string(swizzle))
                  .c_str());
        }
        if (raster < 0 || raster > 2) {
          throw nb::value_error(("raster must be 0 (heuristic), 1 (along M) or 2 (along N), got " +
                                 std::to_string(raster))
                                    .c_str());
        }
        cutlax::ops::gemm_swizzle_override.store(swizzle);
        cutlax::ops::gemm_raster_override.store(raster);
      },
      nb::arg("swizzle"), nb::arg("raster"),
      "For tuning (bench/gemm_tune.py): the order in which the SM90 GEMMs walk their output "
      "tiles, in place of the heuristic's, for every later call in this process; (0, 0) "
      "restores the heuristic.");
  m.def(
      "set_gemm_promotion_interval",
      [](int interval) {
        if (interval < 0 || interval % 4 != 0) {
          throw nb::value_error(("interval must be 0 (the default, " +
                                 std::to_string(cutlax::ops::kGemmPromotionInterval) +
                                 ") or a positive multiple of 4, got " + std::to_string(interval))
                                    .c_str());
        }
        cutlax::ops::gemm_promotion_interval_override.store(interval);
      },
      nb::arg("interval"),
      "For tuning (bench/gemm_tune.py): how many WGMMAs the promoted float32 GEMM runs between "
      "adding its partial sums into the float32 accumulators, in place of the default, for "
      "every later call in this process; 0 restores the default.");
  m.def("read_library_table", &read_library_table, nb::arg("address"), nb::arg("library"),
        "A library's handler table at `address`, checked (include/cutlax/library_reader.hpp).");
  m.def("parse_signature", &parse_signature, nb::arg("target"), nb::arg("signature"),
        nb::arg("types"),
        "One table entry's signature and types text, read as Signature's fields.");
  cutlax::jit::bind(m);
}
