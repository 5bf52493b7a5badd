// CUDA definitions of the elementwise kernel shapes (see elementwise.hpp).
//
//   map_3d   the classic CuTe view: the flat array is seen as a 3-D tensor
//            (elements_per_thread, threads_per_block, num_blocks); a thread
//            slices out its elements_per_thread run, copies it into a register
//            fragment with 128-bit loads, computes, and copies it back.
//   map_flat CUDA-style flat indexing: global index = block * block_dim +
//            thread, a bounds check, and the functor told the element's flat
//            index (bias_relu derives its column from it).
//
// Sizes that are not a whole number of blocks: the 3-D view covers the array
// padded up to full blocks, and the threads whose run crosses the true end
// take a predicated scalar path instead of the vector one. Padding the arrays
// themselves (jnp.pad, then slicing the result back) would give the same
// answer but copy every input and output once more.
#pragma once

#include "elementwise.hpp"

namespace cutlax::kernels {

// Loads `in` into registers with accesses of at most AlignBits bits.
template <int AlignBits, class Src, class Dst>
CUTE_DEVICE void load_fragment(Src const& src, Dst& dst) {
  cute::copy(cute::AutoVectorizingCopyWithAssumedAlignment<AlignBits>{}, src, dst);
}

template <int ElementsPerThread, int ThreadsPerBlock, int AlignBits, class Fn, class TOut,
          class... TIn>
__global__ void __launch_bounds__(ThreadsPerBlock)
    map_3d_kernel(Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  using namespace cute;
  const int64_t n = size(out);
  // (elements_per_thread, threads_per_block, num_blocks), compact.
  auto view_3d = [](auto flat) {
    return make_tensor(flat.data(),
                       make_layout(make_shape(Int<ElementsPerThread>{}, Int<ThreadsPerBlock>{},
                                              int64_t(gridDim.x))));
  };
  auto thread_run = [&](auto flat) { return view_3d(flat)(_, threadIdx.x, blockIdx.x); };
  const int64_t first = (int64_t(blockIdx.x) * ThreadsPerBlock + threadIdx.x) * ElementsPerThread;

  if (first + ElementsPerThread <= n) {
    auto frag = [&](auto flat) {
      auto f = make_tensor<std::remove_const_t<typename decltype(flat)::value_type>>(
          Int<ElementsPerThread>{});
      load_fragment<AlignBits>(thread_run(flat), f);
      return f;
    };
    auto result = make_tensor<TOut>(Int<ElementsPerThread>{});
    auto apply_all = [&](auto const&... frags) {
      CUTE_UNROLL
      for (int i = 0; i < ElementsPerThread; ++i) result(i) = fn(frags(i)...);
    };
    apply_all(frag(in)...);
    auto dst = thread_run(out);
    load_fragment<AlignBits>(result, dst);
  } else {
    for (int64_t i = first; i < n; ++i) out(i) = fn(in(i)...);
  }
}

// Launches map_3d_kernel over size(out) elements, with 128-bit accesses when
// every pointer allows them.
template <class Fn, class TOut, class... TIn>
ffi::Error map_3d(Cuda exec, const char* name, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  constexpr int ept = kElementsPerThread<TOut>;
  const int64_t n = cute::size(out);
  if (n == 0) return ffi::Error::Success();
  const int64_t blocks = ceil_div(n, int64_t(ept) * kThreadsPerBlock);
  CUTLAX_RETURN_IF_ERROR(expect_grid_fits(blocks, name));
  const bool aligned = is_aligned_16(out.data().get()) && (is_aligned_16(in.data().get()) && ...);
  if (aligned) {
    map_3d_kernel<ept, kThreadsPerBlock, 128>
        <<<blocks, kThreadsPerBlock, 0, exec.stream>>>(fn, out, in...);
  } else {
    map_3d_kernel<ept, kThreadsPerBlock, 8 * sizeof(TOut)>
        <<<blocks, kThreadsPerBlock, 0, exec.stream>>>(fn, out, in...);
  }
  return launch_status(name);
}

// Fn provides run(frag, first) for a whole register run starting at flat
// index `first`, and element(x, i) for the scalar tail.
template <int ElementsPerThread, int ThreadsPerBlock, int AlignBits, class Fn, class T>
__global__ void __launch_bounds__(ThreadsPerBlock)
    map_flat_kernel(Fn fn, Vector<T> out, Vector<const T> x) {
  using namespace cute;
  const int64_t n = size(out);
  // Each thread owns the run of ElementsPerThread at its global index.
  const int64_t index = int64_t(blockIdx.x) * ThreadsPerBlock + threadIdx.x;
  const int64_t first = index * ElementsPerThread;
  if (first + ElementsPerThread <= n) {
    auto src = local_tile(x, make_shape(Int<ElementsPerThread>{}), index);
    auto dst = local_tile(out, make_shape(Int<ElementsPerThread>{}), index);
    auto frag = make_tensor<T>(Int<ElementsPerThread>{});
    load_fragment<AlignBits>(src, frag);
    fn.run(frag, first);
    load_fragment<AlignBits>(frag, dst);
  } else {
    for (int64_t i = first; i < n; ++i) out(i) = fn.element(x(i), i);
  }
}

template <class Fn, class T>
ffi::Error map_flat(Cuda exec, const char* name, Fn fn, Vector<T> out, Vector<const T> x) {
  constexpr int ept = kElementsPerThread<T>;
  const int64_t n = cute::size(out);
  if (n == 0) return ffi::Error::Success();
  const int64_t blocks = ceil_div(n, int64_t(ept) * kThreadsPerBlock);
  CUTLAX_RETURN_IF_ERROR(expect_grid_fits(blocks, name));
  if (is_aligned_16(out.data().get()) && is_aligned_16(x.data().get())) {
    map_flat_kernel<ept, kThreadsPerBlock, 128>
        <<<blocks, kThreadsPerBlock, 0, exec.stream>>>(fn, out, x);
  } else {
    map_flat_kernel<ept, kThreadsPerBlock, 8 * sizeof(T)>
        <<<blocks, kThreadsPerBlock, 0, exec.stream>>>(fn, out, x);
  }
  return launch_status(name);
}

}  // namespace cutlax::kernels
