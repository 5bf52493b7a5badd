#include "bindings.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache.hpp"
#include "driver.hpp"
#include "handler.hpp"
#include "nvrtc.hpp"
#include "pch.hpp"
#include "signature.hpp"

namespace nb = nanobind;

namespace cutlax::jit {
namespace {

CompileCache& cache() {
  static CompileCache instance(CUTLAX_VERSION);
  return instance;
}

nb::tuple compile(const std::string& source, const std::string& entry, const std::string& arch,
                  const std::vector<std::string>& include_dirs,
                  const std::vector<std::string>& options, const std::string& cache_dir) {
  if (entry.empty())
    throw nb::value_error("cutlax.jit: the entry (a __global__ function) is empty");
  CompileRequest request{source, entry, arch, include_dirs, options};
  CompileResult result;
  {
    // A compile takes a second; other Python threads (precompile's pool
    // among them) run meanwhile.
    nb::gil_scoped_release released;
    result = cache().compile(request, cache_dir);
  }
  nb::object artifact = nb::none();
  if (result.artifact) {
    artifact =
        nb::bytes(reinterpret_cast<const char*>(result.artifact->data()), result.artifact->size());
  }
  return nb::make_tuple(artifact, result.lowered_name, result.log);
}

nb::dict cache_info() {
  const CacheStats stats = cache().stats();
  nb::dict info;
  info["hits"] = stats.hits;
  info["misses"] = stats.misses;
  info["disk_hits"] = stats.disk_hits;
  info["corrupt"] = stats.corrupt;
  info["disk_write_errors"] = stats.disk_write_errors;
  info["directory"] = stats.directory;
  info["last_compile_seconds"] = stats.last_call_seconds;
  info["last_nvrtc_seconds"] = stats.last_nvrtc_seconds;
  info["compile_seconds"] = stats.compile_seconds;
  info["pch_compiles"] = stats.pch_compiles;
  info["nvrtc_crashes"] = stats.nvrtc_crashes;
  info["pch_ready"] = ready_pch_count();
  info["pch_enabled"] = pch_enabled();
  return info;
}

// The parameters of the kernel whose lowered name is `lowered_name`, as
// (kind, type, element, is_const, rank) with kind "tensor", "tma" or
// "other"; None when the name does not demangle (an extern "C" kernel).
nb::object kernel_parameters(const std::string& lowered_name) {
  const KernelSignature signature = kernel_signature(lowered_name);
  if (!signature.known) return nb::none();
  nb::list parameters;
  for (const KernelParameter& p : signature.parameters) {
    const char* kind = p.kind == KernelParameter::Kind::kTensor          ? "tensor"
                       : p.kind == KernelParameter::Kind::kTmaDescriptor ? "tma"
                                                                         : "other";
    parameters.append(nb::make_tuple(kind, describe(p), p.element, p.is_const, p.rank));
  }
  return parameters;
}

nb::capsule capsule(XLA_FFI_Handler* handler) {
  return nb::capsule(reinterpret_cast<void*>(handler));
}

nb::dict handlers(int version) {
  if (version != 1 && version != 2)
    throw nb::value_error("cutlax.jit: target versions are 1 and 2");
  nb::dict cuda;
  cuda["instantiate"] = capsule(cuda_instantiate_handler(version));
  cuda["execute"] = capsule(cuda_execute_handler(version));
  nb::dict out;
  out["cpu"] = capsule(cpu_handler());
  out["CUDA"] = cuda;
  return out;
}

}  // namespace

void bind(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "jit", "cutlax.jit's runtime: NVRTC compiles with their caches, and the FFI target.");
  m.attr("TARGET") = kTargetName;
  m.attr("TARGET_V1") = kTargetNameV1;
  m.def("compile", &compile, nb::arg("source"), nb::arg("entry"), nb::arg("arch"),
        nb::arg("include_dirs"), nb::arg("options"), nb::arg("cache_dir"),
        "Compiles `entry` of `source` to a CUBIN artifact: (artifact, lowered_name, log), or "
        "(None, '', log) when the source does not compile.");
  m.def("demangle", &demangle, nb::arg("name"),
        "The demangled form of a mangled C++ name, or '' when it is not one.");
  m.def("kernel_parameters", &kernel_parameters, nb::arg("lowered_name"),
        "The kernel's parameters from its lowered name: a list of (kind, type, element, "
        "is_const, rank), kind 'tensor', 'tma' or 'other'; None for an unmangled name.");
  m.def("cache_info", &cache_info, "Counters and timings of the compile cache.");
  m.def(
      "clear_cache",
      [](bool disk, std::optional<std::string> cache_dir) {
        cache().clear(disk, cache_dir.value_or(""));
      },
      nb::arg("disk") = true, nb::arg("cache_dir") = nb::none(),
      "Forgets compiled kernels; with disk, deletes the cache entries of cache_dir (default: "
      "the latest directory used).");
  m.def("default_arch", &default_arch,
        "The architecture of device 0 (sm_90a for compute capability 9.0), else sm_90a.");
  m.def("nvrtc_version", &nvrtc_version_or_reason, "NVRTC's version, or 'not found'.");
  m.def("set_nvrtc_search_dirs", &set_nvrtc_search_dirs, nb::arg("dirs"),
        "Directories searched for libnvrtc before the system's library path.");
  m.def("handlers", &handlers, nb::arg("version"),
        "What jax.ffi.register_ffi_target takes for cutlax_jit_v<version>, per platform.");
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
    nb::gil_scoped_release released;
    stop_pch_builds();
  }));
}

}  // namespace cutlax::jit
