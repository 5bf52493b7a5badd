"""A tiled transpose written as a ``cutlax.jit`` kernel with TMA descriptors.

Each block moves one square tile: one TMA load brings the tile of x into
shared memory (swizzled, so the transposing reads and writes spread over the
banks), the threads write it transposed into a second tile, and one TMA store
puts that tile into y. TMA clips both ends at the arrays' edges, so any shape
works with no bounds checks in the kernel (rows must be 16-byte multiples,
which TMA needs of every array it reads or writes).

    y = transpose(x)          # x: (M, N) float32 / bfloat16 / float16 / ..., y: (N, M)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import cutlax

SOURCE = r"""
#include <cutlax/jit/hopper.hpp>

using cutlax::jit::Tensor;
using cutlax::jit::TmaDescriptor;

// A tile row is one 128-byte swizzle span; the tile is square.
template <class T>
constexpr int kTile = 128 / int(sizeof(T));

// Where TMA's 128-byte swizzle puts element (r, c) of a tile whose rows are
// 128 bytes: the 16-byte chunk index is XORed with the row's low 3 bits. The
// tile must start 1024-byte aligned, as the pattern follows address bits.
template <class T>
__device__ int swizzled(int r, int c) {
  const int byte = r * 128 + c * int(sizeof(T));
  return (byte ^ ((r & 7) << 4)) / int(sizeof(T));
}

template <class T>
__global__ void __launch_bounds__(128) transpose(Tensor<const T, 2> x, Tensor<T, 2> y,
                                                 const __grid_constant__ TmaDescriptor load_x,
                                                 const __grid_constant__ TmaDescriptor store_y) {
  constexpr int tile = kTile<T>;
  __shared__ alignas(1024) T in[tile * tile];
  __shared__ alignas(1024) T out[tile * tile];
  __shared__ uint64_t loaded;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  const int row0 = blockIdx.y * tile, col0 = blockIdx.x * tile;
  if (threadIdx.x == 0) {
    cutlax::jit::prefetch(&load_x);
    Barrier::init(&loaded, 1);
    cutlass::arch::fence_barrier_init();  // the TMA unit sees the initialised barrier
    Barrier::arrive_and_expect_tx(&loaded, sizeof(in));
    cutlax::jit::tma_load(&load_x, &loaded, in, row0, col0);
  }
  __syncthreads();  // nobody waits on the barrier before it exists
  Barrier::wait(&loaded, 0);
  for (int i = threadIdx.x; i < tile * tile; i += blockDim.x) {
    const int r = i / tile, c = i % tile;
    out[swizzled<T>(c, r)] = in[swizzled<T>(r, c)];
  }
  cutlax::jit::tma_store_fence();  // ordinary smem writes, read next by the TMA unit
  __syncthreads();
  if (threadIdx.x == 0) {
    cutlax::jit::tma_store(&store_y, out, col0, row0);
    cutlax::jit::tma_store_commit();
    cutlax::jit::tma_store_wait<0>();  // the tile stays until TMA has read it
  }
}
"""

THREADS = 128


def _tile(dtype) -> int:
    return 128 // np.dtype(dtype).itemsize


@functools.lru_cache(maxsize=None)
def kernel(dtype) -> cutlax.jit.Kernel:
    """The transpose kernel for ``dtype``: one block per tile, 128 threads."""
    tile = _tile(dtype)
    entry = f"transpose<{cutlax.jit.cpp_type(dtype)}>"
    op = cutlax.jit.kernel(
        SOURCE, entry,
        grid=lambda x: (cutlax.jit.cdiv(x.shape[1], tile), cutlax.jit.cdiv(x.shape[0], tile)),
        block=THREADS,
        tma=[cutlax.jit.tma(0, (tile, tile), swizzle=128),   # x's tile at (row0, col0)
             cutlax.jit.tma(1, (tile, tile), swizzle=128)],  # y's tile at (col0, row0)
        cpu=lambda x: x.T)
    op.def_shape(lambda x: jax.ShapeDtypeStruct(x.shape[::-1], x.dtype))
    op.def_vjp(lambda args, out, dy: (transpose(dy),))
    return op


def transpose(x: jax.Array) -> jax.Array:
    """``x.T`` for a 2-D array whose rows and columns are each a multiple of
    16 bytes (TMA's pitch rule: y's rows are x's columns)."""
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"transpose: x must be 2-D, got shape {x.shape}")
    itemsize = x.dtype.itemsize
    for axis in (0, 1):
        if isinstance(x.shape[axis], int) and (x.shape[axis] * itemsize) % 16:
            raise ValueError(f"transpose: x.shape[{axis}] = {x.shape[axis]} must be a multiple of "
                             f"{16 // itemsize} for {x.dtype} (TMA needs 16-byte rows in x and in x.T)")
    return kernel(x.dtype)(x)
