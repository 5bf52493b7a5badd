// The elementwise kernel the built-in ops share, declared for both backends.
// elementwise.cuh defines the CUDA kernel, elementwise_cpu.hpp the CPU twin;
// an op's header calls these and each backend's translation unit includes its
// definitions.
//
//   map(exec, name, fn, out, in...)          out(i) = fn(in(i)...)
//       (vector_add, saxpy, relu, relu_backward).
//   map_indexed(exec, name, fn, out, in...)  for ops that need the flat index
//       of what they compute (bias_relu derives its column from it):
//       fn.run(out_run, first, in_runs...) fills a register run of
//       kVectorElements results that starts at flat index `first`;
//       fn.element(i, in(i)...) computes one element, for the array's end.
//
// Functors compute through to_float and from_float and are templates over
// the element type of the values and runs they get, which may be wider than
// the arrays': the CPU twin hands them float runs widened from half arrays
// (elementwise_cpu.hpp says why).
#pragma once

#include <cutlax/cutlax.hpp>

namespace cutlax::kernels {

template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Cuda exec, const char* name, Fn fn, Vector<TOut> out,
                       Vector<const TIn>... in);
template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Host exec, const char* name, Fn fn, Vector<TOut> out,
                       Vector<const TIn>... in);

// One 128-bit access per operand: the elements a run holds.
template <class T>
inline constexpr int kVectorElements = 16 / sizeof(T);
inline constexpr int kThreadsPerBlock = 256;
// Runs per GPU thread. One is fastest for every op and dtype in the tuning
// sweep (bench/elementwise_sweep.cu; figures in bench/RESULTS.md, "Tuning:
// accesses per thread"): more bytes in flight per thread do not make up for
// fewer resident threads.
inline constexpr int kAccessesPerThread = 1;

// A plain per-element functor seen as a run functor.
template <class Fn>
struct Pointwise {
  Fn fn;
  template <class Out, class... In>
  CUTE_HOST_DEVICE void run(Out& out, int64_t, In const&... in) const {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(out); ++i) out(i) = fn(in(i)...);
  }
  template <class... T>
  CUTE_HOST_DEVICE auto element(int64_t, T... x) const {
    return fn(x...);
  }
};

template <class Exec, class Fn, class TOut, class... TIn>
ffi::Error map(Exec exec, const char* name, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  return map_indexed(exec, name, Pointwise<Fn>{fn}, out, in...);
}

// max(x, 0) that keeps NaN, as jnp.maximum does. It asks x > 0 (and x != x
// for NaN), not x < 0: on XLA:CPU's threads, which run with denormals-are-
// zero, a negative subnormal compares equal to 0, so `x < 0 ? 0 : x` returned
// it negative (found by the property tests, tests/python/test_relu.py). This form also
// gives +0 for -0, as jnp.maximum(x, 0) does.
template <class T>
CUTE_HOST_DEVICE T relu(T x) {
  const float f = to_float(x);
  return f > 0.0f || f != f ? x : from_float<T>(0.0f);
}

}  // namespace cutlax::kernels
