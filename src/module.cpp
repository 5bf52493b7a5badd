// The cutlax extension module. The built-in ops register through the same
// table a user's op library exports (CUTLAX_LIBRARY, read by
// cutlax.load_library with read_library_table below); this module adds only
// that reader, what `python -m cutlax doctor` reports about the build and
// the machine, and the parts that ops add themselves (module_part.hpp).
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
#include "module_part.hpp"

#if CUTLAX_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

CUTLAX_LIBRARY()

namespace nb = nanobind;

std::vector<cutlax::ModulePart>& cutlax::module_parts() {
  static std::vector<ModulePart> parts;
  return parts;
}

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
  for (const cutlax::ModulePart& part : cutlax::module_parts()) {
    if (part.info != nullptr) part.info(info);
  }
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
  m.def("read_library_table", &read_library_table, nb::arg("address"), nb::arg("library"),
        "A library's handler table at `address`, checked (include/cutlax/library_reader.hpp).");
  m.def("parse_signature", &parse_signature, nb::arg("target"), nb::arg("signature"),
        nb::arg("types"),
        "One table entry's signature and types text, read as Signature's fields.");
  cutlax::jit::bind(m);
  for (const cutlax::ModulePart& part : cutlax::module_parts()) {
    if (part.bind != nullptr) part.bind(m);
  }
}
