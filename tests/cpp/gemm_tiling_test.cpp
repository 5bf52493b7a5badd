// What each thread of the tiled SGEMM owns, checked on the host.
#include "gemm_tiling.hpp"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace cutlax::kernels::sgemm {
namespace {

TEST(SgemmTiling, ThreadsCoverTheOutputTileExactlyOnce) {
  TiledMma mma;
  auto tile = make_identity_tensor(make_shape(BM{}, BN{}));
  std::vector<int> hits(BM{} * BN{}, 0);
  for (int t = 0; t < kThreads; ++t) {
    auto mine = mma.get_thread_slice(t).partition_C(tile);
    ASSERT_EQ(size(mine), 64);
    for (int i = 0; i < size(mine); ++i) {
      auto [m, n] = mine(i);
      ++hits[m * BN{} + n];
    }
  }
  for (int h : hits) ASSERT_EQ(h, 1);
}

TEST(SgemmTiling, EachThreadReadsAAsTwoRunsOfFourRows) {
  TiledMma mma;
  auto sA = make_identity_tensor(make_shape(BM{}, BK{}));
  for (int t : {0, 1, 17, 255}) {
    auto mine = mma.get_thread_slice(t).partition_A(sA);  // (MMA, MMA_M, MMA_K)
    ASSERT_EQ(size<1>(mine), 8);
    int tm = t % 16;
    std::vector<int> rows;
    for (int i = 0; i < size<1>(mine); ++i) rows.push_back(get<0>(mine(0, i, 0)));
    EXPECT_EQ(rows, (std::vector<int>{4 * tm, 4 * tm + 1, 4 * tm + 2, 4 * tm + 3, 64 + 4 * tm,
                                      65 + 4 * tm, 66 + 4 * tm, 67 + 4 * tm}))
        << "thread " << t;
  }
}

TEST(SgemmTiling, CopiesLoadWholeTiles) {
  // Every element of an A and a B tile is loaded by exactly one thread.
  auto covers_once = [](auto copy, auto tile_shape) {
    auto tile = make_identity_tensor(tile_shape);
    std::set<std::pair<int, int>> seen;
    int count = 0;
    for (int t = 0; t < kThreads; ++t) {
      auto mine = copy.get_thread_slice(t).partition_S(tile);
      for (int i = 0; i < size(mine); ++i, ++count) {
        seen.insert({get<0>(mine(i)), get<1>(mine(i))});
      }
    }
    return count == size(tile) && int(seen.size()) == size(tile);
  };
  EXPECT_TRUE(covers_once(VectorCopyA{}, make_shape(BM{}, BK{})));
  EXPECT_TRUE(covers_once(VectorCopyB{}, make_shape(BN{}, BK{})));
  EXPECT_TRUE(covers_once(ScalarCopyA{}, make_shape(BM{}, BK{})));
  EXPECT_TRUE(covers_once(ScalarCopyB{}, make_shape(BN{}, BK{})));
}

}  // namespace
}  // namespace cutlax::kernels::sgemm
