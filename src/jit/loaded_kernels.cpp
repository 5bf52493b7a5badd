#include "loaded_kernels.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "artifact.hpp"

namespace cutlax::jit {
namespace {

// CUDA grants every kernel 48 KiB of dynamic shared memory without asking.
constexpr int64_t kDefaultDynamicSharedLimit = 48 * 1024;

// An artifact's checksum identifies its contents; with the entry name it
// names one kernel.
struct KernelKey {
  uint64_t checksum;
  std::string entry;
};
struct KernelKeyView {
  uint64_t checksum;
  std::string_view entry;
};
struct KeyLess {
  using is_transparent = void;
  bool operator()(const KernelKey& a, const KernelKey& b) const {
    return a.checksum < b.checksum || (a.checksum == b.checksum && a.entry < b.entry);
  }
  bool operator()(const KernelKey& a, const KernelKeyView& b) const {
    return a.checksum < b.checksum ||
           (a.checksum == b.checksum && std::string_view(a.entry) < b.entry);
  }
  bool operator()(const KernelKeyView& a, const KernelKey& b) const {
    return a.checksum < b.checksum ||
           (a.checksum == b.checksum && a.entry < std::string_view(b.entry));
  }
};

// One element per context the kernel is loaded in; unique_ptr keeps the
// LoadedKernel addresses handed out stable.
using Loaded = std::vector<std::unique_ptr<LoadedKernel>>;

std::shared_mutex& registry_mutex() {
  static std::shared_mutex mutex;
  return mutex;
}
std::map<KernelKey, Loaded, KeyLess>& registry() {
  static std::map<KernelKey, Loaded, KeyLess> loaded;
  return loaded;
}

// Makes `context` current for the scope.
class ContextScope {
 public:
  ContextScope(const Driver& api, cu::Context context) : api_(api) {
    status_ = api_.ctx_push_current(context);
  }
  ~ContextScope() {
    if (status_ == cu::kSuccess) {
      cu::Context popped;
      api_.ctx_pop_current(&popped);
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  cu::Result status() const { return status_; }

 private:
  const Driver& api_;
  cu::Result status_;
};

// Lets this thread make calls a stream capture in progress forbids (module
// loading allocates device memory), for the scope.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const Driver& api) : api_(api) {
    api_.thread_exchange_stream_capture_mode(&mode_);
  }
  ~RelaxedCaptureMode() { api_.thread_exchange_stream_capture_mode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  const Driver& api_;
  int mode_ = cu::kStreamCaptureModeRelaxed;
};

std::string device_name(cu::Device device) { return "device " + std::to_string(device); }

// Raises the kernel's dynamic shared memory allowance to `shared_mem`.
std::string allow_shared_memory(const Driver& api, LoadedKernel& kernel, int64_t shared_mem) {
  if (shared_mem <= kernel.dynamic_shared_limit) return {};
  int optin = 0;
  api.device_get_attribute(&optin, cu::kDeviceMaxSharedMemoryPerBlockOptin, kernel.device);
  if (shared_mem > optin) {
    return "needs " + std::to_string(shared_mem) + " bytes of dynamic shared memory; " +
           device_name(kernel.device) + " allows at most " + std::to_string(optin) + " per block";
  }
  cu::Result status = api.func_set_attribute(kernel.function, cu::kFuncMaxDynamicSharedSizeBytes,
                                             static_cast<int>(shared_mem));
  if (status != cu::kSuccess) {
    return "cannot allow " + std::to_string(shared_mem) + " bytes of dynamic shared memory on " +
           device_name(kernel.device) + ": " + api.describe(status);
  }
  kernel.dynamic_shared_limit = shared_mem;
  return {};
}

// Loads `entry` from `cubin` into `context` (made current here).
std::string load(const Driver& api, cu::Context context, const std::vector<uint8_t>& cubin,
                 const ArtifactView& view, const std::string& entry, int64_t shared_mem,
                 std::unique_ptr<LoadedKernel>& out) {
  ContextScope scope(api, context);
  if (scope.status() != cu::kSuccess) {
    return "cannot make its CUDA context current: " + api.describe(scope.status());
  }
  auto kernel = std::make_unique<LoadedKernel>();
  kernel->context = context;
  kernel->dynamic_shared_limit = kDefaultDynamicSharedLimit;
  kernel->device = 0;
  api.ctx_get_device(&kernel->device);
  int multiprocessors = 0;
  api.device_get_attribute(&multiprocessors, cu::kDeviceMultiprocessorCount, kernel->device);
  kernel->multiprocessor_count = multiprocessors;
  cu::Module module = nullptr;
  cu::Result status = api.module_load_data(&module, cubin.data());
  if (status != cu::kSuccess) {
    int major = 0, minor = 0;
    api.device_get_attribute(&major, cu::kDeviceComputeCapabilityMajor, kernel->device);
    api.device_get_attribute(&minor, cu::kDeviceComputeCapabilityMinor, kernel->device);
    return "cannot load its CUBIN (compiled for " + std::string(view.arch) + ") on " +
           device_name(kernel->device) + " (compute capability " + std::to_string(major) + "." +
           std::to_string(minor) + "): " + api.describe(status);
  }
  status = api.module_get_function(&kernel->function, module, entry.c_str());
  if (status != cu::kSuccess) {
    api.module_unload(module);
    return "its CUBIN has no function " + entry + ": " + api.describe(status);
  }
  std::string problem = allow_shared_memory(api, *kernel, shared_mem);
  if (!problem.empty()) {
    api.module_unload(module);
    return problem;
  }
  kernel->param_sizes_known = api.func_get_param_info != nullptr;
  if (kernel->param_sizes_known) {
    size_t offset = 0, size = 0;
    while (api.func_get_param_info(kernel->function, kernel->param_sizes.size(), &offset, &size) ==
           cu::kSuccess) {
      kernel->param_sizes.push_back(size);
    }
  }
  out = std::move(kernel);
  return {};
}

// The decompressed CUBIN of a verified artifact.
std::string unpack(const uint8_t* artifact, size_t size, ArtifactView& view,
                   std::vector<uint8_t>& cubin) {
  std::string problem = parse_artifact(artifact, size, view);
  return problem.empty() ? decompress_cubin(view, cubin) : problem;
}

LoadedKernel* find_in(Loaded& loaded, cu::Context context) {
  for (const auto& kernel : loaded) {
    if (kernel->context == context) return kernel.get();
  }
  return nullptr;
}

}  // namespace

std::string load_in_active_contexts(const Driver& api, const uint8_t* artifact, size_t size,
                                    std::string_view entry, int64_t shared_mem) {
  ArtifactView view;
  std::vector<uint8_t> cubin;
  std::string problem = unpack(artifact, size, view, cubin);
  if (!problem.empty()) return problem;
  int count = 0;
  if (cu::Result status = api.device_get_count(&count); status != cu::kSuccess) {
    return "cannot count CUDA devices: " + api.describe(status);
  }
  std::unique_lock<std::shared_mutex> lock(registry_mutex());
  Loaded& loaded = registry()[KernelKey{view.checksum, std::string(entry)}];
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cu::Device device = 0;
    unsigned flags = 0;
    int active = 0;
    if (api.device_get(&device, ordinal) != cu::kSuccess ||
        api.primary_ctx_get_state(device, &flags, &active) != cu::kSuccess || !active) {
      continue;
    }
    cu::Context context = nullptr;
    if (api.primary_ctx_retain(&context, device) != cu::kSuccess) continue;
    // Active already, so releasing our reference keeps it alive for XLA.
    api.primary_ctx_release(device);
    if (LoadedKernel* kernel = find_in(loaded, context)) {
      problem = allow_shared_memory(api, *kernel, shared_mem);
    } else {
      std::unique_ptr<LoadedKernel> fresh;
      problem = load(api, context, cubin, view, std::string(entry), shared_mem, fresh);
      if (fresh) loaded.push_back(std::move(fresh));
    }
    if (!problem.empty()) return problem;
  }
  return {};
}

std::string find_loaded_kernel(const Driver& api, cu::Context context, const uint8_t* artifact,
                               size_t size, std::string_view entry, int64_t shared_mem,
                               const LoadedKernel*& kernel) {
  ArtifactView view;
  std::string problem = parse_artifact_header(artifact, size, view);
  if (!problem.empty()) return problem;
  const KernelKeyView key{view.checksum, entry};
  {
    std::shared_lock<std::shared_mutex> lock(registry_mutex());
    auto found = registry().find(key);
    if (found != registry().end()) {
      LoadedKernel* loaded = find_in(found->second, context);
      if (loaded && shared_mem <= loaded->dynamic_shared_limit) {
        kernel = loaded;
        return {};
      }
    }
  }
  std::unique_lock<std::shared_mutex> lock(registry_mutex());
  Loaded& loaded = registry()[KernelKey{view.checksum, std::string(entry)}];
  LoadedKernel* existing = find_in(loaded, context);
  if (existing) {
    problem = allow_shared_memory(api, *existing, shared_mem);
    kernel = existing;
    return problem;
  }
  std::vector<uint8_t> cubin;
  problem = unpack(artifact, size, view, cubin);
  if (!problem.empty()) return problem;
  RelaxedCaptureMode relaxed(api);
  std::unique_ptr<LoadedKernel> fresh;
  problem = load(api, context, cubin, view, std::string(entry), shared_mem, fresh);
  if (!problem.empty()) return problem;
  kernel = fresh.get();
  loaded.push_back(std::move(fresh));
  return {};
}

}  // namespace cutlax::jit
