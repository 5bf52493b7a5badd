#include "nvrtc.hpp"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <stdexcept>

namespace cutlax::jit {
namespace {

constexpr const char* kLibraryNames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};

std::mutex& load_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<std::string>& search_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
// Set once, under load_mutex; never unloaded (NVRTC keeps process-wide state,
// the precompiled header among it).
std::unique_ptr<Nvrtc>& loaded() {
  static std::unique_ptr<Nvrtc> instance;
  return instance;
}

template <class Fn>
bool bind(void* library, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  return fn != nullptr;
}

// Fills `api` from `library`; returns the first missing symbol, or null.
const char* bind_all(void* library, Nvrtc& api) {
  struct Required {
    const char* symbol;
    bool bound;
  };
  const Required required[] = {
      {"nvrtcVersion", bind(library, "nvrtcVersion", api.version)},
      {"nvrtcGetErrorString", bind(library, "nvrtcGetErrorString", api.get_error_string)},
      {"nvrtcCreateProgram", bind(library, "nvrtcCreateProgram", api.create_program)},
      {"nvrtcDestroyProgram", bind(library, "nvrtcDestroyProgram", api.destroy_program)},
      {"nvrtcCompileProgram", bind(library, "nvrtcCompileProgram", api.compile_program)},
      {"nvrtcGetProgramLogSize", bind(library, "nvrtcGetProgramLogSize", api.get_program_log_size)},
      {"nvrtcGetProgramLog", bind(library, "nvrtcGetProgramLog", api.get_program_log)},
      {"nvrtcGetCUBINSize", bind(library, "nvrtcGetCUBINSize", api.get_cubin_size)},
      {"nvrtcGetCUBIN", bind(library, "nvrtcGetCUBIN", api.get_cubin)},
      {"nvrtcAddNameExpression", bind(library, "nvrtcAddNameExpression", api.add_name_expression)},
      {"nvrtcGetLoweredName", bind(library, "nvrtcGetLoweredName", api.get_lowered_name)},
  };
  for (const Required& r : required) {
    if (!r.bound) return r.symbol;
  }
  bind(library, "nvrtcSetPCHHeapSize", api.set_pch_heap_size);
  bind(library, "nvrtcGetPCHCreateStatus", api.get_pch_create_status);
  return nullptr;
}

// The candidate paths in search order: each search dir, then bare names for
// the dynamic loader (LD_LIBRARY_PATH, the ld.so cache).
std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  for (const std::string& dir : search_dirs()) {
    for (const char* name : kLibraryNames) paths.push_back(dir + "/" + name);
  }
  for (const char* name : kLibraryNames) paths.push_back(name);
  return paths;
}

}  // namespace

void set_nvrtc_search_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(load_mutex());
  search_dirs() = std::move(dirs);
}

const Nvrtc& nvrtc() {
  std::lock_guard<std::mutex> lock(load_mutex());
  if (loaded()) return *loaded();
  std::string tried;
  for (const std::string& path : candidates()) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    auto api = std::make_unique<Nvrtc>();
    if (const char* missing = bind_all(library, *api)) {
      tried += "\n  " + path + ": loaded, but it has no " + missing;
      dlclose(library);
      continue;
    }
    int major = 0, minor = 0;
    api->version(&major, &minor);
    api->version_text = std::to_string(major) + "." + std::to_string(minor);
    api->path = path;
    loaded() = std::move(api);
    return *loaded();
  }
  throw std::runtime_error(
      "cutlax.jit: NVRTC (the CUDA runtime compiler) was not found. Tried:" + tried +
      "\nInstall the CUDA toolkit (and put its lib64 on LD_LIBRARY_PATH) or "
      "pip install nvidia-cuda-nvrtc.");
}

bool nvrtc_loaded() {
  std::lock_guard<std::mutex> lock(load_mutex());
  return loaded() != nullptr;
}

std::string nvrtc_version_or_reason() {
  try {
    const Nvrtc& api = nvrtc();
    return api.version_text + " (" + api.path + ")";
  } catch (const std::runtime_error&) {
    return "not found";
  }
}

}  // namespace cutlax::jit
