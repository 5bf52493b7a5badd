// CPU twins of the elementwise kernel shapes (see elementwise.hpp): loops over
// the same CuTe views and the same functors, written so the compiler
// vectorises them.
#pragma once

#include "elementwise.hpp"

namespace cutlax::kernels {

template <class Fn, class TOut, class... TIn>
ffi::Error map_3d(Host, const char*, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  const int64_t n = cute::size(out);
  TOut* dst = out.data().get();
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(in.data().get()[i]...);
  return ffi::Error::Success();
}

template <class Fn, class T>
ffi::Error map_flat(Host, const char*, Fn fn, Vector<T> out, Vector<const T> x) {
  constexpr int run = kElementsPerThread<T>;
  const int64_t n = cute::size(out);
  const T* src = x.data().get();
  T* dst = out.data().get();
  int64_t first = 0;
  for (; first + run <= n; first += run) {
    auto frag = cute::make_tensor<T>(cute::Int<run>{});
    for (int i = 0; i < run; ++i) frag(i) = src[first + i];
    fn.run(frag, first);
    for (int i = 0; i < run; ++i) dst[first + i] = frag(i);
  }
  for (int64_t i = first; i < n; ++i) dst[i] = fn.element(src[i], i);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels
