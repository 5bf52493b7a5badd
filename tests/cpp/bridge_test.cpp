// The bridge's dtype dispatch, argument checks and tensor views.
#include <gtest/gtest.h>

#include <string>

#include "fake_buffer.hpp"

namespace cutlax {
namespace {

using testing::FakeBuffer;

TEST(Dispatch, PicksTheCppTypeOfEachFloatDtype) {
  auto bytes = [](ffi::DataType dtype) {
    int size = 0;
    ffi::Error err = dispatch(FloatTypes{}, dtype, "x", [&](auto tag) {
      size = sizeof(typename decltype(tag)::type);
      return ffi::Error::Success();
    });
    EXPECT_TRUE(err.success());
    return size;
  };
  EXPECT_EQ(bytes(ffi::DataType::F32), 4);
  EXPECT_EQ(bytes(ffi::DataType::F16), 2);
  EXPECT_EQ(bytes(ffi::DataType::BF16), 2);
}

TEST(Dispatch, RejectsOtherDtypesNamingTheArgument) {
  bool called = false;
  ffi::Error err = dispatch(FloatTypes{}, ffi::DataType::S8, "weights", [&](auto) {
    called = true;
    return ffi::Error::Success();
  });
  EXPECT_FALSE(called);
  ASSERT_TRUE(err.failure());
  EXPECT_EQ(err.errc(), ffi::ErrorCode::kInvalidArgument);
  EXPECT_EQ(err.message(), "weights has dtype int8; expected one of: float32, float16, bfloat16");
}

TEST(Dispatch, ForwardsTheFunctorsError) {
  ffi::Error err = dispatch(Float32{}, ffi::DataType::F32, "x",
                            [](auto) { return ffi::Error::Internal("boom"); });
  EXPECT_EQ(err.message(), "boom");
}

TEST(Checks, ShapeMismatchNamesBothArguments) {
  FakeBuffer a(ffi::DataType::F32, {3, 5}), b(ffi::DataType::F32, {3, 4});
  ffi::Error err = expect_same_shape(b.any(), "b", a.any(), "a");
  EXPECT_EQ(err.message(), "b has shape (3, 4) but a has shape (3, 5); they must match");
  EXPECT_TRUE(expect_same_shape(a.any(), "a", a.any(), "a").success());
}

TEST(Checks, DtypeMismatch) {
  FakeBuffer a(ffi::DataType::F32, {2}), b(ffi::DataType::F16, {2});
  EXPECT_EQ(expect_same_dtype(b.any(), "b", a.any(), "a").message(),
            "b has dtype float16 but a has dtype float32; they must match");
}

TEST(Checks, RankAndDimension) {
  FakeBuffer v(ffi::DataType::F32, {7});
  EXPECT_EQ(expect_rank(v.any(), "a", 2).message(), "a must have rank 2, got shape (7,)");
  EXPECT_TRUE(expect_min_rank(v.any(), "x", 1).success());
  EXPECT_EQ(expect_dim(v.any(), "bias", 0, 8, "x's width").message(),
            "bias has shape (7,); expected dimension 0 to be 8 (x's width)");
  EXPECT_TRUE(expect_dim(v.any(), "bias", -1, 7, "x's width").success());
}

TEST(Checks, ExpectDtypeAcceptsAndRejects) {
  EXPECT_TRUE(expect_dtype(ffi::DataType::F32, "alpha", Float32{}).success());
  EXPECT_EQ(expect_dtype(ffi::DataType::F64, "alpha", Float32{}).message(),
            "alpha has dtype float64; expected one of: float32");
}

TEST(Views, FlatViewCoversEveryElementOfAnyRank) {
  FakeBuffer scalar(ffi::DataType::F32, {}), cube(ffi::DataType::F32, {3, 5, 7}),
      empty(ffi::DataType::F32, {4, 0});
  EXPECT_EQ(cute::size(flat_view<float>(scalar.any())), 1);
  EXPECT_EQ(cute::size(flat_view<float>(cube.any())), 105);
  EXPECT_EQ(cute::size(flat_view<float>(empty.any())), 0);
}

TEST(Views, MatrixViewFoldsLeadingAxesIntoRows) {
  FakeBuffer x(ffi::DataType::F32, {2, 3, 4});
  float* data = x.data<float>();
  for (int i = 0; i < 24; ++i) data[i] = float(i);
  auto m = matrix_view<float>(x.any());
  EXPECT_EQ(cute::size<0>(m), 6);
  EXPECT_EQ(cute::size<1>(m), 4);
  EXPECT_EQ(m(5, 3), 23.0f);  // row-major: row 5, column 3
  EXPECT_EQ(m(1, 0), 4.0f);
  FakeBuffer no_columns(ffi::DataType::F32, {5, 0});
  EXPECT_EQ(cute::size<0>(matrix_view<float>(no_columns.any())), 5);
  EXPECT_EQ(cute::size<1>(matrix_view<float>(no_columns.any())), 0);
}

TEST(Views, ReinterpretAsThreeDimensional) {
  // The (elements_per_thread, threads_per_block, num_blocks) view of vector_add.
  FakeBuffer x(ffi::DataType::F32, {64});
  float* data = x.data<float>();
  for (int i = 0; i < 64; ++i) data[i] = float(i);
  auto v = view<float>(
      x.any(), cute::make_layout(cute::make_shape(cute::Int<4>{}, cute::Int<8>{}, int64_t(2))));
  EXPECT_EQ(v(3, 0, 0), 3.0f);
  EXPECT_EQ(v(0, 1, 0), 4.0f);   // thread 1's run starts after thread 0's
  EXPECT_EQ(v(0, 0, 1), 32.0f);  // block 1 starts after block 0's 8 threads
}

}  // namespace
}  // namespace cutlax
