// Reading a library's handler table (registry.hpp) and checking every part of
// it, for cutlax.load_library (the extension binds it as
// _cutlax.read_library_table) and for the fuzz harness
// tests/fuzz/fuzz_library_table.cpp. The table comes from a shared library
// the user names, so nothing in it is trusted: the reader follows only the
// pointers the layout declares (the table, its entries, their strings), reads
// at most kMaxTableStringBytes of any string and at most kMaxTableEntries
// entries, and returns an error message rather than a partial table.
//
// What a well-formed table holds:
//   abi_version        CUTLAX_LIBRARY_ABI_VERSION;
//   xla_ffi_api_major  XLA_FFI_API_MAJOR. The minor version is not compared:
//                      XLA checks it when the handler is registered, against
//                      the running jaxlib (whose FFI is often newer than the
//                      headers this cutlax was built with, so comparing with
//                      ours would refuse good libraries), and refuses a
//                      handler built for a newer one;
//   size, entries      at most kMaxTableEntries entries, at a non-null address;
// and in each entry
//   target             an identifier, e.g. "mylib_scale_v1";
//   platform           "cpu" or "CUDA" (the spellings of exec.hpp);
//   signature          "name(arg, ...) -> result, ...", each name an identifier
//                      (an empty item of a list is skipped, as cutlax always has);
//   types              "in:<types>;out:<types>;attrs:<name:type,...>;scratch:<result indices>"
//                      as signature.hpp's signature_types writes it, the fields
//                      in any order, scratch optional (tables built before
//                      scratch results had none); an operand or result type is
//                      a dtype name, "any", or "a|b" for a set; an attribute
//                      type one of kAttributeTypes; a scratch index one of the
//                      results', each at most once;
//   handler            non-null;
// and no two entries share a target and platform.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cutlax/dtype.hpp"
#include "cutlax/registry.hpp"
#include "cutlax/text.hpp"

namespace cutlax {

// A table may hold at most this many entries.
inline constexpr size_t kMaxTableEntries = 65536;
// Every string of an entry ends (its NUL) within this many bytes; the reader
// reads no further.
inline constexpr size_t kMaxTableStringBytes = 4096;
// The attribute types an op may declare: the scalars XLA's FFI decodes as
// attributes that params.hpp's field<T> names (dtype_name of float, double,
// int32_t, int64_t and bool), and that cutlax.Op converts a Python value to.
inline constexpr std::string_view kAttributeTypes[] = {"float32", "float64", "int32", "int64",
                                                       "bool"};

// One op's interface as its table entry declares it: cutlax.Signature's fields.
struct OpSignature {
  std::string name;
  std::vector<std::string> args, results;
  // One per argument and result: a dtype name, "a|b" for a set, or "any".
  std::vector<std::string> arg_dtypes, result_dtypes;
  std::vector<std::pair<std::string, std::string>> attrs;  // (name, type), as declared
  std::vector<int> scratch;                                // indices into results, as listed

  bool operator==(const OpSignature& other) const {
    return name == other.name && args == other.args && results == other.results &&
           arg_dtypes == other.arg_dtypes && result_dtypes == other.result_dtypes &&
           attrs == other.attrs && scratch == other.scratch;
  }
};

// One checked entry of a table.
struct TableEntry {
  std::string target, platform;
  std::string signature;  // the text, as the table has it
  XLA_FFI_Handler* handler = nullptr;
  OpSignature op;
};

// A value, or why there is none.
template <class T>
struct Checked {
  T value{};
  std::string error;  // empty exactly when value holds the result
  bool ok() const { return error.empty(); }
};

using ReadTableResult = Checked<std::vector<TableEntry>>;

namespace detail::reader {

using text::is_space;
using text::split;
using text::strip;

// [A-Za-z_][A-Za-z0-9_]*, in ASCII whatever the locale.
inline bool is_identifier(std::string_view text) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (text.empty() || !letter(text.front())) return false;
  for (char c : text) {
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// A comma-separated list's items, stripped, empty ones dropped.
inline std::vector<std::string_view> items(std::string_view list) {
  std::vector<std::string_view> kept;
  for (std::string_view item : split(list, ',')) {
    if (!strip(item).empty()) kept.push_back(strip(item));
  }
  return kept;
}

// `text` as Python's repr writes an ASCII str; every other byte as \xNN, so
// a message is printable ASCII whatever the table holds. Past its first 160
// bytes a string is cut, "... (<size> bytes)" saying so.
inline std::string quoted(std::string_view text) {
  constexpr size_t kShown = 160;
  if (text.size() > kShown) {
    return quoted(text.substr(0, kShown)) + "... (" + std::to_string(text.size()) + " bytes)";
  }
  const bool doubled =
      text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = doubled ? '"' : '\'';
  std::string out(1, quote);
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out + quote;
}

// `text` itself when it is short printable ASCII, else quoted.
inline std::string shown(std::string_view text) {
  if (text.size() > 40) return quoted(text);
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) return quoted(text);
  }
  return std::string(text);
}

// Every name dtype_name gives a DataType (its NumPy spelling).
inline const std::set<std::string, std::less<>>& dtype_names() {
  static const std::set<std::string, std::less<>> names = [] {
    const std::string_view unsupported = dtype_name(ffi::DataType::INVALID);
    std::set<std::string, std::less<>> found;
    for (int d = 0; d < 256; ++d) {  // DataType's underlying type is uint8_t
      const std::string_view name = dtype_name(static_cast<ffi::DataType>(d));
      if (name != unsupported) found.emplace(name);
    }
    return found;
  }();
  return names;
}

// A dtype name, "any", or "a|b|...": dtype names joined by "|".
inline bool is_dtype_spec(std::string_view spec) {
  if (spec == "any") return true;
  for (std::string_view name : split(spec, '|')) {
    if (dtype_names().find(name) == dtype_names().end()) return false;
  }
  return true;
}

inline bool is_attribute_type(std::string_view type) {
  for (std::string_view known : kAttributeTypes) {
    if (type == known) return true;
  }
  return false;
}

// A decimal index below `limit`, or -1.
inline int index_below(std::string_view text, size_t limit) {
  if (text.empty() || text.size() > 9) return -1;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return static_cast<size_t>(value) < limit ? value : -1;
}

// One of an entry's strings, or why it cannot be read: at most
// kMaxTableStringBytes bytes of it are.
inline std::string read_string(const char* text, std::string_view* out) {
  if (text == nullptr) return "is null";
  const size_t length = strnlen(text, kMaxTableStringBytes);
  if (length == kMaxTableStringBytes) {
    return "is too long or not terminated (no NUL in its first " +
           std::to_string(kMaxTableStringBytes) + " bytes)";
  }
  *out = std::string_view(text, length);
  return {};
}

}  // namespace detail::reader

// Reads one entry's signature ("name(arg, ...) -> result, ...") and types
// ("in:...;out:...;attrs:name:type,...[;scratch:i,...]"); each error begins
// "<target>: ".
inline Checked<OpSignature> parse_signature(std::string_view target, std::string_view signature,
                                            std::string_view types) {
  using namespace detail::reader;
  Checked<OpSignature> parsed;
  auto fail = [&](const std::string& message) {
    return Checked<OpSignature>{{}, std::string(target) + ": " + message};
  };
  const std::string unreadable = "cannot read its signature " + quoted(signature) + " (" +
                                 quoted(types) + "); expected \"name(arg, ...) -> result, ...\"";

  // The signature: a name, the arguments between the first "(" and the
  // first ")" after it, "->", and one line of results.
  const size_t open = signature.find('(');
  const size_t close = signature.find(')', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return fail(unreadable);
  const std::string_view name = strip(signature.substr(0, open));
  std::string_view after = strip(signature.substr(close + 1));
  if (name.empty() || after.substr(0, 2) != "->") return fail(unreadable);
  for (char c : name) {
    if (is_space(c)) return fail(unreadable);
  }
  const std::string_view result_list = strip(after.substr(2));
  if (result_list.empty() || result_list.find('\n') != std::string_view::npos) {
    return fail(unreadable);
  }

  // The types: each field once, in any order; scratch may be absent.
  static constexpr std::string_view kFields[] = {"in", "out", "attrs", "scratch"};
  std::string_view fields[4];
  bool seen[4] = {};
  for (std::string_view part : split(types, ';')) {
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) return fail(unreadable);
    int field = 0;
    while (field < 4 && kFields[field] != part.substr(0, colon)) ++field;
    if (field == 4 || seen[field]) return fail(unreadable);
    seen[field] = true;
    fields[field] = part.substr(colon + 1);
  }
  if (!seen[0] || !seen[1] || !seen[2]) return fail(unreadable);

  const auto args = items(signature.substr(open + 1, close - open - 1));
  const auto results = items(result_list);
  const auto arg_dtypes = items(fields[0]), result_dtypes = items(fields[1]);
  if (args.size() != arg_dtypes.size() || results.size() != result_dtypes.size()) {
    return fail("its signature " + quoted(signature) + " names " + std::to_string(args.size()) +
                " arguments and " + std::to_string(results.size()) +
                " results, but its launcher takes " + std::to_string(arg_dtypes.size()) + " and " +
                std::to_string(result_dtypes.size()));
  }

  OpSignature& op = parsed.value;
  if (!is_identifier(name)) return fail("its op name " + quoted(name) + " is not an identifier");
  op.name = name;
  // Names, unique among the operands and among the results: Python passes
  // operands by name, and messages name both.
  auto names = [&](const std::vector<std::string_view>& list, const char* what,
                   std::vector<std::string>* out) {
    for (std::string_view item : list) {
      if (!is_identifier(item)) {
        return std::string("its ") + what + " " + quoted(item) + " is not an identifier";
      }
      if (std::find(out->begin(), out->end(), item) != out->end()) {
        return std::string("its ") + what + " " + std::string(item) + " is named twice";
      }
      out->emplace_back(item);
    }
    return std::string();
  };
  if (std::string bad = names(args, "argument", &op.args); !bad.empty()) return fail(bad);
  if (std::string bad = names(results, "result", &op.results); !bad.empty()) return fail(bad);
  auto dtypes = [&](const std::vector<std::string_view>& list, const std::vector<std::string>& of,
                    const char* what, std::vector<std::string>* out) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!is_dtype_spec(list[i])) {
        return std::string(what) + " " + of[i] + " has type " + quoted(list[i]) +
               ", which is not a dtype name, \"any\" or a set of dtype names \"a|b\"";
      }
      out->emplace_back(list[i]);
    }
    return std::string();
  };
  if (std::string bad = dtypes(arg_dtypes, op.args, "argument", &op.arg_dtypes); !bad.empty()) {
    return fail(bad);
  }
  if (std::string bad = dtypes(result_dtypes, op.results, "result", &op.result_dtypes);
      !bad.empty()) {
    return fail(bad);
  }

  std::set<std::string, std::less<>> unsupported;  // sorted, as the message lists them
  for (std::string_view attr : items(fields[2])) {
    const size_t colon = attr.find(':');
    if (colon == std::string_view::npos || attr.find(':', colon + 1) != std::string_view::npos) {
      return fail(unreadable);
    }
    const std::string_view attr_name = attr.substr(0, colon), type = attr.substr(colon + 1);
    if (!is_identifier(attr_name)) {
      return fail("its attribute " + quoted(attr_name) + " is not an identifier");
    }
    for (const auto& [declared, _] : op.attrs) {
      if (declared == attr_name) return fail("its attribute " + declared + " is declared twice");
    }
    if (std::find(op.args.begin(), op.args.end(), attr_name) != op.args.end()) {
      return fail("its attribute " + std::string(attr_name) + " has an argument's name");
    }
    if (!is_attribute_type(type)) unsupported.emplace(shown(type));
    op.attrs.emplace_back(attr_name, type);
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string& type : unsupported) list += (list.empty() ? "" : ", ") + type;
    return fail("attributes of type " + list + " are not supported");
  }

  for (std::string_view item : items(fields[3])) {
    const int index = index_below(item, op.results.size());
    if (index < 0) {
      return fail("its scratch result " + shown(item) + " is not the index of one of its " +
                  std::to_string(op.results.size()) + " results");
    }
    for (int listed : op.scratch) {
      if (listed == index) return fail("its scratch result " + shown(item) + " is listed twice");
    }
    op.scratch.push_back(index);
  }
  return parsed;
}

// Reads and checks a whole table; `library` names it in the errors about the
// table itself (load_library passes the file's path, quoted). An error about
// one entry begins "<target>: ", or "<library>, table entry <i>: " while its
// target is unread.
inline ReadTableResult read_handler_table(const cutlax_handler_table* table,
                                          std::string_view library = "the library") {
  using namespace detail::reader;
  ReadTableResult read;
  auto fail = [](const std::string& message) { return ReadTableResult{{}, message}; };
  const std::string lib(library);
  if (table == nullptr) {
    return fail(lib + " has no handler table: its cutlax_library_handlers returned null");
  }
  if (table->abi_version != CUTLAX_LIBRARY_ABI_VERSION) {  // then nothing else can be read
    return fail(lib + " was built for cutlax library ABI " + std::to_string(table->abi_version) +
                "; this cutlax reads ABI " + std::to_string(CUTLAX_LIBRARY_ABI_VERSION) +
                ": rebuild it");
  }
  if (table->xla_ffi_api_major != XLA_FFI_API_MAJOR) {
    return fail(lib + " was built for XLA FFI API " + std::to_string(table->xla_ffi_api_major) +
                "." + std::to_string(table->xla_ffi_api_minor) + "; this cutlax uses API " +
                std::to_string(XLA_FFI_API_MAJOR) + "." + std::to_string(XLA_FFI_API_MINOR) +
                " and the major versions must match: rebuild it");
  }
  if (table->size > kMaxTableEntries) {
    return fail(lib + " has a table of " + std::to_string(table->size) +
                " entries; a table holds at most " + std::to_string(kMaxTableEntries));
  }
  if (table->size > 0 && table->entries == nullptr) {
    return fail(lib + " has a table of " + std::to_string(table->size) +
                " entries at a null address");
  }

  std::set<std::pair<std::string, std::string>, std::less<>> handlers;  // (target, platform)
  read.value.reserve(table->size);
  for (size_t i = 0; i < table->size; ++i) {
    const cutlax_handler_entry& entry = table->entries[i];
    std::string_view target, platform, signature, types;
    if (std::string why = read_string(entry.target, &target); !why.empty()) {
      return fail(lib + ", table entry " + std::to_string(i) + ": its target " + why);
    }
    if (!is_identifier(target)) {
      return fail(lib + ", table entry " + std::to_string(i) + ": its target " + quoted(target) +
                  " is not an identifier");
    }
    const std::string who(target);
    if (std::string why = read_string(entry.platform, &platform); !why.empty()) {
      return fail(who + ": its platform " + why);
    }
    if (platform != "cpu" && platform != "CUDA") {
      return fail(who + ": its platform " + quoted(platform) + " is neither \"cpu\" nor \"CUDA\"");
    }
    if (std::string why = read_string(entry.signature, &signature); !why.empty()) {
      return fail(who + ": its signature " + why);
    }
    if (std::string why = read_string(entry.types, &types); !why.empty()) {
      return fail(who + ": its types text " + why);
    }
    if (entry.handler == nullptr) {
      return fail(who + ": its " + std::string(platform) + " handler is null");
    }
    if (!handlers.emplace(who, platform).second) {
      return fail(who + ": the table has two " + std::string(platform) + " handlers for it");
    }
    Checked<OpSignature> op = parse_signature(target, signature, types);
    if (!op.ok()) return fail(op.error);
    read.value.push_back(
        {who, std::string(platform), std::string(signature), entry.handler, std::move(op.value)});
  }
  return read;
}

}  // namespace cutlax
