// The two elementwise kernel shapes the built-in ops share, declared for both
// backends. elementwise.cuh defines the CUDA kernels, elementwise_cpu.hpp the
// CPU twins; an op's header calls these and each backend's translation unit
// includes its definitions.
//
//   map_3d(exec, name, fn, out, in...)   out(i) = fn(in(i)...); the classic
//       CuTe 3-D view kernel (vector_add, saxpy).
//   map_flat(exec, name, fn, out, x)     flat indexing with a bounds check;
//       fn.run(frag, first) transforms a register run that starts at flat
//       index `first`, fn.element(x, i) one element (relu, bias_relu).
#pragma once

#include <cutlax/cutlax.hpp>

namespace cutlax::kernels {

template <class Fn, class TOut, class... TIn>
ffi::Error map_3d(Cuda exec, const char* name, Fn fn, Vector<TOut> out, Vector<const TIn>... in);
template <class Fn, class TOut, class... TIn>
ffi::Error map_3d(Host exec, const char* name, Fn fn, Vector<TOut> out, Vector<const TIn>... in);

template <class Fn, class T>
ffi::Error map_flat(Cuda exec, const char* name, Fn fn, Vector<T> out, Vector<const T> x);
template <class Fn, class T>
ffi::Error map_flat(Host exec, const char* name, Fn fn, Vector<T> out, Vector<const T> x);

// Elements per thread (and per CPU run): one 128-bit access per operand.
// bench/elementwise_sweep.cu on the H200, f32 2^28, 256 threads: add 4358 /
// 4149 / 3483 GB/s and relu 4198 / 3887 / 2733 GB/s for 16 / 32 / 64 bytes
// per thread: more bytes per thread means fewer, longer-lived threads, and
// here that loses to many small ones (bench/RESULTS.md).
template <class T>
inline constexpr int kElementsPerThread = 16 / sizeof(T);
inline constexpr int kThreadsPerBlock = 256;

// max(x, 0) that keeps NaN, as jnp.maximum does (a `x > 0 ? x : 0` would not).
template <class T>
CUTE_HOST_DEVICE T relu(T x) {
  return x < T(0) ? T(0) : x;
}

}  // namespace cutlax::kernels
