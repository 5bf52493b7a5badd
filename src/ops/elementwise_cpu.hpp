// CPU twins of the elementwise kernel shapes (see elementwise.hpp): loops over
// the same CuTe views and the same functors, written so the compiler
// vectorises them.
#pragma once

#include <algorithm>

#include "elementwise.hpp"

namespace cutlax::kernels {

template <class Fn, class TOut, class... TIn>
ffi::Error map_3d(Host, const char*, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  const int64_t n = cute::size(out);
  TOut* dst = out.data().get();
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(in.data().get()[i]...);
  return ffi::Error::Success();
}

// Host runs are longer than a GPU thread's: 1 KiB amortises per-run work
// (bias_relu's column division) and still stays in L1. Each run is copied
// to the output and transformed there, in place.
template <class Fn, class T>
ffi::Error map_flat(Host, const char*, Fn fn, Vector<T> out, Vector<const T> x) {
  constexpr int run = 1024 / sizeof(T);
  const int64_t n = cute::size(out);
  const T* src = x.data().get();
  T* dst = out.data().get();
  int64_t first = 0;
  for (; first + run <= n; first += run) {
    std::copy(src + first, src + first + run, dst + first);
    auto chunk = cute::make_tensor(cute::make_gmem_ptr(dst + first), cute::Int<run>{});
    fn.run(chunk, first);
  }
  for (int64_t i = first; i < n; ++i) dst[i] = fn.element(src[i], i);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels
