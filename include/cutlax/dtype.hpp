// Element types: the C++ type behind each FFI DataType, its NumPy name, and a
// dispatch that turns a run-time DataType into a compile-time type once, so an
// op never writes its own switch statement.
#pragma once

#include <cutlass/numeric_types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cutlax/ffi.hpp"

namespace cutlax {

template <ffi::DataType D>
struct element;
template <>
struct element<ffi::DataType::F32> {
  using type = float;
};
template <>
struct element<ffi::DataType::F64> {
  using type = double;
};
template <>
struct element<ffi::DataType::F16> {
  using type = cutlass::half_t;
};
template <>
struct element<ffi::DataType::BF16> {
  using type = cutlass::bfloat16_t;
};
template <>
struct element<ffi::DataType::S32> {
  using type = int32_t;
};
template <>
struct element<ffi::DataType::S64> {
  using type = int64_t;
};
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
  static std::string names() {
    std::string out;
    ((out += (out.empty() ? "" : ", "), out += dtype_name(Ds)), ...);
    return out;
  }
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
  if (((dtype == Ds) || ...)) return ffi::Error::Success();
  return unsupported_dtype(arg, dtype, accepted.names());
}

// Calls fn(type_tag<T>{}) for the T behind `dtype`, or returns
// InvalidArgument naming `arg` when `dtype` is not one of Ds.
template <ffi::DataType... Ds, class Fn>
ffi::Error dispatch(DataTypes<Ds...> accepted, ffi::DataType dtype, std::string_view arg, Fn&& fn) {
  std::optional<ffi::Error> result;
  ((dtype == Ds ? (result.emplace(fn(type_tag<element_t<Ds>>{})), true) : false) || ...);
  if (result) return std::move(*result);
  return unsupported_dtype(arg, dtype, accepted.names());
}

}  // namespace cutlax
