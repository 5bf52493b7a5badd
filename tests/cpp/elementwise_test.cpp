// The elementwise functors and CPU kernel shapes against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "bias_relu.hpp"
#include "elementwise_cpu.hpp"
#include "fake_buffer.hpp"
#include "relu.hpp"

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
  auto add = [](half p, half q) { return p + q; };
  auto result = out.result();
  ASSERT_TRUE(kernels::map(Host{}, "add", add, flat_view<half>(result), flat_view<half>(a.any()),
                           flat_view<half>(b.any()))
                  .success());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(float(out.data<half>()[i]), 1.5f + i);
}

}  // namespace
}  // namespace cutlax
