// Element types: the C++ type behind each FFI DataType (one table, read both
// ways), its NumPy name, and a dispatch that turns a run-time DataType into a compile-time type
// once, so an op never writes its own switch statement.
#pragma once

#include <cutlass/numeric_types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cutlax/ffi.hpp"

namespace cutlax {

// The one table of element types: each FFI DataType and the C++ type behind
// it. Both directions below are read from it.
#define CUTLAX_ELEMENT_TYPES(X) \
  X(F32, float)                 \
  X(F64, double)                \
  X(F16, cutlass::half_t)       \
  X(BF16, cutlass::bfloat16_t)  \
  X(S32, int32_t)               \
  X(S64, int64_t)               \
  X(PRED, bool)

// element_t<D>: the C++ type of DataType D.
template <ffi::DataType D>
struct element;
// dtype_of<T>: the DataType of C++ type T (INVALID for any other type).
template <class T>
inline constexpr ffi::DataType dtype_of = ffi::DataType::INVALID;

#define CUTLAX_ELEMENT_TYPE_(D, T)   \
  template <>                        \
  struct element<ffi::DataType::D> { \
    using type = T;                  \
  };                                 \
  template <>                        \
  inline constexpr ffi::DataType dtype_of<T> = ffi::DataType::D;
CUTLAX_ELEMENT_TYPES(CUTLAX_ELEMENT_TYPE_)
#undef CUTLAX_ELEMENT_TYPE_

template <ffi::DataType D>
using element_t = typename element<D>::type;

// NumPy's spelling, so messages read the same as the Python side's.
inline std::string_view dtype_name(ffi::DataType dtype) {
  switch (dtype) {
    case ffi::DataType::PRED:
      return "bool";
    case ffi::DataType::S8:
      return "int8";
    case ffi::DataType::S16:
      return "int16";
    case ffi::DataType::S32:
      return "int32";
    case ffi::DataType::S64:
      return "int64";
    case ffi::DataType::U8:
      return "uint8";
    case ffi::DataType::U16:
      return "uint16";
    case ffi::DataType::U32:
      return "uint32";
    case ffi::DataType::U64:
      return "uint64";
    case ffi::DataType::F16:
      return "float16";
    case ffi::DataType::BF16:
      return "bfloat16";
    case ffi::DataType::F32:
      return "float32";
    case ffi::DataType::F64:
      return "float64";
    case ffi::DataType::C64:
      return "complex64";
    case ffi::DataType::C128:
      return "complex128";
    default:
      return "an unsupported type";
  }
}

// Carries a type through a generic lambda: `[](auto tag) { using T =
// typename decltype(tag)::type; }`.
template <class T>
struct type_tag {
  using type = T;
};

// A compile-time set of accepted element types.
template <ffi::DataType... Ds>
struct DataTypes {
  // "float32, float16" for messages; with separator "|", the form an op's
  // signature hands to Python.
  static std::string names(std::string_view separator = ", ") {
    std::string out;
    ((out += (out.empty() ? "" : std::string(separator)), out += dtype_name(Ds)), ...);
    return out;
  }
  static constexpr bool contains(ffi::DataType dtype) { return ((dtype == Ds) || ...); }
};

using FloatTypes = DataTypes<ffi::DataType::F32, ffi::DataType::F16, ffi::DataType::BF16>;
using Float32 = DataTypes<ffi::DataType::F32>;

inline ffi::Error unsupported_dtype(std::string_view arg, ffi::DataType dtype,
                                    const std::string& accepted) {
  return ffi::Error::InvalidArgument(std::string(arg) + " has dtype " +
                                     std::string(dtype_name(dtype)) +
                                     "; expected one of: " + accepted);
}

// Returns InvalidArgument naming `arg` unless `dtype` is one of Ds.
template <ffi::DataType... Ds>
ffi::Error expect_dtype(ffi::DataType dtype, std::string_view arg, DataTypes<Ds...> accepted) {
  if (accepted.contains(dtype)) return ffi::Error::Success();
  return unsupported_dtype(arg, dtype, accepted.names());
}

// Calls fn(type_tag<T>{}) for the T behind `dtype`, or returns
// InvalidArgument naming `arg` when `dtype` is not one of Ds.
template <ffi::DataType... Ds, class Fn>
ffi::Error dispatch(DataTypes<Ds...> accepted, ffi::DataType dtype, std::string_view arg, Fn&& fn) {
  std::optional<ffi::Error> result;
  (void)((dtype == Ds ? (result.emplace(fn(type_tag<element_t<Ds>>{})), true) : false) || ...);
  if (result) return std::move(*result);
  return unsupported_dtype(arg, dtype, accepted.names());
}

}  // namespace cutlax
