// The Hopper GEMM's heuristic (choose_gemm_schedule), checked on the host
// against the kernel list that is built (gemm_kernels.def).
#include <gtest/gtest.h>

#include "gemm_configs.hpp"

namespace cutlax::ops {
namespace {

constexpr int64_t kSms = 132;  // an H100 SXM

GemmSchedule automatic(ffi::DataType dtype, GemmTranspose form, int64_t m, int64_t n,
                       int64_t k = 4096) {
  return choose_gemm_schedule(dtype, form, GemmConfig::kAuto, m, n, k, kSms);
}

TEST(GemmSchedule, Float32TakesTheCooperativeKernel) {
  const GemmSchedule s = automatic(ffi::DataType::F32, GemmTranspose::kB, 4096, 4096);
  EXPECT_EQ(s.config, GemmConfig::kCooperative128x256);
  EXPECT_EQ(s.order.swizzle, 1);
}

TEST(GemmSchedule, SixteenBitTakesThePingpongKernelInStripsOfEight) {
  for (ffi::DataType dtype : {ffi::DataType::BF16, ffi::DataType::F16}) {
    for (int64_t size : {4096, 8192}) {
      for (int64_t k : {1024, 4096}) {
        const GemmSchedule s = automatic(dtype, GemmTranspose::kNone, size, size, k);
        EXPECT_EQ(s.config, GemmConfig::kPingpong128x128) << size << " " << k;
        EXPECT_EQ(s.order.swizzle, kPingpongSwizzle);
      }
    }
  }
}

TEST(GemmSchedule, SixteenBitWithLongKAndManyTilesTakesTheCooperativeKernel) {
  for (ffi::DataType dtype : {ffi::DataType::BF16, ffi::DataType::F16}) {
    const GemmSchedule s = automatic(dtype, GemmTranspose::kNone, 8192, 8192, 8192);
    EXPECT_EQ(s.config, GemmConfig::kCooperative128x256);
    EXPECT_EQ(s.order.swizzle, 1);
    // Too few tiles for four waves of 128x256 on 132 SMs: 16 x 16 = 256.
    EXPECT_EQ(automatic(dtype, GemmTranspose::kNone, 2048, 4096, 8192).config,
              GemmConfig::kPingpong128x128);
    // Each bound exactly: 33 x 16 = 528 tiles are four waves, 32 x 16 are
    // not; K = 8191 is one short.
    EXPECT_EQ(automatic(dtype, GemmTranspose::kNone, 33 * 128, 4096, 8192).config,
              GemmConfig::kCooperative128x256);
    EXPECT_EQ(automatic(dtype, GemmTranspose::kNone, 32 * 128, 4096, 8192).config,
              GemmConfig::kPingpong128x128);
    EXPECT_EQ(automatic(dtype, GemmTranspose::kNone, 8192, 8192, 8191).config,
              GemmConfig::kPingpong128x128);
  }
  // The backward's transposed products have no cooperative 16-bit kernel.
  EXPECT_EQ(automatic(ffi::DataType::BF16, GemmTranspose::kB, 8192, 8192, 8192).config,
            GemmConfig::kPingpong128x128);
}

TEST(GemmSchedule, FewTilesTakeTheSmallTileWhereItIsBuilt) {
  // The MLP's weight gradient: 1024x1024, 64 tiles of 128x128 for 132 SMs.
  EXPECT_EQ(automatic(ffi::DataType::BF16, GemmTranspose::kA, 1024, 1024).config,
            GemmConfig::kPingpong64x128);
  // float16 has no 64x128 kernel: the first built in GemmConfig's order.
  ASSERT_FALSE(
      gemm_kernel_built(ffi::DataType::F16, GemmTranspose::kA, GemmConfig::kPingpong64x128));
  EXPECT_EQ(automatic(ffi::DataType::F16, GemmTranspose::kA, 1024, 1024).config,
            GemmConfig::kPingpong128x128);
}

TEST(GemmSchedule, EveryAutomaticChoiceIsBuilt) {
  for (const GemmKernel& kernel : kGemmKernels) {
    for (int64_t size : {1, 1024, 8192}) {
      const GemmSchedule s = automatic(kernel.dtype, kernel.transpose, size, size, size);
      EXPECT_TRUE(gemm_kernel_built(kernel.dtype, kernel.transpose, s.config)) << size;
    }
  }
}

TEST(GemmSchedule, ARequestedConfigurationIsKept) {
  const GemmSchedule s =
      choose_gemm_schedule(ffi::DataType::F32, GemmTranspose::kB,
                           GemmConfig::kCooperative128x128Promoted, 64, 64, 64, kSms);
  EXPECT_EQ(s.config, GemmConfig::kCooperative128x128Promoted);
  EXPECT_EQ(s.order.swizzle, 1);
}

}  // namespace
}  // namespace cutlax::ops
