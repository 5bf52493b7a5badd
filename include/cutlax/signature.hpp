// How each parameter of a launcher appears to the caller (op.hpp): its role
// (operand, result, scratch result or attributes), the element types it
// accepts, and the check of a call's buffers against them. The roles and
// types are written into the library's table as the op's "types" text, which
// cutlax/library.py reads, so Python checks a call before XLA sees it.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cutlax/check.hpp"
#include "cutlax/dtype.hpp"
#include "cutlax/ffi.hpp"
#include "cutlax/params.hpp"
#include "cutlax/tensor.hpp"
#include "cutlax/text.hpp"

namespace cutlax::detail {

enum class Role { kOperand, kResult, kScratch, kAttributes };

// Anything else is a CUTLAX_PARAMS struct of attributes.
template <class P>
struct Param {
  static constexpr Role role = Role::kAttributes;
  static std::string describe() { return ParamsInfo<P>::fields(); }
};
template <class T>
struct Param<In<T>> {
  static constexpr Role role = Role::kOperand;
  static std::string describe() { return std::string(dtype_name(dtype_of<T>)); }
};
template <class Types>
struct Param<Buffer<Types>> {
  static constexpr Role role = Role::kOperand;
  static std::string describe() { return Types::names("|"); }
};
template <>
struct Param<ffi::AnyBuffer> {
  static constexpr Role role = Role::kOperand;
  static std::string describe() { return "any"; }
};
template <class T>
struct Param<Out<T>> {
  static constexpr Role role = Role::kResult;
  static std::string describe() { return std::string(dtype_name(dtype_of<T>)); }
};
template <class T>
struct Param<Scratch<T>> {
  static constexpr Role role = Role::kScratch;
  static std::string describe() { return std::string(dtype_name(dtype_of<T>)); }
};
template <>
struct Param<ffi::Result<ffi::AnyBuffer>> {
  static constexpr Role role = Role::kResult;
  static std::string describe() { return "any"; }
};
template <class T, const char* name>
struct Param<ffi::Attr<T, name>> {
  static constexpr Role role = Role::kAttributes;
  static std::string describe() { return field<T>(name); }
};

// "in:<types>;out:<types>;attrs:<name:type,...>;scratch:<result indices>",
// in parameter order; a type is a dtype name, "a|b" for a set, or "any".
template <class... Params>
std::string signature_types() {
  std::string in, out, attrs, scratch;
  int results = 0;
  auto add = [](std::string& list, const std::string& item) {
    if (!item.empty()) list += (list.empty() ? "" : ",") + item;
  };
  auto describe = [&](Role role, const std::string& text) {
    if (role == Role::kOperand) return add(in, text);
    if (role == Role::kAttributes) return add(attrs, text);
    if (role == Role::kScratch) add(scratch, std::to_string(results));
    add(out, text);
    ++results;
  };
  (describe(Param<Params>::role, Param<Params>::describe()), ...);
  return "in:" + in + ";out:" + out + ";attrs:" + attrs + ";scratch:" + scratch;
}

// The operand and result names of a signature "name(a, b) -> c, d", for
// messages; a name missing from it reads "argument 2" or "result 1".
class ArgNames {
 public:
  ArgNames() = default;
  explicit ArgNames(std::string_view signature) {
    const size_t open = signature.find('('), close = signature.find(')', open);
    const size_t arrow = signature.find("->", close);
    if (open == std::string_view::npos || close == std::string_view::npos ||
        arrow == std::string_view::npos) {
      return;
    }
    operands_ = names(signature.substr(open + 1, close - open - 1));
    results_ = names(signature.substr(arrow + 2));
  }
  std::string operand(int i) const { return pick(operands_, i, "argument "); }
  std::string result(int i) const { return pick(results_, i, "result "); }

 private:
  static std::vector<std::string> names(std::string_view list) {
    std::vector<std::string> out;
    if (list.empty()) return out;
    for (std::string_view name : detail::text::split(list, ',')) {
      out.emplace_back(detail::text::strip(name));
    }
    return out;
  }
  static std::string pick(const std::vector<std::string>& names, int i, const char* fallback) {
    if (i < static_cast<int>(names.size()) && !names[i].empty()) return names[i];
    return fallback + std::to_string(i);
  }
  std::vector<std::string> operands_, results_;
};

// Checks that a typed operand or result has its declared element type;
// `operand` and `result` count the operands and results before it.
template <class P>
ffi::Error check_dtype(const ArgNames&, const P&, int, int) {
  return ffi::Error::Success();
}
template <class T>
ffi::Error check_dtype(const ArgNames& names, const In<T>& arg, int operand, int) {
  return expect_dtype_is(arg.buffer(), names.operand(operand), dtype_of<T>);
}
template <class Types>
ffi::Error check_dtype(const ArgNames& names, const Buffer<Types>& arg, int operand, int) {
  return expect_dtype(arg.element_type(), names.operand(operand), Types{});
}
template <class T>
ffi::Error check_dtype(const ArgNames& names, const Out<T>& arg, int, int result) {
  return expect_dtype_is(arg.buffer(), names.result(result), dtype_of<T>);
}
template <class T>
ffi::Error check_dtype(const ArgNames& names, const Scratch<T>& arg, int, int result) {
  return expect_dtype_is(arg.buffer(), names.result(result), dtype_of<T>);
}

// The buffers of one call checked in parameter order; the first mismatch
// is returned.
template <class... Params>
ffi::Error check_dtypes(const ArgNames& names, const Params&... params) {
  int operand = 0, result = 0;
  ffi::Error status = ffi::Error::Success();
  auto check = [&](const auto& param, Role role) {
    if (status.success()) status = check_dtype(names, param, operand, result);
    operand += role == Role::kOperand;
    result += role == Role::kResult || role == Role::kScratch;
  };
  (check(params, Param<Params>::role), ...);
  return status;
}

}  // namespace cutlax::detail
