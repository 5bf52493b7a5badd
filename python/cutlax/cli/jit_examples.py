"""ReLU and bias+ReLU written as cutlax.jit kernels, as a user would: the
demo's step 8 and the benchmark's jit rows (next to the built-in ops).

Each thread moves one 16-byte run (4 floats, 8 halves) with one vector load
and store, as the built-in kernels do; XLA's buffers are 16-byte aligned, so
every run is.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cutlax import jit, op

SOURCE = r"""
using cutlax::jit::Tensor;

template <class T, int N>
struct alignas(sizeof(T) * N) Run {
  T v[N];
};

template <class T>
__global__ void relu(Tensor<const T, 1> x, Tensor<T, 1> y) {
  constexpr int kRun = 16 / sizeof(T);
  const int64_t n = cute::size(x);
  const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * kRun;
  const T* in = cute::raw_pointer_cast(x.data());
  T* out = cute::raw_pointer_cast(y.data());
  if (first + kRun <= n) {
    Run<T, kRun> r = *reinterpret_cast<const Run<T, kRun>*>(in + first);
    for (int j = 0; j < kRun; ++j) r.v[j] = r.v[j] < T(0) ? T(0) : r.v[j];
    *reinterpret_cast<Run<T, kRun>*>(out + first) = r;
  } else {  // the run that crosses the end, element by element
    for (int64_t i = first; i < n; ++i) out[i] = in[i] < T(0) ? T(0) : in[i];
  }
}

// Width is static (a template argument). Runs stay inside a row when Width
// is a multiple of the run; otherwise each thread takes one element.
template <class T, int Width>
__global__ void bias_relu(Tensor<const T, 2> x, Tensor<const T, 1> bias, Tensor<T, 2> y) {
  constexpr int kRun = Width % (16 / sizeof(T)) == 0 ? 16 / sizeof(T) : 1;
  const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * kRun;
  if (first >= cute::size(x)) return;
  const int64_t col = first % Width;
  Run<T, kRun> r = *reinterpret_cast<const Run<T, kRun>*>(cute::raw_pointer_cast(x.data()) + first);
  const Run<T, kRun> b = *reinterpret_cast<const Run<T, kRun>*>(cute::raw_pointer_cast(bias.data()) + col);
  for (int j = 0; j < kRun; ++j) {
    const T v = r.v[j] + b.v[j];
    r.v[j] = v < T(0) ? T(0) : v;
  }
  *reinterpret_cast<Run<T, kRun>*>(cute::raw_pointer_cast(y.data()) + first) = r;
}
"""

THREADS = 256


def elements_per_thread(dtype, width=None) -> int:
    """The elements one thread moves: a 16-byte run, or one element where
    bias_relu's width is not a multiple of the run."""
    run = 16 // jnp.dtype(dtype).itemsize
    return run if width is None or width % run == 0 else 1


@functools.lru_cache(maxsize=None)
def relu(dtype) -> jit.Kernel:
    per_block = THREADS * elements_per_thread(dtype)
    kernel = jit.kernel(SOURCE, f"relu<{jit.cpp_type(dtype)}>", grid=lambda x: jit.cdiv(x.size, per_block),
                        block=THREADS, cpu=jax.nn.relu)
    kernel.def_shape(op.same_as(0))
    return kernel


@functools.lru_cache(maxsize=None)
def bias_relu(dtype, width: int) -> jit.Kernel:
    per_block = THREADS * elements_per_thread(dtype, width)
    kernel = jit.kernel(SOURCE, f"bias_relu<{jit.cpp_type(dtype)}, {width}>",
                        grid=lambda x, b: jit.cdiv(x.size, per_block), block=THREADS,
                        cpu=lambda x, b: jax.nn.relu(x + b))
    kernel.def_shape(op.same_as(0))
    return kernel
