// The library table the op declarations fill: one entry per op and backend
// however many translation units include an op's header, the signature and
// types text Python reads, and the dtype checks the adapter runs first,
// naming the arguments as the signature does; and the reader that checks a
// table before Python registers it (library_reader.hpp).
#include <gtest/gtest.h>

#include <cutlax/library_reader.hpp>
#include <string>
#include <vector>

#include "elementwise_cpu.hpp"
#include "fake_buffer.hpp"
#include "relu.hpp"  // also included by elementwise_test.cpp

// The table the headers register into is tests/handler_table.cpp's.

namespace cutlax {
namespace {

using testing::FakeBuffer;

inline constexpr char kScale[] = "scale";

ffi::Error scaled_with_scratch(Host, In<float> x, Out<float> y, Scratch<int32_t> work,
                               ffi::Attr<float, kScale> scale) {
  for (int64_t i = 0; i < x.size(); ++i) y.data()[i] = *scale * x.data()[i];
  work.data()[0] = 1;
  return ffi::Error::Success();
}
CUTLAX_OP("test_scaled_v1", scaled_with_scratch, "scaled(x) -> y, work")

std::vector<cutlax_handler_entry> entries(const std::string& target) {
  std::vector<cutlax_handler_entry> found;
  const cutlax_handler_table* table = cutlax_library_handlers();
  for (size_t i = 0; i < table->size; ++i) {
    if (table->entries[i].target == target) found.push_back(table->entries[i]);
  }
  return found;
}

TEST(Registry, AnOpTemplateRegistersOncePerBackend) {
  const auto relu = entries("cutlax_relu_v1");
  ASSERT_EQ(relu.size(), 1u);
  EXPECT_STREQ(relu[0].platform, "cpu");
  EXPECT_STREQ(relu[0].signature, "relu(x) -> out");
  EXPECT_STREQ(relu[0].types, "in:float32|float16|bfloat16;out:any;attrs:;scratch:");
}

TEST(Registry, TypesNameScratchResultsAndAttributes) {
  const auto scaled = entries("test_scaled_v1");
  ASSERT_EQ(scaled.size(), 1u);
  EXPECT_STREQ(scaled[0].types, "in:float32;out:float32,int32;attrs:scale:float32;scratch:1");
}

TEST(Registry, TheAdapterChecksDtypesBeforeTheLauncher) {
  FakeBuffer x(ffi::DataType::F32, {4}), y(ffi::DataType::F32, {4}), wrong(ffi::DataType::F16, {1});
  ffi::Error err = detail::Op<&scaled_with_scratch>::call(
      Host{}, x.any(), y.result(), wrong.result(), ffi::Attr<float, kScale>(2.0f));
  ASSERT_TRUE(err.failure());
  EXPECT_EQ(err.message(), "work has dtype float16; expected int32");

  ffi::Error bad_operand = detail::Op<&ops::relu<Host>>::call(
      Host{}, FakeBuffer(ffi::DataType::S32, {3}).any(), y.result());
  ASSERT_TRUE(bad_operand.failure());
  EXPECT_EQ(bad_operand.message(),
            "x has dtype int32; expected one of: float32, float16, bfloat16");
}

TEST(LibraryReader, TheRealTableReads) {
  const cutlax_handler_table* table = cutlax_library_handlers();
  const ReadTableResult read = read_handler_table(table);
  ASSERT_TRUE(read.ok()) << read.error;
  ASSERT_EQ(read.value.size(), table->size);
  const TableEntry* scaled = nullptr;
  for (size_t i = 0; i < table->size; ++i) {
    EXPECT_EQ(read.value[i].target, table->entries[i].target);
    EXPECT_EQ(read.value[i].handler, table->entries[i].handler);
    if (read.value[i].target == "test_scaled_v1") scaled = &read.value[i];
  }
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(scaled->platform, "cpu");
  EXPECT_EQ(scaled->signature, "scaled(x) -> y, work");
  const OpSignature expected{
      "scaled", {"x"}, {"y", "work"}, {"float32"}, {"float32", "int32"}, {{"scale", "float32"}},
      {1}};
  EXPECT_EQ(scaled->op, expected);
}

XLA_FFI_Error* no_op_handler(XLA_FFI_CallFrame*) { return nullptr; }

// The error reading a table of one good entry once `spoil(table, entry)` has
// changed it ("" when it reads).
template <class Spoil>
std::string read_error(Spoil spoil) {
  cutlax_handler_entry entry{"t_v1", "cpu", "scale(x) -> y",
                             "in:float32;out:float32;attrs:", &no_op_handler};
  cutlax_handler_table table{CUTLAX_LIBRARY_ABI_VERSION, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR, 1,
                             &entry};
  spoil(table, entry);
  return read_handler_table(&table, "'lib.so'").error;
}

TEST(LibraryReader, AGoodTableReads) {
  // XLA judges the minor version, when it registers the handler.
  EXPECT_EQ(read_error([](auto& table, auto&) { table.xla_ffi_api_minor = XLA_FFI_API_MINOR + 7; }),
            "");
  EXPECT_EQ(read_error([](auto& table, auto&) {
              table.size = 0;
              table.entries = nullptr;
            }),
            "");
}

TEST(LibraryReader, TableErrorsNameTheLibrary) {
  EXPECT_EQ(read_handler_table(nullptr, "'lib.so'").error,
            "'lib.so' has no handler table: its cutlax_library_handlers returned null");
  EXPECT_EQ(read_error([](auto& table, auto&) { table.abi_version = 7; }),
            "'lib.so' was built for cutlax library ABI 7; this cutlax reads ABI " +
                std::to_string(CUTLAX_LIBRARY_ABI_VERSION) + ": rebuild it");
  EXPECT_EQ(read_error([](auto& table, auto&) {
              table.xla_ffi_api_major = XLA_FFI_API_MAJOR + 1;
              table.xla_ffi_api_minor = 0;
            }),
            "'lib.so' was built for XLA FFI API " + std::to_string(XLA_FFI_API_MAJOR + 1) +
                ".0; this cutlax uses API " + std::to_string(XLA_FFI_API_MAJOR) + "." +
                std::to_string(XLA_FFI_API_MINOR) +
                " and the major versions must match: rebuild it");
  // Never read: the size is refused first.
  EXPECT_EQ(read_error([](auto& table, auto&) { table.size = kMaxTableEntries + 1; }),
            "'lib.so' has a table of 65537 entries; a table holds at most 65536");
  EXPECT_EQ(read_error([](auto& table, auto&) { table.entries = nullptr; }),
            "'lib.so' has a table of 1 entries at a null address");
}

TEST(LibraryReader, EntryErrorsNameTheTarget) {
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.target = nullptr; }),
            "'lib.so', table entry 0: its target is null");
  std::vector<char> unterminated(kMaxTableStringBytes, 'a');  // no NUL within reach
  EXPECT_EQ(read_error([&](auto&, auto& entry) { entry.target = unterminated.data(); }),
            "'lib.so', table entry 0: its target is too long or not terminated (no NUL in its "
            "first 4096 bytes)");
  unterminated.back() = '\0';  // the longest string that reads
  EXPECT_EQ(read_error([&](auto&, auto& entry) { entry.target = unterminated.data(); }), "");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.target = "t-v1\n"; }),
            "'lib.so', table entry 0: its target 't-v1\\n' is not an identifier");
  const std::string long_name(200, '-');  // cut in messages
  EXPECT_EQ(read_error([&](auto&, auto& entry) { entry.target = long_name.c_str(); }),
            "'lib.so', table entry 0: its target '" + long_name.substr(0, 160) +
                "'... (200 bytes) is not an identifier");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.platform = "gpu"; }),
            "t_v1: its platform 'gpu' is neither \"cpu\" nor \"CUDA\"");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.platform = nullptr; }),
            "t_v1: its platform is null");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.signature = nullptr; }),
            "t_v1: its signature is null");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.types = nullptr; }),
            "t_v1: its types text is null");
  EXPECT_EQ(read_error([](auto&, auto& entry) { entry.handler = nullptr; }),
            "t_v1: its cpu handler is null");
  EXPECT_EQ(read_error([](auto&, auto& entry) {
              entry.types = "in:float32;out:float32;attrs:mode:complex64";
            }),
            "t_v1: attributes of type complex64 are not supported");
  std::vector<cutlax_handler_entry> both;
  EXPECT_EQ(read_error([&](auto& table, auto& entry) {
              both = {entry, entry};
              table.size = 2;
              table.entries = both.data();
            }),
            "t_v1: the table has two cpu handlers for it");
}

TEST(LibraryReader, SignaturesRead) {
  const auto old =
      parse_signature("t_v1", "scale(x) -> y", "in:float32;out:float32;attrs:alpha:float32");
  ASSERT_TRUE(old.ok()) << old.error;  // no scratch field: a table from before scratch results
  EXPECT_EQ(
      old.value,
      (OpSignature{"scale", {"x"}, {"y"}, {"float32"}, {"float32"}, {{"alpha", "float32"}}, {}}));
  const auto spaced =
      parse_signature("t_v1", "  f ( a , b,, ) ->  c, d  \n",
                      "scratch:1;attrs:n:int64, on:bool;out:any,int32;in:float32|float16,any");
  ASSERT_TRUE(spaced.ok()) << spaced.error;
  EXPECT_EQ(spaced.value, (OpSignature{"f",
                                       {"a", "b"},
                                       {"c", "d"},
                                       {"float32|float16", "any"},
                                       {"any", "int32"},
                                       {{"n", "int64"}, {"on", "bool"}},
                                       {1}}));
  const auto none = parse_signature("t_v1", "f() -> y", "in:;out:uint8;attrs:;scratch:");
  ASSERT_TRUE(none.ok()) << none.error;
  EXPECT_TRUE(none.value.args.empty());
}

struct BadSignature {
  const char* signature;
  const char* types;
  const char* error;
};

class LibraryReaderErrors : public ::testing::TestWithParam<BadSignature> {};

TEST_P(LibraryReaderErrors, SaySo) {
  const BadSignature& bad = GetParam();
  EXPECT_EQ(parse_signature("t_v1", bad.signature, bad.types).error, bad.error);
}

#define CUTLAX_UNREADABLE(SIGNATURE, TYPES)                        \
  {                                                                \
    SIGNATURE, TYPES,                                              \
        "t_v1: cannot read its signature '" SIGNATURE "' ('" TYPES \
        "'); expected \"name(arg, ...) -> result, ...\""           \
  }

const BadSignature kBadSignatures[] = {
    CUTLAX_UNREADABLE("relu x -> y", "in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("relu(x) y", "in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("relu(x) -> ", "in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("re lu(x) -> y", "in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("(x) -> y", "in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;out:any;attrs:;extra:1"),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;out:any"),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;in:any;out:any;attrs:"),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;out:any;attrs:;"),
    CUTLAX_UNREADABLE("relu(x) -> y", ""),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;out:any;attrs:alpha"),
    CUTLAX_UNREADABLE("relu(x) -> y", "in:any;out:any;attrs:alpha:float32:1"),
    {"f(x) -> y,\nz", "in:any;out:any,any;attrs:",
     "t_v1: cannot read its signature 'f(x) -> y,\\nz' ('in:any;out:any,any;attrs:'); "
     "expected \"name(arg, ...) -> result, ...\""},
    {"relu(x, y) -> z", "in:any;out:any;attrs:",
     "t_v1: its signature 'relu(x, y) -> z' names 2 arguments and 1 results, but "
     "its launcher takes 1 and 1"},
    {"1relu(x) -> y", "in:any;out:any;attrs:", "t_v1: its op name '1relu' is not an identifier"},
    {"relu(x y) -> z", "in:any;out:any;attrs:", "t_v1: its argument 'x y' is not an identifier"},
    {"relu(x) -> \xff", "in:any;out:any;attrs:", "t_v1: its result '\\xff' is not an identifier"},
    {"relu(x) -> y", "in:float33;out:any;attrs:",
     "t_v1: argument x has type 'float33', which is not a dtype name, \"any\" or a "
     "set of dtype names \"a|b\""},
    {"relu(x) -> y", "in:any;out:any|float32;attrs:",
     "t_v1: result y has type 'any|float32', which is not a dtype name, \"any\" or "
     "a set of dtype names \"a|b\""},
    {"relu(x) -> y", "in:float32|;out:any;attrs:",
     "t_v1: argument x has type 'float32|', which is not a dtype name, \"any\" or "
     "a set of dtype names \"a|b\""},
    {"relu(x) -> y", "in:any;out:any;attrs:mode:complex64,n:float16,m:int64",
     "t_v1: attributes of type complex64, float16 are not supported"},
    {"relu(x) -> y", "in:any;out:any;attrs:mode:an unsupported type",
     "t_v1: attributes of type an unsupported type are not supported"},
    {"relu(x) -> y", "in:any;out:any;attrs:my-mode:int32",
     "t_v1: its attribute 'my-mode' is not an identifier"},
    {"relu(x) -> y", "in:any;out:any;attrs:n:int32,n:int64",
     "t_v1: its attribute n is declared twice"},
    {"add(x, x) -> y", "in:any,any;out:any;attrs:", "t_v1: its argument x is named twice"},
    {"split(x) -> y, y", "in:any;out:any,any;attrs:", "t_v1: its result y is named twice"},
    {"scale(x) -> y", "in:any;out:any;attrs:x:float32",
     "t_v1: its attribute x has an argument's name"},
    {"relu(x) -> y, w", "in:any;out:any,any;attrs:;scratch:2",
     "t_v1: its scratch result 2 is not the index of one of its 2 results"},
    {"relu(x) -> y", "in:any;out:any;attrs:;scratch:-0",
     "t_v1: its scratch result -0 is not the index of one of its 1 results"},
    {"relu(x) -> y, w", "in:any;out:any,any;attrs:;scratch:1,01",
     "t_v1: its scratch result 01 is listed twice"}};

#undef CUTLAX_UNREADABLE

INSTANTIATE_TEST_SUITE_P(Messages, LibraryReaderErrors, ::testing::ValuesIn(kBadSignatures));

}  // namespace
}  // namespace cutlax
