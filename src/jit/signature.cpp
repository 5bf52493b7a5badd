#include "signature.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace cutlax::jit {
namespace {

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One type of the demangled text: `name<args...>` and whatever follows the
// arguments (" const*"), all of it in `text`.
struct TypeNode {
  std::string name;  // the text before the (last) template argument list
  std::vector<TypeNode> args;
  std::string text;
};

// A recursive-descent reader of demangled types. Parentheses (function
// types, expressions in template arguments) are skipped as balanced groups;
// anything unbalanced throws std::invalid_argument.
class TypeReader {
 public:
  explicit TypeReader(const std::string& s) : s_(s) {}

  // The comma-separated types of the whole string.
  std::vector<TypeNode> list() {
    std::vector<TypeNode> types;
    if (trim(s_).empty()) return types;
    for (;;) {
      types.push_back(type());
      if (i_ == s_.size()) return types;
      if (s_[i_] != ',') throw std::invalid_argument("unexpected character");
      ++i_;
    }
  }

 private:
  TypeNode type() {
    TypeNode node;
    const size_t start = i_;
    plain();
    while (i_ < s_.size() && s_[i_] == '<') {
      node.name = trim(s_.substr(start, i_ - start));
      node.args.clear();
      ++i_;
      for (;;) {
        skip_spaces();
        if (i_ < s_.size() && s_[i_] == '>') break;  // an empty argument list
        node.args.push_back(type());
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        break;
      }
      if (i_ == s_.size() || s_[i_] != '>') throw std::invalid_argument("unbalanced <>");
      ++i_;
      plain();  // " const*", or "::inner" before another argument list
    }
    node.text = trim(s_.substr(start, i_ - start));
    if (node.args.empty() && node.name.empty()) node.name = node.text;
    return node;
  }

  // Advances over text up to a '<', ',' or '>' outside parentheses.
  void plain() {
    int depth = 0;
    for (; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '(' || c == '[') {
        ++depth;
      } else if (c == ')' || c == ']') {
        if (--depth < 0) throw std::invalid_argument("unbalanced ()");
      } else if (depth == 0 && (c == '<' || c == ',' || c == '>')) {
        return;
      }
    }
    if (depth != 0) throw std::invalid_argument("unbalanced ()");
  }

  void skip_spaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }

  const std::string& s_;
  size_t i_ = 0;
};

bool is_int64(const TypeNode& node) { return node.text == "long" || node.text == "long long"; }

// cute::tuple<...>'s elements, or null when `node` is not a cute::tuple.
const std::vector<TypeNode>* tuple_elements(const TypeNode& node) {
  return node.name == "cute::tuple" ? &node.args : nullptr;
}

// Fills `p` when `node` is a cutlax::jit::Tensor<T, R>; false otherwise.
bool read_tensor(const TypeNode& node, KernelParameter& p) {
  if (node.name != "cute::Tensor" || node.args.size() != 2 || !ends_with(node.text, ">")) {
    return false;
  }
  const TypeNode& engine = node.args[0];
  if (engine.name != "cute::ViewEngine" || engine.args.size() != 1) return false;
  const TypeNode& pointer = engine.args[0];
  if (pointer.name != "cute::gmem_ptr" || pointer.args.size() != 1) return false;
  std::string element = pointer.args[0].text;
  if (!ends_with(element, "*")) return false;
  element = trim(element.substr(0, element.size() - 1));
  bool is_const = false;
  if (ends_with(element, " const")) {
    is_const = true;
    element = trim(element.substr(0, element.size() - 6));
  } else if (element.compare(0, 6, "const ") == 0) {
    is_const = true;
    element = trim(element.substr(6));
  }
  if (element.empty() || element.find('*') != std::string::npos) return false;

  const TypeNode& layout = node.args[1];
  if (layout.name != "cute::Layout" || layout.args.size() != 2) return false;
  const std::vector<TypeNode>* shape = tuple_elements(layout.args[0]);
  const std::vector<TypeNode>* stride = tuple_elements(layout.args[1]);
  if (!shape || !stride || shape->empty() || shape->size() != stride->size()) return false;
  int rank = 0;
  if (shape->size() == 1 && (*shape)[0].text == "cute::C<1>" && (*stride)[0].text == "cute::C<0>") {
    rank = 0;  // a 0-d array: one element
  } else {
    const size_t n = shape->size();
    for (size_t axis = 0; axis < n; ++axis) {
      if (!is_int64((*shape)[axis])) return false;
      const TypeNode& s = (*stride)[axis];
      if (axis + 1 < n ? !is_int64(s) : s.text != "cute::C<1>") return false;
    }
    rank = static_cast<int>(n);
  }
  p.kind = KernelParameter::Kind::kTensor;
  p.element = element;
  p.is_const = is_const;
  p.rank = rank;
  return true;
}

bool is_tma_descriptor(std::string type) {
  if (type.compare(0, 6, "const ") == 0) type = trim(type.substr(6));
  if (ends_with(type, " const")) type = trim(type.substr(0, type.size() - 6));
  return type == "cute::TmaDescriptor" || type == "cutlax::jit::TmaDescriptor" ||
         type == "CUtensorMap_st" || type == "CUtensorMap";
}

}  // namespace

std::string demangle(const std::string& mangled) {
  if (mangled.compare(0, 2, "_Z") != 0) return "";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : "";
}

KernelSignature parse_demangled_signature(const std::string& demangled) {
  KernelSignature signature;
  signature.demangled = demangled;
  // The parameter list: the parenthesized group that ends the text.
  if (demangled.empty() || demangled.back() != ')') return signature;
  size_t open = std::string::npos;
  int depth = 0;
  for (size_t i = demangled.size(); i-- > 0;) {
    if (demangled[i] == ')') ++depth;
    if (demangled[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) return signature;
  const std::string list = demangled.substr(open + 1, demangled.size() - open - 2);
  std::vector<TypeNode> types;
  try {
    types = TypeReader(list).list();
  } catch (const std::invalid_argument&) {
    return signature;
  }
  if (types.size() == 1 && types[0].text == "void") types.clear();  // f(void)
  for (const TypeNode& type : types) {
    KernelParameter p;
    p.type = type.text;
    if (!read_tensor(type, p) && is_tma_descriptor(type.text)) {
      p.kind = KernelParameter::Kind::kTmaDescriptor;
    }
    signature.parameters.push_back(std::move(p));
  }
  signature.known = true;
  return signature;
}

KernelSignature kernel_signature(const std::string& lowered_name) {
  const std::string demangled = demangle(lowered_name);
  if (demangled.empty()) return KernelSignature{};
  return parse_demangled_signature(demangled);
}

std::string describe(const KernelParameter& parameter) {
  switch (parameter.kind) {
    case KernelParameter::Kind::kTensor:
      return "Tensor<" + std::string(parameter.is_const ? "const " : "") + parameter.element +
             ", " + std::to_string(parameter.rank) + ">";
    case KernelParameter::Kind::kTmaDescriptor:
      return "TmaDescriptor";
    case KernelParameter::Kind::kOther:
      break;
  }
  return parameter.type;
}

}  // namespace cutlax::jit
