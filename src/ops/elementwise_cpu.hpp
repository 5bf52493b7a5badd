// CPU twins of the elementwise kernel shapes: a plain loop over the same CuTe
// views, written so the compiler vectorises it.
#pragma once

#include <cutlax/cutlax.hpp>

namespace cutlax::cpu {

template <class Fn, class TOut, class... TIn>
void map(Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  const int64_t n = cute::size(out);
  TOut* dst = out.data().get();
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(in.data().get()[i]...);
}

}  // namespace cutlax::cpu
