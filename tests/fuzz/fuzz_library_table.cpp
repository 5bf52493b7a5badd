// Fuzzes the reading of a library's handler table (library_reader.hpp), what
// cutlax.load_library runs on the table of any shared library the user names.
// The input is a table: a header, then each entry's four strings, any of them
// null or unterminated, and its handler null or not. Whatever the input, the
// reader must neither crash nor read past a string's or the table's memory
// (ASan: every string is a heap block of its exact size, an unterminated one
// runs to the block's end), and a table it accepts must hold what Python
// relies on (the checks below trap otherwise).
//
// The input, little endian; bytes past its end read as zeros, strings as "":
//   byte 0         flags: 1 the table is null; 2 abi_version is bytes 2-5, 4
//                  xla_ffi_api_major is bytes 6-9 (else the right ones); 8
//                  size claims more than kMaxTableEntries; 16 entries is null
//   byte 1         the number of entries, modulo 32
//   bytes 2-13     int32 abi_version, xla_ffi_api_major, xla_ffi_api_minor
//   then for each entry
//     a byte       each field's kind, two bits each (target lowest, then
//                  platform, signature, types): 0 or 1 a string, 2 null, 3
//                  unterminated (kMaxTableStringBytes bytes: its string
//                  repeated, no NUL)
//     a byte       1: the handler is null; 2: an unterminated field is instead
//                  the longest string that reads (kMaxTableStringBytes - 1
//                  bytes, then its NUL)
//     four strings each up to the next NUL, one per field whatever its kind
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cutlax/library_reader.hpp>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"

namespace {

XLA_FFI_Error* dummy_handler(XLA_FFI_CallFrame*) { return nullptr; }

// An invariant of an accepted table; a crash the fuzzer reports when broken.
#define FUZZ_CHECK(condition)           \
  do {                                  \
    if (!(condition)) __builtin_trap(); \
  } while (0)

// The strings of one table, each a heap block of its exact size.
class Strings {
 public:
  const char* terminated(std::string_view text) {
    char* block = allocate(text.size() + 1);
    std::memcpy(block, text.data(), text.size());
    block[text.size()] = '\0';
    return block;
  }

  // `size` bytes of `text` repeated ("x" if empty, NULs never), and a NUL in
  // the last byte when `terminate`.
  const char* filled(std::string_view text, size_t size, bool terminate) {
    if (text.empty()) text = "x";
    char* block = allocate(size);
    for (size_t i = 0; i < size; ++i) block[i] = text[i % text.size()];
    if (terminate) block[size - 1] = '\0';
    return block;
  }

 private:
  char* allocate(size_t size) {
    blocks_.push_back(std::make_unique<char[]>(size));
    return blocks_.back().get();
  }
  std::vector<std::unique_ptr<char[]>> blocks_;
};

bool identifier(std::string_view text) {
  if (text.empty() || (text[0] >= '0' && text[0] <= '9')) return false;
  for (char c : text) {
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

bool printable(std::string_view text, bool whitespace) {
  for (char c : text) {
    const bool space = c == ' ' || (c >= '\t' && c <= '\r');
    if (!((c > ' ' && c < 0x7f) || (space && (whitespace || c == ' ')))) return false;
  }
  return true;
}

bool dtype(std::string_view name) {
  const std::string_view unsupported = cutlax::dtype_name(cutlax::ffi::DataType::INVALID);
  for (int d = 0; d < 256; ++d) {
    const std::string_view known = cutlax::dtype_name(static_cast<cutlax::ffi::DataType>(d));
    if (known != unsupported && known == name) return true;
  }
  return false;
}

bool dtype_spec(std::string_view spec) {
  if (spec == "any") return true;
  for (size_t start = 0;;) {
    const size_t end = spec.find('|', start);
    if (!dtype(spec.substr(start, end - start))) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// What Python relies on in an entry the reader accepted, `raw` the table's.
void check_entry(const cutlax::TableEntry& entry, const cutlax_handler_entry& raw) {
  FUZZ_CHECK(raw.target && raw.platform && raw.signature && raw.types);
  FUZZ_CHECK(entry.target == raw.target && identifier(entry.target));
  FUZZ_CHECK(entry.platform == raw.platform &&
             (entry.platform == "cpu" || entry.platform == "CUDA"));
  FUZZ_CHECK(entry.signature == raw.signature && printable(entry.signature, true));
  FUZZ_CHECK(entry.handler == raw.handler && entry.handler != nullptr);

  const cutlax::OpSignature& op = entry.op;
  FUZZ_CHECK(identifier(op.name));
  FUZZ_CHECK(op.args.size() == op.arg_dtypes.size() &&
             op.results.size() == op.result_dtypes.size());
  for (const std::string& name : op.args) FUZZ_CHECK(identifier(name));
  for (const std::string& name : op.results) FUZZ_CHECK(identifier(name));
  for (const std::string& spec : op.arg_dtypes) FUZZ_CHECK(dtype_spec(spec));
  for (const std::string& spec : op.result_dtypes) FUZZ_CHECK(dtype_spec(spec));
  std::set<std::string> attr_names;
  for (const auto& [name, type] : op.attrs) {
    FUZZ_CHECK(identifier(name) && attr_names.insert(name).second);
    FUZZ_CHECK(type == "float32" || type == "float64" || type == "int32" || type == "int64" ||
               type == "bool");  // the types cutlax.Op converts a Python value to
  }
  std::set<int> scratch;
  for (int index : op.scratch) {
    FUZZ_CHECK(index >= 0 && static_cast<size_t>(index) < op.results.size());
    FUZZ_CHECK(scratch.insert(index).second);
  }

  // Reading the same text again, and the canonical text of what was read,
  // gives the same signature.
  const auto again = cutlax::parse_signature(entry.target, raw.signature, raw.types);
  FUZZ_CHECK(again.ok() && again.value == op);
  std::vector<std::string> attrs, indices;
  for (const auto& [name, type] : op.attrs) attrs.push_back(name + ":" + type);
  for (int index : op.scratch) indices.push_back(std::to_string(index));
  const std::string signature =
      op.name + "(" + joined(op.args, ", ") + ") -> " + joined(op.results, ", ");
  const std::string types = "in:" + joined(op.arg_dtypes, ",") +
                            ";out:" + joined(op.result_dtypes, ",") +
                            ";attrs:" + joined(attrs, ",") + ";scratch:" + joined(indices, ",");
  if (!op.results.empty()) {  // "f(x) -> " does not read; "f(x) -> ," did, with no results
    const auto canonical = cutlax::parse_signature(entry.target, signature, types);
    FUZZ_CHECK(canonical.ok() && canonical.value == op);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cutlax::fuzz::FuzzInput input(data, size);
  const uint8_t flags = input.byte();
  const size_t count = input.byte() % 32;
  const int32_t abi = input.integer<int32_t>(), major = input.integer<int32_t>(),
                minor = input.integer<int32_t>();

  Strings strings;
  std::vector<cutlax_handler_entry> entries(count);
  for (cutlax_handler_entry& entry : entries) {
    const uint8_t kinds = input.byte(), options = input.byte();
    const char** fields[] = {&entry.target, &entry.platform, &entry.signature, &entry.types};
    for (int f = 0; f < 4; ++f) {
      const std::string_view text = input.string();
      switch ((kinds >> (2 * f)) & 3) {
        case 2:
          *fields[f] = nullptr;
          break;
        case 3:
          *fields[f] = strings.filled(text, cutlax::kMaxTableStringBytes, options & 2);
          break;
        default:
          *fields[f] = strings.terminated(text);
      }
    }
    entry.handler = options & 1 ? nullptr : &dummy_handler;
  }

  cutlax_handler_table table{flags & 2 ? abi : CUTLAX_LIBRARY_ABI_VERSION,
                             flags & 4 ? major : XLA_FFI_API_MAJOR, minor, entries.size(),
                             entries.data()};
  if (flags & 8) table.size = cutlax::kMaxTableEntries + 1 + static_cast<uint32_t>(minor);
  if (flags & 16) table.entries = nullptr;
  const cutlax::ReadTableResult read = cutlax::read_handler_table(flags & 1 ? nullptr : &table);

  if (!read.ok()) {
    // One line of printable ASCII, whatever the table holds (long strings are cut).
    FUZZ_CHECK(read.value.empty() && printable(read.error, false));
    FUZZ_CHECK(read.error.size() < 4 * cutlax::kMaxTableStringBytes);
    return 0;
  }
  FUZZ_CHECK(!(flags & 1) && table.abi_version == CUTLAX_LIBRARY_ABI_VERSION &&
             table.xla_ffi_api_major == XLA_FFI_API_MAJOR &&
             table.size <= cutlax::kMaxTableEntries);
  FUZZ_CHECK(read.value.size() == table.size);
  std::set<std::pair<std::string, std::string>> handlers;
  for (size_t i = 0; i < read.value.size(); ++i) {
    check_entry(read.value[i], table.entries[i]);
    FUZZ_CHECK(handlers.emplace(read.value[i].target, read.value[i].platform).second);
  }
  return 0;
}
