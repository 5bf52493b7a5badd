// Where a handler runs. An op is written once as a template over its execution
// context; each backend's translation unit instantiates it with its own:
//   Host  the CPU twin, on the thread XLA:CPU calls the handler from, with
//         XLA:CPU's intra-op thread pool for parallel_for;
//   Cuda  a CUDA launch on XLA's stream for this device.
// Both decode from the FFI execution context, so the handler's signature is
// the whole binding: no Ffi::Bind() chains in op code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>

#include "cutlax/ffi.hpp"
#include "cutlax/parallel.hpp"

namespace cutlax {

struct Host {
  static constexpr const char* platform = "cpu";
  // Absent in a Host{} made by hand (unit tests): everything runs inline.
  std::optional<ffi::ThreadPool> pool;

  // body(task) for every task in [0, tasks), spread over the pool and this
  // thread; returns when all have run (include/cutlax/parallel.hpp).
  template <class Body>
  void parallel_for(int64_t tasks, const Body& body) {
    cutlax::parallel_for(pool ? &*pool : nullptr, tasks, body);
  }
};

struct Cuda {
  static constexpr const char* platform = "CUDA";
  cudaStream_t stream;
};

}  // namespace cutlax

namespace xla::ffi {

template <>
struct CtxBinding<cutlax::Host> {
  using Ctx = cutlax::Host;
};
template <>
struct CtxDecoding<cutlax::Host> {
  using Type = cutlax::Host;
  static std::optional<Type> Decode(const XLA_FFI_Api* api, XLA_FFI_ExecutionContext* ctx,
                                    DiagnosticEngine& diagnostic) {
    return cutlax::Host{CtxDecoding<ThreadPool>::Decode(api, ctx, diagnostic)};
  }
};

template <>
struct CtxBinding<cutlax::Cuda> {
  using Ctx = cutlax::Cuda;
};
template <>
struct CtxDecoding<cutlax::Cuda> {
  using Type = cutlax::Cuda;
  static std::optional<Type> Decode(const XLA_FFI_Api* api, XLA_FFI_ExecutionContext* ctx,
                                    DiagnosticEngine& diagnostic) {
    auto stream = CtxDecoding<PlatformStream<cudaStream_t>>::Decode(api, ctx, diagnostic);
    if (!stream) return std::nullopt;
    return cutlax::Cuda{*stream};
  }
};

}  // namespace xla::ffi
