// Declaring an op: a launcher function plus one CUTLAX_OP line.
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
//   In<T>        an operand of element type T, any rank (ffi::AnyBuffer for
//                an operand of any type, dispatched by the op itself);
//   Out<T>       a result (ffi::Result<ffi::AnyBuffer> for any type);
//   a struct     the static attributes, declared with CUTLAX_PARAMS (or
//                single ffi::Attr<T, name> parameters).
// It returns void (a CUDA launch error is then reported from
// cudaGetLastError) or ffi::Error. Operand and result types are checked
// before the launcher runs, and the signature string names the op and its
// arguments for Python (cutlax.load_library): "name(arg, ...) -> result, ...".
// A CPU twin is the same op name and target with a cutlax::Host launcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "cutlax/check.hpp"
#include "cutlax/dtype.hpp"
#include "cutlax/exec.hpp"
#include "cutlax/registry.hpp"
#include "cutlax/tensor.hpp"

namespace cutlax {

// The FFI element type of a C++ type.
template <class T>
inline constexpr ffi::DataType dtype_of = ffi::DataType::INVALID;
template <>
inline constexpr ffi::DataType dtype_of<float> = ffi::DataType::F32;
template <>
inline constexpr ffi::DataType dtype_of<double> = ffi::DataType::F64;
template <>
inline constexpr ffi::DataType dtype_of<cutlass::half_t> = ffi::DataType::F16;
template <>
inline constexpr ffi::DataType dtype_of<cutlass::bfloat16_t> = ffi::DataType::BF16;
template <>
inline constexpr ffi::DataType dtype_of<int32_t> = ffi::DataType::S32;
template <>
inline constexpr ffi::DataType dtype_of<int64_t> = ffi::DataType::S64;
template <>
inline constexpr ffi::DataType dtype_of<bool> = ffi::DataType::PRED;

// An operand or result as a typed array: its dimensions and CuTe views of its
// memory. T is const for operands.
template <class T>
class TensorArg {
 public:
  explicit TensorArg(ffi::AnyBuffer buffer) : buffer_(buffer) {}
  T* data() const { return static_cast<T*>(buffer_.untyped_data()); }
  ffi::Span<const int64_t> dims() const { return buffer_.dimensions(); }
  int64_t rank() const { return static_cast<int64_t>(dims().size()); }
  // dim(-1) is the last axis.
  int64_t dim(int64_t axis) const { return dims()[axis < 0 ? axis + rank() : axis]; }
  int64_t size() const { return element_count(buffer_); }
  // The whole array as one flat run.
  Vector<T> flat() const { return view(vector_layout(size())); }
  // Rank >= 1: every leading axis folded into rows, the last axis the columns.
  Matrix<T> matrix() const { return view(matrix_layout(buffer_)); }
  // Any other CuTe layout over the same memory.
  template <class Layout>
  auto view(Layout layout) const {
    return cute::make_tensor(cute::make_gmem_ptr(data()), std::move(layout));
  }
  const ffi::AnyBuffer& buffer() const { return buffer_; }

 private:
  ffi::AnyBuffer buffer_;
};

template <class T>
struct In : TensorArg<const T> {
  In(ffi::AnyBuffer buffer) : TensorArg<const T>(buffer) {}  // NOLINT: decoded from the call
};

template <class T>
struct Out : TensorArg<T> {
  Out(ffi::Result<ffi::AnyBuffer> result) : TensorArg<T>(*result) {}  // NOLINT: as above
};

// Field names and types of a CUTLAX_PARAMS struct; specialised by the macro.
template <class Params>
struct ParamsInfo;

namespace detail {

template <class T>
std::string field(const char* name) {
  return std::string(name) + ":" + std::string(dtype_name(dtype_of<T>));
}

inline std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// How each launcher parameter appears to the caller: role 'i' (operand), 'o'
// (result) or 'a' (attributes), and its type description.
template <class P>
struct Param {
  static constexpr char role = 'a';
  static std::string describe() { return ParamsInfo<P>::fields(); }
};
template <class T>
struct Param<In<T>> {
  static constexpr char role = 'i';
  static std::string describe() { return std::string(dtype_name(dtype_of<T>)); }
};
template <>
struct Param<ffi::AnyBuffer> {
  static constexpr char role = 'i';
  static std::string describe() { return "any"; }
};
template <class T>
struct Param<Out<T>> {
  static constexpr char role = 'o';
  static std::string describe() { return std::string(dtype_name(dtype_of<T>)); }
};
template <>
struct Param<ffi::Result<ffi::AnyBuffer>> {
  static constexpr char role = 'o';
  static std::string describe() { return "any"; }
};
template <class T, const char* name>
struct Param<ffi::Attr<T, name>> {
  static constexpr char role = 'a';
  static std::string describe() { return field<T>(name); }
};

// Checks that a typed operand or result has its declared element type.
template <class P>
ffi::Error check_dtype(const P&, int, int) {
  return ffi::Error::Success();
}
template <class T>
ffi::Error check_dtype(const In<T>& arg, int index, int) {
  return expect_dtype_is(arg.buffer(), "argument " + std::to_string(index), dtype_of<T>);
}
template <class T>
ffi::Error check_dtype(const Out<T>& arg, int, int index) {
  return expect_dtype_is(arg.buffer(), "result " + std::to_string(index), dtype_of<T>);
}

inline ffi::Error finished(Host) { return ffi::Error::Success(); }
inline ffi::Error finished(Cuda) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string("launching the kernel: ") + cudaGetErrorName(err) + ": " +
                              cudaGetErrorString(err));
}

template <auto Fn, class Sig = decltype(Fn)>
struct Op;

// Adapts `R launcher(Exec, Params...)` to the FFI handler signature.
template <auto Fn, class R, class Exec, class... Params>
struct Op<Fn, R (*)(Exec, Params...)> {
  static_assert(std::is_void_v<R> || std::is_same_v<R, ffi::Error>,
                "a cutlax launcher returns void or ffi::Error");
  using Context = std::conditional_t<std::is_same_v<Exec, cudaStream_t>, Cuda, Exec>;
  static_assert(std::is_same_v<Context, Cuda> || std::is_same_v<Context, Host>,
                "a launcher's first parameter is cudaStream_t, cutlax::Cuda or cutlax::Host");
  static constexpr const char* platform = Context::platform;

  static ffi::Error call(Context context, Params... params) {
    int arg = 0, ret = 0;
    ffi::Error status = ffi::Error::Success();
    // In parameter order; stops at the first mismatch.
    ((status.success() ? (status = check_dtype(params, arg, ret), arg += Param<Params>::role == 'i',
                          ret += Param<Params>::role == 'o')
                       : 0),
     ...);
    CUTLAX_RETURN_IF_ERROR(std::move(status));
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

  // "in:<types>;out:<types>;attrs:<name:type,...>", read by cutlax/_library.py.
  static const char* types() {
    static const std::string text = [] {
      std::string in, out, attrs;
      auto add = [](std::string& list, const std::string& item) {
        if (!item.empty()) list += (list.empty() ? "" : ",") + item;
      };
      ((add(Param<Params>::role == 'i'   ? in
            : Param<Params>::role == 'o' ? out
                                         : attrs,
            Param<Params>::describe())),
       ...);
      return "in:" + in + ";out:" + out + ";attrs:" + attrs;
    }();
    return text.c_str();
  }
};

}  // namespace detail
}  // namespace cutlax

// In<T> and Out<T> bind as plain buffers and are built from the decoded ones.
namespace xla::ffi {
template <class T>
struct ArgBinding<cutlax::In<T>> {
  using Arg = AnyBuffer;
};
template <class T>
struct RetBinding<cutlax::Out<T>> {
  using Ret = AnyBuffer;
};
}  // namespace xla::ffi

// Registers launcher FN as FFI target TARGET on the platform its first
// parameter names, with SIGNATURE ("name(arg, ...) -> result, ...") for
// Python. Every cutlax handler is marked command-buffer compatible: a
// launcher must not allocate, synchronise with the host or load modules.
#define CUTLAX_OP(TARGET, FN, SIGNATURE)                                                          \
  namespace {                                                                                     \
  constexpr XLA_FFI_Handler* CUTLAX_CONCAT(cutlax_handler_,                                       \
                                           __LINE__) = +[](XLA_FFI_CallFrame* call_frame) {       \
    static auto* handler = ::xla::ffi::Ffi::BindTo(&::cutlax::detail::Op<&FN>::call,              \
                                                   {::xla::ffi::Traits::kCmdBufferCompatible})    \
                               .release();                                                        \
    return handler->Call(call_frame);                                                             \
  };                                                                                              \
  const ::cutlax::HandlerRegistrar CUTLAX_CONCAT(cutlax_registrar_, __LINE__){                    \
      TARGET, ::cutlax::detail::Op<&FN>::platform, SIGNATURE, ::cutlax::detail::Op<&FN>::types(), \
      CUTLAX_CONCAT(cutlax_handler_, __LINE__)};                                                  \
  }

#define CUTLAX_PARAM_MEMBER_(S, m) ::xla::ffi::StructMember<decltype(S::m)>(#m)
#define CUTLAX_PARAM_FIELD_(S, m) ::cutlax::detail::field<decltype(S::m)>(#m)
#define CUTLAX_FE_1(f, s, a) f(s, a)
#define CUTLAX_FE_2(f, s, a, ...) f(s, a), CUTLAX_FE_1(f, s, __VA_ARGS__)
#define CUTLAX_FE_3(f, s, a, ...) f(s, a), CUTLAX_FE_2(f, s, __VA_ARGS__)
#define CUTLAX_FE_4(f, s, a, ...) f(s, a), CUTLAX_FE_3(f, s, __VA_ARGS__)
#define CUTLAX_FE_5(f, s, a, ...) f(s, a), CUTLAX_FE_4(f, s, __VA_ARGS__)
#define CUTLAX_FE_6(f, s, a, ...) f(s, a), CUTLAX_FE_5(f, s, __VA_ARGS__)
#define CUTLAX_FE_7(f, s, a, ...) f(s, a), CUTLAX_FE_6(f, s, __VA_ARGS__)
#define CUTLAX_FE_8(f, s, a, ...) f(s, a), CUTLAX_FE_7(f, s, __VA_ARGS__)
#define CUTLAX_FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, NAME, ...) NAME
#define CUTLAX_FOR_EACH(f, s, ...)                                                             \
  CUTLAX_FE_PICK(__VA_ARGS__, CUTLAX_FE_8, CUTLAX_FE_7, CUTLAX_FE_6, CUTLAX_FE_5, CUTLAX_FE_4, \
                 CUTLAX_FE_3, CUTLAX_FE_2, CUTLAX_FE_1)                                        \
  (f, s, __VA_ARGS__)

// Declares STRUCT's members (up to 8: numbers or bool) as an op's static
// attributes, decoded by name; state it at global scope.
#define CUTLAX_PARAMS(STRUCT, ...)                                                      \
  XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(                                                \
      STRUCT, CUTLAX_FOR_EACH(CUTLAX_PARAM_MEMBER_, STRUCT, __VA_ARGS__));              \
  namespace cutlax {                                                                    \
  template <>                                                                           \
  struct ParamsInfo<STRUCT> {                                                           \
    static std::string fields() {                                                       \
      return detail::join({CUTLAX_FOR_EACH(CUTLAX_PARAM_FIELD_, STRUCT, __VA_ARGS__)}); \
    }                                                                                   \
  };                                                                                    \
  }
