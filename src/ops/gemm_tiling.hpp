// The tiled SGEMM's decomposition, as CuTe layouts. Host-compilable, so the C++
// unit tests check what each thread owns without a GPU.
//
// A block of 256 threads owns a 128 x 128 tile of C and walks K in steps of 8:
//   - tiles of A (128 x 8) and B (128 x 8, as B(n, k)) are staged through
//     shared memory, two stages deep: the next tile's global loads are in
//     flight while the current one is multiplied;
//   - A is stored M-major (transposed) in shared memory so the multiply reads
//     both operands along M and N;
//   - the 16 x 16 threads each own 8 x 8 outputs: two runs of 4 consecutive
//     rows (4t, 64 + 4t) times two runs of 4 columns, so each operand read
//     from shared memory is one 128-bit load and 64 FMAs reuse 16 loaded
//     values.
#pragma once

#include <cute/tensor.hpp>

namespace cutlax::kernels::sgemm {

using namespace cute;

using BM = _128;
using BN = _128;
using BK = _8;
inline constexpr int kThreads = 256;

// (m, k, stage) and (n, k, stage), compact and M/N-major.
using SmemLayoutA = decltype(make_layout(make_shape(BM{}, BK{}, _2{})));
using SmemLayoutB = decltype(make_layout(make_shape(BN{}, BK{}, _2{})));

// Thread tm's 8 rows are m' = tm + 16 r1 + 64 r2 in the MMA's own order; the
// permutation maps them to 4 tm + r1 + 64 r2: two runs of 4.
using RunsOf4 = Layout<Shape<_16, _4, _2>, Stride<_4, _1, _64>>;
using TiledMma =
    decltype(make_tiled_mma(UniversalFMA<float, float, float, float>{},
                            Layout<Shape<_16, _16, _1>>{}, Tile<RunsOf4, RunsOf4, _1>{}));

// Global -> register copies of one (BM, BK) tile of A (row-major, K-contiguous)
// and one (BN, BK) tile of B (N-contiguous). Threads run fastest along M for A
// so the transposing stores to shared memory hit 32 different banks, and along
// N for B so a warp reads 512 contiguous bytes.
using ThreadsA = Layout<Shape<_128, _2>, Stride<_1, _128>>;
using ThreadsB = Layout<Shape<_32, _8>, Stride<_1, _32>>;

// 128-bit loads need K % 4 == 0 (A) and N % 4 == 0 (B) and aligned bases.
using VectorCopyA = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                             ThreadsA{}, Layout<Shape<_1, _4>>{}));
using VectorCopyB = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                             ThreadsB{}, Layout<Shape<_4, _1>>{}));
using ScalarCopyA = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<float>, float>{}, ThreadsA{},
                                             Layout<Shape<_1, _1>>{}));
using ScalarCopyB = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<float>, float>{}, ThreadsB{},
                                             Layout<Shape<_1, _1>>{}));

}  // namespace cutlax::kernels::sgemm
