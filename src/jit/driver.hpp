// The CUDA driver API, found at run time with dlopen("libcuda.so.1"): the
// extension never links libcuda, so it imports on machines without a GPU
// (and builds without nvcc: jit kernels need only the driver at run time).
#pragma once

#include <cstddef>
#include <string>

// The struct tag behind cudaStream_t and CUstream, so a stream from XLA
// converts without a cast.
struct CUstream_st;

namespace cutlax::jit {

// cuda.h's types and the few constants used, declared here so no CUDA
// header is needed to build.
namespace cu {
using Result = int;
using Device = int;
struct ContextHandle;
using Context = ContextHandle*;
struct ModuleHandle;
using Module = ModuleHandle*;
struct FunctionHandle;
using Function = FunctionHandle*;
using Stream = CUstream_st*;

inline constexpr Result kSuccess = 0;
inline constexpr int kDeviceMultiprocessorCount = 16;
inline constexpr int kDeviceComputeCapabilityMajor = 75;
inline constexpr int kDeviceComputeCapabilityMinor = 76;
inline constexpr int kDeviceMaxSharedMemoryPerBlockOptin = 97;
inline constexpr int kFuncMaxDynamicSharedSizeBytes = 8;
inline constexpr int kStreamCaptureStatusNone = 0;
inline constexpr int kStreamCaptureModeRelaxed = 2;
inline constexpr int kLaunchAttributeClusterDimension = 4;

// cuda.h's CUlaunchAttribute, CUlaunchConfig and CUtensorMap, byte for byte
// (tests/cpp/jit_test.cpp compares them with cuda.h where it is found).
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } cluster_dim;
  } value;
};
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  Stream stream;
  LaunchAttribute* attributes;
  unsigned attribute_count;
};
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};
}  // namespace cu

struct Driver {
  cu::Result (*init)(unsigned flags);
  cu::Result (*get_error_name)(cu::Result error, const char** name);
  cu::Result (*get_error_string)(cu::Result error, const char** text);
  cu::Result (*device_get_count)(int* count);
  cu::Result (*device_get)(cu::Device* device, int ordinal);
  cu::Result (*device_get_attribute)(int* value, int attribute, cu::Device device);
  cu::Result (*primary_ctx_get_state)(cu::Device device, unsigned* flags, int* active);
  cu::Result (*primary_ctx_retain)(cu::Context* context, cu::Device device);
  cu::Result (*primary_ctx_release)(cu::Device device);
  cu::Result (*ctx_push_current)(cu::Context context);
  cu::Result (*ctx_pop_current)(cu::Context* context);
  cu::Result (*ctx_get_device)(cu::Device* device);
  cu::Result (*stream_get_ctx)(cu::Stream stream, cu::Context* context);
  cu::Result (*stream_is_capturing)(cu::Stream stream, int* status);
  cu::Result (*thread_exchange_stream_capture_mode)(int* mode);
  cu::Result (*module_load_data)(cu::Module* module, const void* image);
  cu::Result (*module_unload)(cu::Module module);
  cu::Result (*module_get_function)(cu::Function* function, cu::Module module, const char* name);
  cu::Result (*func_set_attribute)(cu::Function function, int attribute, int value);
  // CUDA 12.4 and later; null with older drivers (then parameters go unchecked).
  cu::Result (*func_get_param_info)(cu::Function function, size_t index, size_t* offset,
                                    size_t* size);
  cu::Result (*launch_kernel)(cu::Function function, unsigned grid_x, unsigned grid_y,
                              unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                              unsigned shared_bytes, cu::Stream stream, void** params,
                              void** extra);
  // CUDA 12.0 and later; null with older drivers (then clusters and TMA
  // descriptors are refused with a message saying so).
  cu::Result (*launch_kernel_ex)(const cu::LaunchConfig* config, cu::Function function,
                                 void** params, void** extra);
  cu::Result (*tensor_map_encode_tiled)(cu::TensorMap* map, int data_type, unsigned rank,
                                        void* address, const unsigned long long* dims,
                                        const unsigned long long* strides, const unsigned* box,
                                        const unsigned* element_strides, int interleave,
                                        int swizzle, int l2_promotion, int oob_fill);

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::string describe(cu::Result error) const;
};

// The driver, loaded and initialised (cuInit) once per process; null when
// there is none, with the reason in `why_not` if given.
const Driver* driver(std::string* why_not = nullptr);

// The architecture of device 0 ("sm_90a" for compute capability 9.0, whose
// wgmma instructions need the architecture-specific target; "sm_XY" for
// others), or "sm_90a" without a driver or GPU.
std::string default_arch();

}  // namespace cutlax::jit
