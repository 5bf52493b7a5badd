// Fuzzes every CPU handler in the table through an FFI call frame, as XLA
// calls it (tests/cpp/fake_ffi.hpp): the handlers' checks of buffer counts,
// dtypes, shapes and attributes must turn any call XLA could make into
// either a result or an error, never a crash, an out-of-bounds access or
// undefined behaviour.
//
// The input, read front to back (bytes past the end read as 0):
//
//   handler   index into the CPU entries of the table and cutlax.jit's CPU
//             target, sorted by target name, modulo their count
//   flags     bit 0: as many operands as the op declares (else a count byte,
//             0-6); bit 1: the same for results; bit 2: the op's declared
//             attributes (each then preceded by a byte: < 0xe0 well typed,
//             0xe0-0xef left out, >= 0xf0 of another type)
//   [count]   operands, then results, when not declared
//   buffers   per operand then result: a dtype byte (< 0x80 picks among the
//             declared types, or for "any" the first operand's type, as an
//             op's results mostly have; else among all of XLA's), a rank
//             byte (0-4),
//             one byte per dimension (< 0xe0 the value; 0xe0-0xef repeats an
//             earlier dimension, so shapes that must agree can; >= 0xf0 is
//             2^20..2^35, for empty arrays with a huge other dimension)
//   [attrs]   the declared ones, when flag bit 2 is set
//   extra     a count byte, then per attribute: name byte (from the names the
//             built-in ops use), type byte (a scalar dtype or a string),
//             value (the type's width in bytes; a string: length byte, bytes)
//   contents  the remaining bytes fill the buffers in order, then zeros.
//
// Buffers hold exactly their element count times the dtype's width (ASan
// flags a read one past the end) and their total element count is bounded,
// so the gemm twins stay fast. No thread pool: calls run inline, one thread.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cutlax/cutlax.hpp"
#include "cutlax/library_reader.hpp"
#include "fake_ffi.hpp"
#include "fuzz_input.hpp"
#include "jit/handler.hpp"

namespace {

using cutlax::testing::CallOutcome;
using cutlax::testing::FakeCall;
using cutlax::testing::FakeExecutionContext;

// Every element type XLA_FFI_DataType names but INVALID: XLA hands a
// handler no other.
constexpr XLA_FFI_DataType kAllDtypes[] = {
    XLA_FFI_DataType_PRED,       XLA_FFI_DataType_S1,         XLA_FFI_DataType_S2,
    XLA_FFI_DataType_S4,         XLA_FFI_DataType_S8,         XLA_FFI_DataType_S16,
    XLA_FFI_DataType_S32,        XLA_FFI_DataType_S64,        XLA_FFI_DataType_U1,
    XLA_FFI_DataType_U2,         XLA_FFI_DataType_U4,         XLA_FFI_DataType_U8,
    XLA_FFI_DataType_U16,        XLA_FFI_DataType_U32,        XLA_FFI_DataType_U64,
    XLA_FFI_DataType_F16,        XLA_FFI_DataType_F32,        XLA_FFI_DataType_F64,
    XLA_FFI_DataType_BF16,       XLA_FFI_DataType_C64,        XLA_FFI_DataType_C128,
    XLA_FFI_DataType_TOKEN,      XLA_FFI_DataType_F8E5M2,     XLA_FFI_DataType_F8E3M4,
    XLA_FFI_DataType_F8E4M3,     XLA_FFI_DataType_F8E4M3FN,   XLA_FFI_DataType_F8E4M3B11FNUZ,
    XLA_FFI_DataType_F8E5M2FNUZ, XLA_FFI_DataType_F8E4M3FNUZ, XLA_FFI_DataType_F4E2M1FN,
    XLA_FFI_DataType_F8E8M0FNU,
};
constexpr size_t kDtypeCount = sizeof(kAllDtypes) / sizeof(kAllDtypes[0]);

// The element types a scalar attribute can have; kString stands for a string.
constexpr XLA_FFI_DataType kAttrDtypes[] = {
    XLA_FFI_DataType_PRED, XLA_FFI_DataType_S8,  XLA_FFI_DataType_S16,  XLA_FFI_DataType_S32,
    XLA_FFI_DataType_S64,  XLA_FFI_DataType_U8,  XLA_FFI_DataType_U16,  XLA_FFI_DataType_U32,
    XLA_FFI_DataType_U64,  XLA_FFI_DataType_F16, XLA_FFI_DataType_BF16, XLA_FFI_DataType_F32,
    XLA_FFI_DataType_F64,
};
constexpr size_t kAttrKinds = sizeof(kAttrDtypes) / sizeof(kAttrDtypes[0]) + 1;
constexpr size_t kString = kAttrKinds - 1;

constexpr int kMaxBuffers = 6;
constexpr int kMaxRank = 4;
// Elements in all of one call's buffers together.
constexpr int64_t kMaxElements = 4096;
// Product of a shape's nonzero dimensions: large enough for huge-but-empty
// arrays, small enough that no product of dimensions overflows int64
// (XLA's own element_count() multiplies them in order).
constexpr int64_t kMaxNonzeroProduct = int64_t{1} << 48;

size_t byte_width(XLA_FFI_DataType dtype) {
  return xla::ffi::ByteWidth(static_cast<xla::ffi::DataType>(dtype));
}

// An accepted type list of one operand or result: empty means any.
using TypeSet = std::vector<XLA_FFI_DataType>;

struct Attribute {
  std::string name;
  size_t kind;  // index into kAttrDtypes, or kString
};

// A CPU handler and what its table entry declares (the types text,
// "in:...;out:...;attrs:name:type,...;scratch:...").
struct Target {
  const char* name;
  XLA_FFI_Handler* handler;
  std::vector<TypeSet> in, out;
  std::vector<Attribute> attrs;
  bool typed;  // the declaration is the handler's real binding
};

// The dtype cutlax::dtype_name spells `name`, or INVALID.
XLA_FFI_DataType dtype_named(std::string_view name) {
  for (XLA_FFI_DataType dtype : kAllDtypes) {
    if (cutlax::dtype_name(static_cast<cutlax::ffi::DataType>(dtype)) == name) {
      return dtype;
    }
  }
  return XLA_FFI_DataType_INVALID;
}

size_t attr_kind_named(std::string_view name) {
  const XLA_FFI_DataType dtype = dtype_named(name);
  for (size_t kind = 0; kind + 1 < kAttrKinds; ++kind) {
    if (kAttrDtypes[kind] == dtype) return kind;
  }
  return kString;  // std::string_view attributes describe as no dtype
}

// The dtypes a types-text entry accepts: "float32|bfloat16", or none (no
// constraint) for "any".
TypeSet dtypes_named(std::string_view names) {
  TypeSet set;
  for (size_t start = 0; start <= names.size();) {
    const size_t bar = std::min(names.find('|', start), names.size());
    if (XLA_FFI_DataType dtype = dtype_named(names.substr(start, bar - start));
        dtype != XLA_FFI_DataType_INVALID) {
      set.push_back(dtype);
    }
    start = bar + 1;
  }
  return set;
}

// The entry read by the library reader itself (include/cutlax/library_reader.hpp),
// so the harness sees each op as cutlax.load_library does.
Target describe(const cutlax_handler_entry& entry) {
  const auto op = cutlax::parse_signature(entry.target, entry.signature, entry.types);
  if (!op.ok()) {
    std::fprintf(stderr, "fuzz_handlers: the built-in table does not read: %s\n", op.error.c_str());
    __builtin_trap();
  }
  Target target{entry.target, entry.handler, {}, {}, {}, true};
  for (const std::string& names : op.value.arg_dtypes) target.in.push_back(dtypes_named(names));
  for (const std::string& names : op.value.result_dtypes) target.out.push_back(dtypes_named(names));
  for (const auto& [name, type] : op.value.attrs)
    target.attrs.push_back({name, attr_kind_named(type)});
  return target;
}

std::vector<Target> load_targets() {
  std::vector<Target> targets;
  const cutlax_handler_table* table = cutlax_library_handlers();
  for (size_t i = 0; i < table->size; ++i) {
    if (std::strcmp(table->entries[i].platform, "cpu") == 0) {
      targets.push_back(describe(table->entries[i]));
    }
  }
  // cutlax.jit's CPU target is registered by Python, not through the table:
  // any operands and attributes, always an error naming the kernel.
  targets.push_back(
      {cutlax::jit::kTargetName, cutlax::jit::cpu_handler(), {}, {}, {{"kernel", kString}}, false});
  // In name order, not registration (link) order, so that an input picks the
  // same handler in every build (tests/fuzz/make_seeds.py relies on it).
  std::sort(targets.begin(), targets.end(),
            [](const Target& a, const Target& b) { return std::strcmp(a.name, b.name) < 0; });
  return targets;
}

// The attribute names the built-in ops use, and one none does.
std::vector<std::string> attribute_names(const std::vector<Target>& targets) {
  std::set<std::string> names{"not_an_attribute"};
  for (const Target& target : targets) {
    for (const Attribute& attr : target.attrs) names.insert(attr.name);
  }
  return {names.begin(), names.end()};
}

struct Buffer {
  std::vector<int64_t> dims;
  // Exactly the array's bytes, so ASan flags a read one past the end; for
  // an empty array new[] still gives a distinct pointer, any access to
  // which ASan flags too.
  std::unique_ptr<uint8_t[]> storage;
  size_t bytes = 0;
  XLA_FFI_Buffer raw{};
};

// Adds one attribute of `kind` with a value from the input.
void add_attribute(FakeCall& call, const std::string& name, size_t kind,
                   cutlax::fuzz::FuzzInput& in) {
  if (kind == kString) {
    std::string value(in.byte() % 17, '\0');
    in.bytes(value.data(), value.size());
    call.string_attr(name, value);
    return;
  }
  const XLA_FFI_DataType dtype = kAttrDtypes[kind];
  switch (byte_width(dtype)) {
    case 1: {
      uint8_t value = in.byte();
      if (dtype == XLA_FFI_DataType_PRED) value &= 1;  // a bool is 0 or 1
      call.scalar_attr(name, dtype, value);
      break;
    }
    case 2: {
      uint16_t value;
      in.bytes(&value, sizeof value);
      call.scalar_attr(name, dtype, value);
      break;
    }
    case 4: {
      uint32_t value;
      in.bytes(&value, sizeof value);
      call.scalar_attr(name, dtype, value);
      break;
    }
    default: {
      uint64_t value;
      in.bytes(&value, sizeof value);
      call.scalar_attr(name, dtype, value);
      break;
    }
  }
}

bool in_set(const TypeSet& set, XLA_FFI_DataType dtype) {
  return set.empty() || std::find(set.begin(), set.end(), dtype) != set.end();
}

[[noreturn]] void violated(const Target& target, const char* what) {
  std::fprintf(stderr, "fuzz_handlers: %s: %s\n", target.name, what);
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Target> targets = load_targets();
  static const std::vector<std::string> names = attribute_names(targets);
  cutlax::fuzz::FuzzInput in(data, size);

  const Target& target = targets[in.byte() % targets.size()];
  const uint8_t flags = in.byte();
  const int args = (flags & 1) ? static_cast<int>(target.in.size()) : in.byte() % (kMaxBuffers + 1);
  const int rets =
      (flags & 2) ? static_cast<int>(target.out.size()) : in.byte() % (kMaxBuffers + 1);

  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<int64_t> earlier_dims;
  int64_t total_elements = 0;
  for (int i = 0; i < args + rets; ++i) {
    const bool is_arg = i < args;
    const size_t position = is_arg ? i : i - args;
    const std::vector<TypeSet>& declared = is_arg ? target.in : target.out;
    const TypeSet no_types;
    const TypeSet& types = position < declared.size() ? declared[position] : no_types;

    auto buffer = std::make_unique<Buffer>();
    const uint8_t dtype_byte = in.byte();
    XLA_FFI_DataType dtype = kAllDtypes[dtype_byte % kDtypeCount];
    if (dtype_byte < 0x80 && !types.empty()) {
      dtype = types[dtype_byte % types.size()];
    } else if (dtype_byte < 0x80 && !buffers.empty()) {
      dtype = buffers[0]->raw.dtype;
    }
    const int rank = in.byte() % (kMaxRank + 1);
    int64_t elements = 1, nonzero = 1;
    for (int axis = 0; axis < rank; ++axis) {
      const uint8_t b = in.byte();
      int64_t dim = b;
      if (b >= 0xf0) {
        dim = int64_t{1} << (20 + (b & 15));
      } else if (b >= 0xe0) {
        dim = earlier_dims.empty() ? 1 : earlier_dims[(b & 15) % earlier_dims.size()];
      }
      buffer->dims.push_back(dim);
      earlier_dims.push_back(dim);
      if (dim == 0) {
        elements = 0;
      } else if (__builtin_mul_overflow(nonzero, dim, &nonzero) || nonzero > kMaxNonzeroProduct) {
        return 0;
      }
    }
    if (elements != 0) elements = nonzero;
    total_elements += elements;
    if (total_elements > kMaxElements) return 0;  // too slow to be worth it

    buffer->bytes = static_cast<size_t>(elements) * byte_width(dtype);
    buffer->storage.reset(new uint8_t[buffer->bytes]);
    buffer->raw = {XLA_FFI_Buffer_STRUCT_SIZE,
                   nullptr,
                   dtype,
                   buffer->storage.get(),
                   static_cast<int64_t>(buffer->dims.size()),
                   buffer->dims.data()};
    buffers.push_back(std::move(buffer));
  }

  FakeCall call;
  std::set<std::string> used;  // an XLA attribute dictionary has unique names
  if (flags & 4) {
    for (const Attribute& attr : target.attrs) {
      const uint8_t mode = in.byte();
      if (mode >= 0xe0 && mode < 0xf0) continue;
      used.insert(attr.name);
      add_attribute(call, attr.name, mode >= 0xf0 ? (mode & 15) % kAttrKinds : attr.kind, in);
    }
  }
  const int extra = in.byte() % ((flags & 4) ? 4 : 7);
  for (int i = 0; i < extra; ++i) {
    const std::string& name = names[in.byte() % names.size()];
    const size_t kind = in.byte() % kAttrKinds;
    if (!used.insert(name).second) continue;
    add_attribute(call, name, kind, in);
  }

  // The contents: arbitrary bits (NaN, infinities, denormals) but for
  // PRED, whose bytes XLA keeps 0 or 1. Results too: XLA does not clear them.
  for (auto& buffer : buffers) {
    in.bytes(buffer->storage.get(), buffer->bytes);
    if (buffer->raw.dtype == XLA_FFI_DataType_PRED) {
      for (size_t b = 0; b < buffer->bytes; ++b) buffer->storage[b] &= 1;
    }
  }
  std::vector<std::vector<uint8_t>> inputs;
  for (int i = 0; i < args; ++i) {
    const Buffer& buffer = *buffers[i];
    inputs.emplace_back(buffer.storage.get(), buffer.storage.get() + buffer.bytes);
    call.arg(&buffers[i]->raw);
  }
  for (int i = args; i < args + rets; ++i) call.ret(&buffers[i]->raw);

  FakeExecutionContext context;  // no stream, no thread pool
  const CallOutcome outcome = call.call(target.handler, context);

  // Invariants, each cheap: an error says what is wrong; operands are
  // read-only; and a call that succeeded matched the op's declaration,
  // which the FFI binding and cutlax's dtype checks enforce.
  if (!outcome.ok && (outcome.code == XLA_FFI_Error_Code_OK || outcome.message.empty())) {
    violated(target, "an error without a code or a message");
  }
  for (int i = 0; i < args; ++i) {
    if (!inputs[i].empty() &&
        std::memcmp(inputs[i].data(), buffers[i]->storage.get(), inputs[i].size()) != 0) {
      violated(target, "the handler wrote to an operand");
    }
  }
  if (outcome.ok && target.typed) {
    if (static_cast<size_t>(args) != target.in.size() ||
        static_cast<size_t>(rets) != target.out.size()) {
      violated(target, "succeeded with more or fewer buffers than it declares");
    }
    for (int i = 0; i < args + rets; ++i) {
      const TypeSet& types = i < args ? target.in[i] : target.out[i - args];
      if (!in_set(types, buffers[i]->raw.dtype)) {
        violated(target, "succeeded with a buffer of an undeclared dtype");
      }
    }
  }
  return 0;
}
