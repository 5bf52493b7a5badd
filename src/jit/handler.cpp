#include "handler.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "driver.hpp"
#include "launch_program.hpp"
#include "loaded_kernels.hpp"
#include "tensor_param.hpp"
#include "xla/ffi/api/ffi.h"

namespace cutlax::jit {
namespace {

namespace ffi = ::xla::ffi;

// More arrays than any kernel takes; the buffers' views live on the stack.
constexpr size_t kMaxOperands = 64;

ffi::Error kernel_error(ffi::ErrorCode code, std::string_view kernel, const std::string& what) {
  return ffi::Error(code, "cutlax.jit kernel " + std::string(kernel) + ": " + what);
}

ffi::Error cpu(ffi::RemainingArgs, ffi::RemainingRets, ffi::Dictionary attrs) {
  auto kernel = attrs.get<std::string_view>("kernel");
  return ffi::Error::InvalidArgument("cutlax.jit kernel " +
                                     std::string(kernel.has_value() ? *kernel : "(unnamed)") +
                                     " has no CPU version; pass cpu= to cutlax.jit.kernel");
}

ffi::Error check_shared_mem(std::string_view kernel, int64_t shared_mem) {
  if (shared_mem >= 0) return ffi::Error::Success();
  return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                      "shared_mem is " + std::to_string(shared_mem) + "; it must be >= 0");
}

ffi::Error instantiate(ffi::Span<const uint8_t> cubin, std::string_view entry,
                       std::string_view kernel, ffi::Span<const int64_t>, int64_t shared_mem) {
  if (ffi::Error error = check_shared_mem(kernel, shared_mem); error.failure()) return error;
  std::string why_not;
  const Driver* api = driver(&why_not);
  if (!api) return kernel_error(ffi::ErrorCode::kFailedPrecondition, kernel, why_not);
  std::string problem =
      load_in_active_contexts(*api, cubin.begin(), cubin.size(), entry, shared_mem);
  if (!problem.empty()) return kernel_error(ffi::ErrorCode::kInternal, kernel, problem);
  return ffi::Error::Success();
}

// The kernel must take one cutlax::jit::Tensor per array, of the array's rank.
std::string check_parameters(const LoadedKernel& loaded, const OperandShape* shapes, size_t count) {
  if (!loaded.param_sizes_known) return {};
  if (loaded.param_sizes.size() != count) {
    return "the kernel takes " + std::to_string(loaded.param_sizes.size()) +
           " parameters but is called with " + std::to_string(count) +
           " arrays (inputs then outputs, one cutlax::jit::Tensor parameter each)";
  }
  for (size_t i = 0; i < count; ++i) {
    if (loaded.param_sizes[i] != tensor_param_size(shapes[i].rank)) {
      return "parameter " + std::to_string(i) + " is " + std::to_string(loaded.param_sizes[i]) +
             " bytes, but array " + std::to_string(i) + " has rank " +
             std::to_string(shapes[i].rank) + ", whose cutlax::jit::Tensor<T, " +
             std::to_string(shapes[i].rank) + "> is " +
             std::to_string(tensor_param_size(shapes[i].rank)) + " bytes";
    }
  }
  return {};
}

ffi::Error execute(cu::Stream stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   ffi::Span<const uint8_t> cubin, std::string_view entry, std::string_view kernel,
                   ffi::Span<const int64_t> launch, int64_t shared_mem) {
  if (ffi::Error error = check_shared_mem(kernel, shared_mem); error.failure()) return error;
  const size_t count = args.size() + rets.size();
  if (count > kMaxOperands) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                        "takes " + std::to_string(count) + " arrays; at most " +
                            std::to_string(kMaxOperands) + " are supported");
  }
  OperandShape shapes[kMaxOperands];
  void* data[kMaxOperands];
  for (size_t i = 0; i < count; ++i) {
    std::optional<ffi::AnyBuffer> buffer;
    if (i < args.size()) {
      auto arg = args.get<ffi::AnyBuffer>(i);
      if (!arg.has_value()) return arg.error();
      buffer = *arg;
    } else {
      auto ret = rets.get<ffi::AnyBuffer>(i - args.size());
      if (!ret.has_value()) return ret.error();
      buffer = **ret;
    }
    auto dims = buffer->dimensions();
    if (dims.size() > kMaxRank) {
      return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                          "array " + std::to_string(i) + " has rank " +
                              std::to_string(dims.size()) + "; at most " +
                              std::to_string(kMaxRank) + " is supported");
    }
    shapes[i] = {dims.begin(), dims.size()};
    data[i] = buffer->untyped_data();
  }

  const LaunchEvaluation evaluation =
      evaluate_launch_program(launch.begin(), launch.size(), shapes, count);
  if (!evaluation.ok()) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                        "launch expression " + evaluation.error);
  }
  const LaunchGeometry& geometry = evaluation.geometry;
  if (geometry.empty()) return ffi::Error::Success();

  std::string why_not;
  const Driver* api = driver(&why_not);
  if (!api) return kernel_error(ffi::ErrorCode::kFailedPrecondition, kernel, why_not);
  cu::Context context = nullptr;
  if (cu::Result status = api->stream_get_ctx(stream, &context); status != cu::kSuccess) {
    return kernel_error(ffi::ErrorCode::kInternal, kernel,
                        "cannot find the stream's CUDA context: " + api->describe(status));
  }
  const LoadedKernel* loaded = nullptr;
  std::string problem =
      find_loaded_kernel(*api, context, cubin.begin(), cubin.size(), entry, shared_mem, loaded);
  if (problem.empty()) problem = check_parameters(*loaded, shapes, count);
  if (!problem.empty()) return kernel_error(ffi::ErrorCode::kInternal, kernel, problem);

  TensorParam params[kMaxOperands];
  void* param_pointers[kMaxOperands];
  for (size_t i = 0; i < count; ++i) {
    params[i] = make_tensor_param(data[i], shapes[i].dims, shapes[i].rank);
    param_pointers[i] = params[i].bytes;
  }
  const cu::Result status = api->launch_kernel(
      loaded->function, static_cast<unsigned>(geometry.grid[0]),
      static_cast<unsigned>(geometry.grid[1]), static_cast<unsigned>(geometry.grid[2]),
      static_cast<unsigned>(geometry.block[0]), static_cast<unsigned>(geometry.block[1]),
      static_cast<unsigned>(geometry.block[2]), static_cast<unsigned>(shared_mem), stream,
      param_pointers, nullptr);
  if (status != cu::kSuccess) {
    return kernel_error(
        ffi::ErrorCode::kInternal, kernel,
        "launch failed (grid " + std::to_string(geometry.grid[0]) + "x" +
            std::to_string(geometry.grid[1]) + "x" + std::to_string(geometry.grid[2]) + ", block " +
            std::to_string(geometry.block[0]) + "x" + std::to_string(geometry.block[1]) + "x" +
            std::to_string(geometry.block[2]) + ", " + std::to_string(shared_mem) +
            " bytes of shared memory): " + api->describe(status));
  }
  return ffi::Error::Success();
}

XLA_FFI_Error* cpu_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs().To(cpu).release();
  return bound->Call(frame);
}

XLA_FFI_Error* instantiate_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = ffi::Ffi::BindInstantiate()
                           .Attr<ffi::Span<const uint8_t>>("cubin")
                           .Attr<std::string_view>("entry")
                           .Attr<std::string_view>("kernel")
                           .Attr<ffi::Span<const int64_t>>("launch")
                           .Attr<int64_t>("shared_mem")
                           .To(instantiate)
                           .release();
  return bound->Call(frame);
}

// Command-buffer compatible: the launch allocates nothing, never waits for
// the device and (the module being loaded at instantiation) loads nothing.
XLA_FFI_Error* execute_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<cu::Stream>>()
                           .RemainingArgs()
                           .RemainingRets()
                           .Attr<ffi::Span<const uint8_t>>("cubin")
                           .Attr<std::string_view>("entry")
                           .Attr<std::string_view>("kernel")
                           .Attr<ffi::Span<const int64_t>>("launch")
                           .Attr<int64_t>("shared_mem")
                           .To(execute, {ffi::Traits::kCmdBufferCompatible})
                           .release();
  return bound->Call(frame);
}

}  // namespace

XLA_FFI_Handler* cpu_handler() { return &cpu_entry; }
XLA_FFI_Handler* cuda_instantiate_handler() { return &instantiate_entry; }
XLA_FFI_Handler* cuda_execute_handler() { return &execute_entry; }

}  // namespace cutlax::jit
