// CUTLAX_PARAMS: a struct of static attributes, decoded from the FFI call by
// member name, for launchers that take them together (op.hpp):
//
//   struct ScaleParams { float alpha; int64_t mode; };
//   CUTLAX_PARAMS(ScaleParams, alpha, mode)      // at global scope
#pragma once

#include <initializer_list>
#include <string>

#include "cutlax/dtype.hpp"
#include "cutlax/ffi.hpp"

namespace cutlax {

// Field names and types of a CUTLAX_PARAMS struct; specialised by the macro.
template <class Params>
struct ParamsInfo;

namespace detail {

// "name:float32": one attribute as an op's signature describes it to Python.
template <class T>
std::string field(const char* name) {
  return std::string(name) + ":" + std::string(dtype_name(dtype_of<T>));
}

inline std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace detail
}  // namespace cutlax

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
