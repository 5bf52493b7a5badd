#include "driver.hpp"

#include <dlfcn.h>

#include <memory>
#include <mutex>

namespace cutlax::jit {
namespace {

template <class Fn>
bool bind(void* library, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  return fn != nullptr;
}

// Fills `api`; returns the first missing symbol, or null. The _v2 names are
// the ABI cuda.h's macros select.
const char* bind_all(void* library, Driver& api) {
  struct Required {
    const char* symbol;
    bool bound;
  };
  const Required required[] = {
      {"cuInit", bind(library, "cuInit", api.init)},
      {"cuGetErrorName", bind(library, "cuGetErrorName", api.get_error_name)},
      {"cuGetErrorString", bind(library, "cuGetErrorString", api.get_error_string)},
      {"cuDeviceGetCount", bind(library, "cuDeviceGetCount", api.device_get_count)},
      {"cuDeviceGet", bind(library, "cuDeviceGet", api.device_get)},
      {"cuDeviceGetAttribute", bind(library, "cuDeviceGetAttribute", api.device_get_attribute)},
      {"cuDevicePrimaryCtxGetState",
       bind(library, "cuDevicePrimaryCtxGetState", api.primary_ctx_get_state)},
      {"cuDevicePrimaryCtxRetain",
       bind(library, "cuDevicePrimaryCtxRetain", api.primary_ctx_retain)},
      {"cuDevicePrimaryCtxRelease_v2",
       bind(library, "cuDevicePrimaryCtxRelease_v2", api.primary_ctx_release)},
      {"cuCtxPushCurrent_v2", bind(library, "cuCtxPushCurrent_v2", api.ctx_push_current)},
      {"cuCtxPopCurrent_v2", bind(library, "cuCtxPopCurrent_v2", api.ctx_pop_current)},
      {"cuCtxGetDevice", bind(library, "cuCtxGetDevice", api.ctx_get_device)},
      {"cuStreamGetCtx", bind(library, "cuStreamGetCtx", api.stream_get_ctx)},
      {"cuStreamIsCapturing", bind(library, "cuStreamIsCapturing", api.stream_is_capturing)},
      {"cuThreadExchangeStreamCaptureMode",
       bind(library, "cuThreadExchangeStreamCaptureMode", api.thread_exchange_stream_capture_mode)},
      {"cuModuleLoadData", bind(library, "cuModuleLoadData", api.module_load_data)},
      {"cuModuleUnload", bind(library, "cuModuleUnload", api.module_unload)},
      {"cuModuleGetFunction", bind(library, "cuModuleGetFunction", api.module_get_function)},
      {"cuFuncSetAttribute", bind(library, "cuFuncSetAttribute", api.func_set_attribute)},
      {"cuLaunchKernel", bind(library, "cuLaunchKernel", api.launch_kernel)},
  };
  for (const Required& r : required) {
    if (!r.bound) return r.symbol;
  }
  bind(library, "cuFuncGetParamInfo", api.func_get_param_info);
  bind(library, "cuLaunchKernelEx", api.launch_kernel_ex);
  bind(library, "cuTensorMapEncodeTiled", api.tensor_map_encode_tiled);
  return nullptr;
}

struct Loaded {
  std::unique_ptr<Driver> api;
  std::string why_not;
};

Loaded load() {
  Loaded out;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    out.why_not = std::string("no CUDA driver (libcuda.so.1): ") + dlerror();
    return out;
  }
  auto api = std::make_unique<Driver>();
  if (const char* missing = bind_all(library, *api)) {
    out.why_not = std::string("the CUDA driver is too old: it has no ") + missing;
    return out;
  }
  if (cu::Result status = api->init(0); status != cu::kSuccess) {
    out.why_not = "cuInit failed: " + api->describe(status);
    return out;
  }
  out.api = std::move(api);
  return out;
}

}  // namespace

std::string Driver::describe(cu::Result error) const {
  const char* name = nullptr;
  const char* text = nullptr;
  get_error_name(error, &name);
  get_error_string(error, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(error)) + " (" +
         (text ? text : "no description") + ")";
}

const Driver* driver(std::string* why_not) {
  static const Loaded loaded = load();
  if (why_not) *why_not = loaded.why_not;
  return loaded.api.get();
}

std::string default_arch() {
  const std::string fallback = "sm_90a";
  const Driver* api = driver();
  int count = 0;
  cu::Device device = 0;
  int major = 0, minor = 0;
  if (!api || api->device_get_count(&count) != cu::kSuccess || count == 0 ||
      api->device_get(&device, 0) != cu::kSuccess ||
      api->device_get_attribute(&major, cu::kDeviceComputeCapabilityMajor, device) !=
          cu::kSuccess ||
      api->device_get_attribute(&minor, cu::kDeviceComputeCapabilityMinor, device) !=
          cu::kSuccess) {
    return fallback;
  }
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  return major == 9 && minor == 0 ? arch + "a" : arch;
}

}  // namespace cutlax::jit
