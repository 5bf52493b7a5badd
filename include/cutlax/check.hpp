// Argument checks for handlers. Each returns ffi::Error::InvalidArgument with a
// message that names the argument and says what was expected, so bad input
// surfaces in Python as an exception instead of an abort or garbage.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cutlax/dtype.hpp"
#include "cutlax/ffi.hpp"

namespace cutlax {

inline std::string shape_string(ffi::Span<const int64_t> dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += std::to_string(dims[i]);
    if (dims.size() == 1 || i + 1 < dims.size()) out += ",";
    if (i + 1 < dims.size()) out += " ";
  }
  return out + ")";
}

inline ffi::Error invalid_argument(std::string_view arg, std::string what) {
  return ffi::Error::InvalidArgument(std::string(arg) + " " + what);
}

inline ffi::Error expect_rank(const ffi::AnyBuffer& buf, std::string_view arg, size_t rank) {
  if (buf.dimensions().size() == rank) return ffi::Error::Success();
  return invalid_argument(arg, "must have rank " + std::to_string(rank) + ", got shape " +
                                   shape_string(buf.dimensions()));
}

inline ffi::Error expect_min_rank(const ffi::AnyBuffer& buf, std::string_view arg, size_t rank) {
  if (buf.dimensions().size() >= rank) return ffi::Error::Success();
  return invalid_argument(arg, "must have rank >= " + std::to_string(rank) + ", got shape " +
                                   shape_string(buf.dimensions()));
}

inline ffi::Error expect_same_dtype(const ffi::AnyBuffer& buf, std::string_view arg,
                                    const ffi::AnyBuffer& ref, std::string_view ref_arg) {
  if (buf.element_type() == ref.element_type()) return ffi::Error::Success();
  return invalid_argument(arg, "has dtype " + std::string(dtype_name(buf.element_type())) +
                                   " but " + std::string(ref_arg) + " has dtype " +
                                   std::string(dtype_name(ref.element_type())) +
                                   "; they must match");
}

inline ffi::Error expect_same_shape(const ffi::AnyBuffer& buf, std::string_view arg,
                                    const ffi::AnyBuffer& ref, std::string_view ref_arg) {
  auto a = buf.dimensions(), b = ref.dimensions();
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < a.size(); ++i) same = a[i] == b[i];
  if (same) return ffi::Error::Success();
  return invalid_argument(arg, "has shape " + shape_string(a) + " but " + std::string(ref_arg) +
                                   " has shape " + shape_string(b) + "; they must match");
}

// Checks dimension `axis` (negative counts from the end) of `buf`.
inline ffi::Error expect_dim(const ffi::AnyBuffer& buf, std::string_view arg, int64_t axis,
                             int64_t expected, std::string_view why) {
  auto dims = buf.dimensions();
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t i = axis < 0 ? axis + rank : axis;
  if (i >= 0 && i < rank && dims[i] == expected) return ffi::Error::Success();
  return invalid_argument(arg, "has shape " + shape_string(dims) + "; expected dimension " +
                                   std::to_string(axis) + " to be " + std::to_string(expected) +
                                   " (" + std::string(why) + ")");
}

inline ffi::Error expect_dtype_is(const ffi::AnyBuffer& buf, std::string_view arg,
                                  ffi::DataType expected) {
  if (buf.element_type() == expected) return ffi::Error::Success();
  return invalid_argument(arg, "has dtype " + std::string(dtype_name(buf.element_type())) +
                                   "; expected " + std::string(dtype_name(expected)));
}

// The bridge's shared check for "operand and result of the same array type".
inline ffi::Error expect_like(const ffi::AnyBuffer& buf, std::string_view arg,
                              const ffi::AnyBuffer& ref, std::string_view ref_arg) {
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(buf, arg, ref, ref_arg));
  return expect_same_shape(buf, arg, ref, ref_arg);
}

}  // namespace cutlax
