#include "handler.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "driver.hpp"
#include "launch_program.hpp"
#include "loaded_kernels.hpp"
#include "tensor_param.hpp"
#include "tma.hpp"
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

// The kernel must take one cutlax::jit::Tensor per array, of the array's
// rank, then one TMA descriptor per request.
std::string check_parameters(const LoadedKernel& loaded, const OperandShape* shapes, size_t count,
                             size_t descriptors) {
  if (!loaded.param_sizes_known) return {};
  if (loaded.param_sizes.size() != count + descriptors) {
    return "the kernel takes " + std::to_string(loaded.param_sizes.size()) +
           " parameters but is called with " + std::to_string(count) +
           " arrays (inputs then outputs, one cutlax::jit::Tensor parameter each)" +
           (descriptors ? " and " + std::to_string(descriptors) + " TMA descriptors" : "");
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
  for (size_t d = 0; d < descriptors; ++d) {
    if (loaded.param_sizes[count + d] != kTmaDescriptorBytes) {
      return "parameter " + std::to_string(count + d) + " is " +
             std::to_string(loaded.param_sizes[count + d]) + " bytes, but tma[" +
             std::to_string(d) + "] is a cutlax::jit::TmaDescriptor of " +
             std::to_string(kTmaDescriptorBytes) + " bytes";
    }
  }
  return {};
}

// The driver's CUtensorMapDataType of an XLA element type, or -1.
int tma_data_type(ffi::DataType dtype) {
  switch (dtype) {
    case ffi::DataType::U8:
    case ffi::DataType::S8:
    case ffi::DataType::PRED:
      return 0;  // UINT8: TMA moves bytes; the sign is the kernel's business
    case ffi::DataType::U16:
    case ffi::DataType::S16:
      return 1;
    case ffi::DataType::U32:
      return 2;
    case ffi::DataType::S32:
      return 3;
    case ffi::DataType::U64:
      return 4;
    case ffi::DataType::S64:
      return 5;
    case ffi::DataType::F16:
      return 6;
    case ffi::DataType::F32:
      return 7;
    case ffi::DataType::F64:
      return 8;
    case ffi::DataType::BF16:
      return 9;
    default:
      return -1;
  }
}

bool is_floating_point(ffi::DataType dtype) {
  return dtype == ffi::DataType::F16 || dtype == ffi::DataType::BF16 ||
         dtype == ffi::DataType::F32 || dtype == ffi::DataType::F64;
}

std::string geometry_text(const LaunchGeometry& g, int64_t shared_mem) {
  auto dims = [](const std::array<int64_t, 3>& d) {
    return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
  };
  return "grid " + dims(g.grid) + ", block " + dims(g.block) +
         (g.clustered() ? ", cluster " + dims(g.cluster) : "") + ", " + std::to_string(shared_mem) +
         " bytes of shared memory";
}

ffi::Error execute(cu::Stream stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   ffi::Span<const uint8_t> cubin, std::string_view entry, std::string_view kernel,
                   ffi::Span<const int64_t> launch, int64_t shared_mem,
                   ffi::Span<const int64_t> tma) {
  if (ffi::Error error = check_shared_mem(kernel, shared_mem); error.failure()) return error;
  const size_t count = args.size() + rets.size();
  if (count > kMaxOperands) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                        "takes " + std::to_string(count) + " arrays; at most " +
                            std::to_string(kMaxOperands) + " are supported");
  }
  OperandShape shapes[kMaxOperands];
  void* data[kMaxOperands];
  ffi::DataType dtypes[kMaxOperands];
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
    dtypes[i] = buffer->element_type();
  }
  TmaRequest requests[kTmaMaxDescriptors];
  size_t descriptors = 0;
  if (std::string problem =
          parse_tma_requests(tma.begin(), tma.size(), count, requests, descriptors);
      !problem.empty()) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel, problem);
  }

  std::string why_not;
  const Driver* api = driver(&why_not);
  if (!api) return kernel_error(ffi::ErrorCode::kFailedPrecondition, kernel, why_not);
  cu::Context context = nullptr;
  if (cu::Result status = api->stream_get_ctx(stream, &context); status != cu::kSuccess) {
    return kernel_error(ffi::ErrorCode::kInternal, kernel,
                        "cannot find the stream's CUDA context: " + api->describe(status));
  }
  const LoadedKernel* loaded = nullptr;
  if (std::string problem =
          find_loaded_kernel(*api, context, cubin.begin(), cubin.size(), entry, shared_mem, loaded);
      !problem.empty()) {
    return kernel_error(ffi::ErrorCode::kInternal, kernel, problem);
  }

  const LaunchEvaluation evaluation = evaluate_launch_program(
      launch.begin(), launch.size(), shapes, count, LaunchDevice{loaded->multiprocessor_count});
  if (!evaluation.ok()) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                        "launch expression " + evaluation.error);
  }
  const LaunchGeometry& geometry = evaluation.geometry;
  if (geometry.empty()) return ffi::Error::Success();
  if (std::string problem = check_parameters(*loaded, shapes, count, descriptors);
      !problem.empty()) {
    return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel, problem);
  }

  TensorParam params[kMaxOperands];
  cu::TensorMap maps[kTmaMaxDescriptors];
  void* param_pointers[kMaxOperands + kTmaMaxDescriptors];
  for (size_t i = 0; i < count; ++i) {
    params[i] = make_tensor_param(data[i], shapes[i].dims, shapes[i].rank);
    param_pointers[i] = params[i].bytes;
  }
  for (size_t d = 0; d < descriptors; ++d) {
    const size_t operand = static_cast<size_t>(requests[d].operand);
    const TmaArray array{data[operand],
                         shapes[operand].dims,
                         shapes[operand].rank,
                         ffi::ByteWidth(dtypes[operand]),
                         tma_data_type(dtypes[operand]),
                         is_floating_point(dtypes[operand])};
    TmaEncoding encoding;
    std::string problem = encode_tma_request(requests[d], array, encoding);
    if (problem.empty() && !api->tensor_map_encode_tiled) {
      problem = "the CUDA driver is too old for TMA descriptors (it has no cuTensorMapEncodeTiled)";
    }
    if (!problem.empty()) {
      return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                          "tma[" + std::to_string(d) + "]: " + problem);
    }
    const cu::Result status = api->tensor_map_encode_tiled(
        &maps[d], encoding.data_type, encoding.rank, encoding.address, encoding.dims,
        encoding.strides, encoding.box, encoding.element_strides, encoding.interleave,
        encoding.swizzle, encoding.l2_promotion, encoding.oob_fill);
    if (status != cu::kSuccess) {
      return kernel_error(ffi::ErrorCode::kInvalidArgument, kernel,
                          "tma[" + std::to_string(d) + "] (array x" + std::to_string(operand) +
                              "): cuTensorMapEncodeTiled failed: " + api->describe(status));
    }
    param_pointers[count + d] = &maps[d];
  }

  cu::Result status = cu::kSuccess;
  const unsigned grid[3] = {static_cast<unsigned>(geometry.grid[0]),
                            static_cast<unsigned>(geometry.grid[1]),
                            static_cast<unsigned>(geometry.grid[2])};
  const unsigned block[3] = {static_cast<unsigned>(geometry.block[0]),
                             static_cast<unsigned>(geometry.block[1]),
                             static_cast<unsigned>(geometry.block[2])};
  if (geometry.clustered()) {
    if (!api->launch_kernel_ex) {
      return kernel_error(ffi::ErrorCode::kFailedPrecondition, kernel,
                          "the CUDA driver is too old for cluster launches (it has no "
                          "cuLaunchKernelEx)");
    }
    cu::LaunchAttribute cluster{};
    cluster.id = cu::kLaunchAttributeClusterDimension;
    cluster.value.cluster_dim = {static_cast<unsigned>(geometry.cluster[0]),
                                 static_cast<unsigned>(geometry.cluster[1]),
                                 static_cast<unsigned>(geometry.cluster[2])};
    const cu::LaunchConfig config{
        grid[0], grid[1],  grid[2], block[0], block[1], block[2], static_cast<unsigned>(shared_mem),
        stream,  &cluster, 1};
    status = api->launch_kernel_ex(&config, loaded->function, param_pointers, nullptr);
  } else {
    status = api->launch_kernel(loaded->function, grid[0], grid[1], grid[2], block[0], block[1],
                                block[2], static_cast<unsigned>(shared_mem), stream, param_pointers,
                                nullptr);
  }
  if (status != cu::kSuccess) {
    return kernel_error(
        ffi::ErrorCode::kInternal, kernel,
        "launch failed (" + geometry_text(geometry, shared_mem) + "): " + api->describe(status));
  }
  return ffi::Error::Success();
}

// Artifacts of cutlax_jit_v1 have no TMA descriptors.
ffi::Error execute_v1(cu::Stream stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      ffi::Span<const uint8_t> cubin, std::string_view entry,
                      std::string_view kernel, ffi::Span<const int64_t> launch,
                      int64_t shared_mem) {
  return execute(stream, args, rets, cubin, entry, kernel, launch, shared_mem, {});
}

ffi::Error instantiate_v2(ffi::Span<const uint8_t> cubin, std::string_view entry,
                          std::string_view kernel, ffi::Span<const int64_t> launch,
                          int64_t shared_mem, ffi::Span<const int64_t>) {
  return instantiate(cubin, entry, kernel, launch, shared_mem);
}

XLA_FFI_Error* cpu_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs().To(cpu).release();
  return bound->Call(frame);
}

// The attributes every version binds, in order; `More` adds the later ones.
template <class Binding>
auto common_attributes(Binding binding) {
  return std::move(binding)
      .template Attr<ffi::Span<const uint8_t>>("cubin")
      .template Attr<std::string_view>("entry")
      .template Attr<std::string_view>("kernel")
      .template Attr<ffi::Span<const int64_t>>("launch")
      .template Attr<int64_t>("shared_mem");
}

XLA_FFI_Error* instantiate_v1_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = common_attributes(ffi::Ffi::BindInstantiate()).To(instantiate).release();
  return bound->Call(frame);
}

XLA_FFI_Error* instantiate_v2_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound = common_attributes(ffi::Ffi::BindInstantiate())
                           .Attr<ffi::Span<const int64_t>>("tma")
                           .To(instantiate_v2)
                           .release();
  return bound->Call(frame);
}

// Command-buffer compatible: the launch allocates nothing, never waits for
// the device and (the module being loaded at instantiation) loads nothing;
// TMA descriptors are encoded on the host into the launch's parameters.
XLA_FFI_Error* execute_v1_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound =
      common_attributes(
          ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cu::Stream>>().RemainingArgs().RemainingRets())
          .To(execute_v1, {ffi::Traits::kCmdBufferCompatible})
          .release();
  return bound->Call(frame);
}

XLA_FFI_Error* execute_v2_entry(XLA_FFI_CallFrame* frame) {
  static auto* bound =
      common_attributes(
          ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cu::Stream>>().RemainingArgs().RemainingRets())
          .Attr<ffi::Span<const int64_t>>("tma")
          .To(execute, {ffi::Traits::kCmdBufferCompatible})
          .release();
  return bound->Call(frame);
}

}  // namespace

XLA_FFI_Handler* cpu_handler() { return &cpu_entry; }
XLA_FFI_Handler* cuda_instantiate_handler(int version) {
  return version == 1 ? &instantiate_v1_entry : &instantiate_v2_entry;
}
XLA_FFI_Handler* cuda_execute_handler(int version) {
  return version == 1 ? &execute_v1_entry : &execute_v2_entry;
}

}  // namespace cutlax::jit
