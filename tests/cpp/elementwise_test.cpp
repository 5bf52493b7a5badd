// The elementwise functors and CPU kernel shapes against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "bias_relu.hpp"
#include "elementwise_cpu.hpp"
#include "fake_buffer.hpp"
#include "relu.hpp"
#include "saxpy.hpp"
#include "vector_add.hpp"

namespace cutlax {
namespace {

using testing::FakeBuffer;

TEST(Relu, KeepsNanAndZeroesNegatives) {
  EXPECT_EQ(kernels::relu(-2.0f), 0.0f);
  EXPECT_EQ(kernels::relu(3.0f), 3.0f);
  EXPECT_TRUE(std::isnan(kernels::relu(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(kernels::relu(-std::numeric_limits<float>::infinity()), 0.0f);
}

// Widths that divide the run length, do not, and are smaller than it.
class BiasReluWidth : public ::testing::TestWithParam<int64_t> {};

TEST_P(BiasReluWidth, MatchesAPlainLoop) {
  // Through the op's handler body, so both functor variants (vector bias for
  // widths that are a multiple of the run, scalar otherwise) are exercised.
  const int64_t width = GetParam(), rows = 13, n = rows * width;
  FakeBuffer x(ffi::DataType::F32, {rows, width}), out(ffi::DataType::F32, {rows, width}),
      bias(ffi::DataType::F32, {width});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = float((i * 7919) % 23) - 11.0f;
  for (int64_t j = 0; j < width; ++j) bias.data<float>()[j] = 0.5f * float(j % 5) - 1.0f;

  ffi::Error err = ops::bias_relu(Host{}, x.any(), bias.any(), out.result());
  ASSERT_TRUE(err.success()) << err.message();
  for (int64_t i = 0; i < n; ++i) {
    float expected = std::max(x.data<float>()[i] + bias.data<float>()[i % width], 0.0f);
    ASSERT_EQ(out.data<float>()[i], expected) << "at flat index " << i;
  }
}

TEST(BiasRelu, WrongBiasLengthIsAnError) {
  FakeBuffer x(ffi::DataType::F32, {2, 8}), out(ffi::DataType::F32, {2, 8}),
      bias(ffi::DataType::F32, {7});
  ffi::Error err = ops::bias_relu(Host{}, x.any(), bias.any(), out.result());
  EXPECT_EQ(err.message(),
            "bias has shape (7,); expected dimension 0 to be 8 (the width of x's last axis)");
}

INSTANTIATE_TEST_SUITE_P(Widths, BiasReluWidth, ::testing::Values(1, 3, 7, 8, 16, 17, 100, 1024));

TEST(Map, HalfPrecisionRoundsOnce) {
  using half = cutlass::half_t;
  FakeBuffer a(ffi::DataType::F16, {5}), b(ffi::DataType::F16, {5}), out(ffi::DataType::F16, {5});
  for (int i = 0; i < 5; ++i) {
    a.data<half>()[i] = half(1.0f + i);
    b.data<half>()[i] = half(0.5f);
  }
  auto add = [](auto p, auto q) { return from_float<decltype(p)>(to_float(p) + to_float(q)); };
  auto result = out.result();
  ASSERT_TRUE(kernels::map(Host{}, "add", add, flat_view<half>(result), flat_view<half>(a.any()),
                           flat_view<half>(b.any()))
                  .success());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(float(out.data<half>()[i]), 1.5f + i);
}

#if defined(CUTLAX_HAVE_F16C_PATH)
// The F16C path of half maps (HalfRunsThroughF16c, which map_indexed takes
// on such CPUs) against the portable one (the run functor on half runs,
// through convert.hpp's conversions), bit for bit, with every half pattern
// as the first operand: sums and products that round, tie, overflow and land
// on subnormals, and relu's NaNs and signed zeros.
class HalfMapThroughF16c : public ::testing::Test {
 protected:
  using half = cutlass::half_t;
  static constexpr int64_t kPatterns = 1 << 16;

  void SetUp() override {
    if (!kernels::cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
    for (int64_t i = 0; i < kPatterns; ++i) {
      a.data<half>()[i] = half::bitcast(uint16_t(i));
      // A second operand that walks the patterns at another pace, so each
      // first operand meets values of many magnitudes and both signs.
      b.data<half>()[i] = half::bitcast(uint16_t(i * 40503u));
    }
  }

  template <class RunFn, class... In>
  void expect_same_as_portable(RunFn fn, In&... in) {
    auto fast = fast_out.result(), portable = portable_out.result();
    ASSERT_TRUE(kernels::map_indexed(Host{}, "f16c", fn, flat_view<half>(fast),
                                     flat_view<half>(in.any())...)
                    .success());
    ASSERT_TRUE(kernels::map_runs_in_tasks(Host{}, fn, flat_view<half>(portable),
                                           flat_view<half>(in.any())...)
                    .success());
    for (int64_t i = 0; i < kPatterns; ++i) {
      const half got = fast_out.data<half>()[i], expected = portable_out.data<half>()[i];
      if (std::isnan(float(expected))) {
        EXPECT_TRUE(std::isnan(float(got))) << "at pattern " << i;
      } else {
        ASSERT_EQ(got.raw(), expected.raw()) << "at pattern " << i;
      }
    }
  }

  FakeBuffer a{ffi::DataType::F16, {kPatterns}}, b{ffi::DataType::F16, {kPatterns}};
  FakeBuffer fast_out{ffi::DataType::F16, {kPatterns}},
      portable_out{ffi::DataType::F16, {kPatterns}};
};

template <class Fn>
kernels::Pointwise<Fn> pointwise(Fn fn) {
  return {fn};
}

TEST_F(HalfMapThroughF16c, AddMatchesThePortablePath) {
  expect_same_as_portable(pointwise(ops::Add{}), a, b);
}

TEST_F(HalfMapThroughF16c, SaxpyMatchesThePortablePath) {
  expect_same_as_portable(pointwise(ops::Axpy{0.3f}), a, b);
}

TEST_F(HalfMapThroughF16c, ReluMatchesThePortablePath) {
  expect_same_as_portable(pointwise(ops::Relu{}), a);
}

// Widths whose rows hold whole runs and widths whose runs wrap into the next
// row; the bias is b's first patterns.
TEST_F(HalfMapThroughF16c, BiasReluMatchesThePortablePath) {
  for (int64_t width : {1024, 1000, 7}) {
    const cutlass::FastDivmodU64 by_width{uint64_t(width)};
    expect_same_as_portable(ops::BiasRelu<half, false>{b.data<half>(), width, by_width}, a);
  }
}
#endif

}  // namespace
}  // namespace cutlax
