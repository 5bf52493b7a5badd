// The library table the op declarations fill: one entry per op and backend
// however many translation units include an op's header, the signature and
// types text Python reads, and the dtype checks the adapter runs first,
// naming the arguments as the signature does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "elementwise_cpu.hpp"
#include "fake_buffer.hpp"
#include "relu.hpp"  // also included by elementwise_test.cpp

// This test binary holds the table the headers register into.
CUTLAX_LIBRARY()

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

}  // namespace
}  // namespace cutlax
