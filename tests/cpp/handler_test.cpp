// Registered handlers called as XLA calls them: through the library table,
// with a call frame (fake_ffi.hpp), at the execute stage. This is the path
// the fuzzers and the GPU sanitizer driver take, so its fake runtime is
// itself tested here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fake_buffer.hpp"
#include "fake_ffi.hpp"

namespace cutlax {
namespace {

using testing::CallOutcome;
using testing::FakeBuffer;
using testing::FakeCall;
using testing::FakeExecutionContext;
using testing::FakeThreadPool;

XLA_FFI_Handler* cpu_handler(const char* target) {
  const cutlax_handler_entry* entry =
      testing::find_handler(*cutlax_library_handlers(), target, "cpu");
  return entry ? entry->handler : nullptr;
}

TEST(HandlerCall, SaxpyRunsOnAThreadPool) {
  constexpr int64_t n = 1 << 20;  // enough work for parallel_for to split
  FakeBuffer x(ffi::DataType::F32, {n}), y(ffi::DataType::F32, {n}), out(ffi::DataType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = float(i % 97);
    y.data<float>()[i] = 1.0f;
  }
  FakeCall call;
  call.arg(&x.raw);
  call.arg(&y.raw);
  call.ret(&out.raw);
  call.scalar_attr("alpha", XLA_FFI_DataType_F32, 2.0f);
  FakeThreadPool pool(3);
  FakeExecutionContext context{nullptr, &pool};
  ASSERT_NE(cpu_handler("cutlax_saxpy_v1"), nullptr);
  CallOutcome outcome = call.call(cpu_handler("cutlax_saxpy_v1"), context);
  ASSERT_TRUE(outcome.ok) << outcome.message;
  EXPECT_GT(pool.scheduled(), 0);  // the handler found the pool and split its work
  for (int64_t i = 0; i < n; i += 4099) EXPECT_EQ(out.data<float>()[i], 2.0f * float(i % 97) + 1);
}

TEST(HandlerCall, ValidationErrorsComeBackAsFfiErrors) {
  FakeBuffer x(ffi::DataType::F32, {8}), y(ffi::DataType::F32, {7}), out(ffi::DataType::F32, {8});
  FakeExecutionContext context;
  ASSERT_NE(cpu_handler("cutlax_saxpy_v1"), nullptr);
  FakeCall mismatched;
  mismatched.arg(&x.raw);
  mismatched.arg(&y.raw);
  mismatched.ret(&out.raw);
  mismatched.scalar_attr("alpha", XLA_FFI_DataType_F32, 1.0f);
  CallOutcome outcome = mismatched.call(cpu_handler("cutlax_saxpy_v1"), context);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.code, XLA_FFI_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(outcome.message, "y has shape (7,) but x has shape (8,); they must match");

  FakeCall no_alpha;  // the attribute missing: XLA's binding reports it
  no_alpha.arg(&x.raw);
  no_alpha.arg(&x.raw);
  no_alpha.ret(&out.raw);
  outcome = no_alpha.call(cpu_handler("cutlax_saxpy_v1"), context);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.code, XLA_FFI_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(outcome.message, "[execute] Wrong number of attributes: expected 1 but got 0");
}

}  // namespace
}  // namespace cutlax
