// CUDA definition of the elementwise kernel (see elementwise.hpp).
//
// The flat array is seen as a 3-D CuTe tensor
//   ((Vec, Accesses), Threads, blocks)
// with strides ((1, Vec * Threads), Vec, Vec * Threads * Accesses): a thread
// owns Accesses runs of Vec elements (16 bytes each), a block width apart.
// Access a of every thread of a warp is one contiguous 512-byte span, and a
// thread issues all its loads before it computes, so each thread has
// Accesses * operands * 16 bytes in flight. The ops use one access
// (kAccessesPerThread); the sweep in bench/ measures more.
//
// Sizes that are not a whole number of blocks: the view covers the array
// padded up to full blocks, and only the last block, the one that crosses
// the true end, takes a predicated scalar path with a bounds check on each
// flat index. Padding the arrays themselves (jnp.pad, then slicing the result
// back) would give the same answer but copy every input and output once more.
#pragma once

#include "elementwise.hpp"

namespace cutlax::kernels {

// Copies between global memory and registers with accesses of at most
// AlignBits bits.
template <int AlignBits, class Src, class Dst>
CUTE_DEVICE void copy_vectorized(Src const& src, Dst& dst) {
  cute::copy(cute::AutoVectorizingCopyWithAssumedAlignment<AlignBits>{}, src, dst);
}

template <int Vec, int Accesses, int Threads>
CUTE_HOST_DEVICE auto block_layout(int64_t blocks) {
  using namespace cute;
  return make_layout(make_shape(make_shape(Int<Vec>{}, Int<Accesses>{}), Int<Threads>{}, blocks),
                     make_stride(make_stride(_1{}, Int<Vec * Threads>{}), Int<Vec>{},
                                 Int<Vec * Threads * Accesses>{}));
}

template <int Vec, int Accesses, int Threads, int AlignBits, class Fn, class TOut, class... TIn>
__global__ void __launch_bounds__(Threads)
    map_kernel(Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  using namespace cute;
  constexpr int64_t kBlockElements = Vec * Accesses * Threads;
  const int64_t n = size(out);
  const int64_t block = blockIdx.x, thread = threadIdx.x;
  const auto layout = block_layout<Vec, Accesses, Threads>(gridDim.x);
  // The flat index of element i of this thread's (Vec, Accesses) slice.
  auto index = [&](auto i) { return int64_t(layout(i, thread, block)); };

  if ((block + 1) * kBlockElements <= n) {
    auto thread_slice = [&](auto flat) {
      return make_tensor(flat.data(), layout)(make_coord(_, _), thread, block);
    };
    auto registers = [](auto flat) {
      using T = std::remove_const_t<typename decltype(flat)::value_type>;
      return make_tensor<T>(Shape<Int<Vec>, Int<Accesses>>{});
    };
    auto load = [&](auto flat) {
      auto frag = registers(flat);
      copy_vectorized<AlignBits>(thread_slice(flat), frag);
      return frag;
    };
    auto result = registers(out);
    auto compute = [&](auto const&... frags) {
      CUTE_UNROLL
      for (int a = 0; a < Accesses; ++a) {
        auto run = result(_, a);
        fn.run(run, index(make_coord(0, a)), frags(_, a)...);
      }
    };
    compute(load(in)...);
    auto dst = thread_slice(out);
    copy_vectorized<AlignBits>(result, dst);
  } else {
    // Every load first, then the stores: interleaved, each load would have to
    // wait for the previous store (out may alias an input as far as the
    // compiler knows).
    auto load_checked = [&](auto flat) {
      using T = std::remove_const_t<typename decltype(flat)::value_type>;
      auto frag = make_tensor<T>(Int<Vec * Accesses>{});
      CUTE_UNROLL
      for (int i = 0; i < Vec * Accesses; ++i) {
        if (index(i) < n) frag(i) = flat(index(i));
      }
      return frag;
    };
    auto compute_checked = [&](auto const&... frags) {
      CUTE_UNROLL
      for (int i = 0; i < Vec * Accesses; ++i) {
        const int64_t at = index(i);
        if (at < n) out(at) = fn.element(at, frags(i)...);
      }
    };
    compute_checked(load_checked(in)...);
  }
}

// Launches map_kernel over size(out) elements, with 128-bit accesses when
// every pointer allows them.
template <int Accesses, int Threads, class Fn, class TOut, class... TIn>
ffi::Error launch_map(cudaStream_t stream, const char* name, Fn fn, Vector<TOut> out,
                      Vector<const TIn>... in) {
  constexpr int vec = kVectorElements<TOut>;
  const int64_t n = cute::size(out);
  if (n == 0) return ffi::Error::Success();
  const int64_t blocks = ceil_div(n, int64_t(vec) * Accesses * Threads);
  CUTLAX_RETURN_IF_ERROR(expect_grid_fits(blocks, name));
  const bool aligned = is_aligned_16(out.data().get()) && (is_aligned_16(in.data().get()) && ...);
  if (aligned) {
    map_kernel<vec, Accesses, Threads, 128><<<blocks, Threads, 0, stream>>>(fn, out, in...);
  } else {
    map_kernel<vec, Accesses, Threads, 8 * sizeof(TOut)>
        <<<blocks, Threads, 0, stream>>>(fn, out, in...);
  }
  return launch_status(name);
}

template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Cuda exec, const char* name, Fn fn, Vector<TOut> out,
                       Vector<const TIn>... in) {
  return launch_map<kAccessesPerThread, kThreadsPerBlock>(exec.stream, name, fn, out, in...);
}

}  // namespace cutlax::kernels
