// Declaring an op: a launcher function plus one line that registers it.
//
//   struct ScaleParams { float alpha; };
//   CUTLAX_PARAMS(ScaleParams, alpha)            // static attributes, by name
//
//   void scale(cudaStream_t stream, cutlax::In<float> x, cutlax::Out<float> y, ScaleParams p) {
//     scale_kernel<<<blocks, threads, 0, stream>>>(x.flat(), y.flat(), p.alpha);
//   }
//   CUTLAX_OP("mylib_scale_v1", scale, "scale(x) -> y")
//
// The launcher's parameter list is the op's whole interface, in order:
//   first        where it runs: cudaStream_t (XLA's stream) or cutlax::Cuda for
//                a CUDA launcher, cutlax::Host for a CPU twin;
//   In<T>        an operand of element type T, any rank (Buffer<Types> for one
//                of several types, ffi::AnyBuffer for any, dispatched by the op);
//   Out<T>       a result (ffi::Result<ffi::AnyBuffer> for any type), and
//                Scratch<T> for working memory the Python op does not return;
//   a struct     the static attributes, declared with CUTLAX_PARAMS (or
//                single ffi::Attr<T, name> parameters).
// It returns void (a CUDA launch error is then reported from
// cudaGetLastError) or ffi::Error. Operand and result types are checked
// before the launcher runs, and the signature string names the op and its
// arguments for Python (cutlax.load_library): "name(arg, ...) -> result, ...".
//
// A CPU twin is the same op name and target with a cutlax::Host launcher. An
// op written once as a template over its execution context states both with
// one line in its header:
//
//   template <class Exec> ffi::Error relu(Exec exec, ...);
//   CUTLAX_OP_TEMPLATE("cutlax_relu_v1", relu, "relu(x) -> out")
//
// which registers relu<cutlax::Cuda> in the translation units nvcc compiles
// and relu<cutlax::Host> in the others, once per library however many of its
// translation units include the header.
#pragma once

#include <cuda_runtime_api.h>

#include <type_traits>

#include "cutlax/cuda.hpp"
#include "cutlax/exec.hpp"
#include "cutlax/ffi.hpp"
#include "cutlax/registry.hpp"
#include "cutlax/signature.hpp"

namespace cutlax::detail {

inline ffi::Error finished(Host) { return ffi::Error::Success(); }
inline ffi::Error finished(Cuda) { return launch_status("the kernel"); }

template <auto Fn, class Sig = decltype(Fn)>
struct Op;

// Adapts `R launcher(Exec, Params...)` to an XLA FFI handler.
template <auto Fn, class R, class Exec, class... Params>
struct Op<Fn, R (*)(Exec, Params...)> {
  static_assert(std::is_void_v<R> || std::is_same_v<R, ffi::Error>,
                "a cutlax launcher returns void or ffi::Error");
  using Context = std::conditional_t<std::is_same_v<Exec, cudaStream_t>, Cuda, Exec>;
  static_assert(std::is_same_v<Context, Cuda> || std::is_same_v<Context, Host>,
                "a launcher's first parameter is cudaStream_t, cutlax::Cuda or cutlax::Host");
  static constexpr const char* platform = Context::platform;

  static ffi::Error call(Context context, Params... params) {
    CUTLAX_RETURN_IF_ERROR(check_dtypes(arg_names(), params...));
    auto exec = [&] {
      if constexpr (std::is_same_v<Exec, cudaStream_t>) {
        return context.stream;
      } else {
        return context;
      }
    }();
    if constexpr (std::is_void_v<R>) {
      Fn(exec, params...);
      return finished(context);
    } else {
      return Fn(exec, params...);
    }
  }

  // The FFI handler. Every cutlax handler is marked command-buffer
  // compatible: a launcher must not allocate, synchronise with the host or
  // load modules, so XLA may capture it into a CUDA graph.
  static XLA_FFI_Error* handler(XLA_FFI_CallFrame* call_frame) {
    static auto* bound = ffi::Ffi::BindTo(&call, {ffi::Traits::kCmdBufferCompatible}).release();
    return bound->Call(call_frame);
  }

  static const char* types() {
    static const std::string text = signature_types<Params...>();
    return text.c_str();
  }

  // Set once, at registration, before XLA can call the handler.
  static ArgNames& arg_names() {
    static ArgNames names;
    return names;
  }

  static HandlerRegistrar registrar(const char* target, const char* signature) {
    arg_names() = ArgNames(signature);
    return HandlerRegistrar(target, platform, signature, types(), &handler);
  }
};

}  // namespace cutlax::detail

// Registers launcher FN as FFI target TARGET on the platform its first
// parameter names, with SIGNATURE ("name(arg, ...) -> result, ...") for
// Python.
#define CUTLAX_OP(TARGET, FN, SIGNATURE)                                        \
  namespace {                                                                   \
  const ::cutlax::HandlerRegistrar CUTLAX_CONCAT(cutlax_registrar_, __LINE__) = \
      ::cutlax::detail::Op<&FN>::registrar(TARGET, SIGNATURE);                  \
  }

// The backend of this translation unit, for CUTLAX_OP_TEMPLATE.
#if defined(__CUDACC__)
#define CUTLAX_THIS_BACKEND ::cutlax::Cuda
#define CUTLAX_THIS_BACKEND_NAME cuda
#else
#define CUTLAX_THIS_BACKEND ::cutlax::Host
#define CUTLAX_THIS_BACKEND_NAME host
#endif

// Registers FN<cutlax::Cuda> (nvcc) or FN<cutlax::Host> (any other compiler)
// as TARGET. State it in the op's header, in FN's namespace, after FN: the
// registrar is an inline variable, one per library and backend, however many
// translation units include the header.
#define CUTLAX_OP_TEMPLATE(TARGET, FN, SIGNATURE)                                         \
  inline const ::cutlax::HandlerRegistrar CUTLAX_CONCAT(                                  \
      cutlax_registrar_, CUTLAX_CONCAT(FN, CUTLAX_CONCAT(_, CUTLAX_THIS_BACKEND_NAME))) = \
      ::cutlax::detail::Op<&FN<CUTLAX_THIS_BACKEND>>::registrar(TARGET, SIGNATURE);
