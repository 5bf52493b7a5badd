"""cutlax.jit's Hopper launch features: TMA descriptors (``tma=``), thread
block clusters (``cluster=``) and the ``sm_count()`` launch expression.
Without a GPU: every request check at trace time, the lowered call, export
with symbolic shapes, and the TMA transpose example's CPU version. With one:
the transpose against ``x.T`` over dtypes and shapes that are not tile
multiples, cluster ranks, the multiprocessor count, a symbolic export run at
two sizes."""

import pathlib
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from conftest import needs_gpu, needs_nvrtc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "jit_tma"))
import transpose as tma_transpose  # noqa: E402  (the example module)


# Launch-feature probes: each writes what the launch gave it.
SOURCE = r"""
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
using cutlax::jit::Tensor;

// y[b] = the block's rank in its cluster; z[b] = the cluster's size in blocks.
__global__ void cluster_ranks(Tensor<const float, 1> x, Tensor<int, 1> y, Tensor<int, 1> z) {
  if (threadIdx.x == 0) {
    y(blockIdx.x) = int(cute::block_rank_in_cluster());
    const dim3 shape = cute::cluster_shape();
    z(blockIdx.x) = int(shape.x * shape.y * shape.z);
  }
}

// y[0] = gridDim.x.
__global__ void grid_size(Tensor<const float, 1> x, Tensor<int, 1> y) {
  if (blockIdx.x == 0 && threadIdx.x == 0) y(0) = int(gridDim.x);
}

// Takes a descriptor and touches nothing: for the parameter checks.
__global__ void takes_a_descriptor(Tensor<const float, 2> x, Tensor<float, 2> y,
                                   const __grid_constant__ cute::TmaDescriptor d) {}
"""


def probe(entry, **kw):
    return cutlax.jit.kernel(SOURCE, entry, **kw)


def out_like(x):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


# Requests: checked when made and when traced ------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(array=-1, box=(8,)), TypeError, "array must be an array index >= 0"),
    (dict(array=1.0, box=(8,)), TypeError, "array must be an array index"),
    (dict(array=0, box=()), ValueError, "box has 0 extents; TMA takes 1 to 5"),
    (dict(array=0, box=(1, 1, 1, 1, 1, 1)), ValueError, "box has 6 extents"),
    (dict(array=0, box=(257,)), ValueError, r"box\[0\] is 257; it must be an integer from 1 to 256"),
    (dict(array=0, box=(8, 0)), ValueError, r"box\[1\] is 0"),
    (dict(array=0, box=(8, 2.0)), ValueError, r"box\[1\] is 2.0"),
    (dict(array=0, box=(8,), swizzle=16), ValueError, "swizzle is 16; it must be one of 0, 32, 64, 128"),
    (dict(array=0, box=(8,), interleave=8), ValueError, "interleave is 8"),
    (dict(array=0, box=(8,), l2_promotion=512), ValueError, "l2_promotion is 512"),
    (dict(array=0, box=(8,), oob_fill="inf"), ValueError, "oob_fill is 'inf'"),
    (dict(array=0, box=(8, 8, 8), interleave=32, swizzle=128), ValueError, "interleave=32 needs swizzle=32"),
])
def test_a_request_is_checked_when_made(kwargs, error, match):
    array, box = kwargs.pop("array"), kwargs.pop("box")
    with pytest.raises(error, match=match):
        cutlax.jit.tma(array, box, **kwargs)


def test_requests_are_records_of_eleven_words():
    request = cutlax.jit.tma(1, [64, 32], swizzle=128, l2_promotion=256, oob_fill="nan")
    assert request.box == (64, 32)
    assert request.words() == [1, 128, 0, 256, 1, 2, 64, 32, 0, 0, 0]


@needs_nvrtc
@pytest.mark.parametrize("shape, dtype, request_, error, match", [
    ((64, 64), jnp.float32, cutlax.jit.tma(2, (8, 8)), ValueError,
     r"tma\[0\] names array x2, but the kernel has 2 arrays"),
    ((64, 64), jnp.float32, cutlax.jit.tma(0, (8,)), ValueError,
     r"the box \(8,\) has rank 1 but array x0 of shape \(64, 64\) and dtype float32 has rank 2"),
    ((64, 64), jnp.float32, cutlax.jit.tma(0, (8, 2)), ValueError,
     r"innermost extent \(2 x 4 bytes = 8 bytes\) must be a multiple of 16 bytes"),
    ((64, 64), jnp.float32, cutlax.jit.tma(0, (8, 64), swizzle=128), ValueError,
     "innermost extent is 256 bytes, more than the 128-byte swizzle span"),
    ((64, 30), jnp.float32, cutlax.jit.tma(0, (8, 4)), ValueError,
     r"its rows are 120 bytes apart; TMA needs a multiple of 16 \(pad the last axis to a multiple of 4"),
    ((64, 64), jnp.int32, cutlax.jit.tma(0, (8, 8), oob_fill="nan"), TypeError,
     "oob_fill='nan' needs a floating-point array"),
    ((64, 64), jnp.float32, cutlax.jit.tma(0, (8, 8), interleave=16), ValueError,
     "interleave needs an array of rank 3 or more"),
])
def test_a_request_is_checked_against_the_arrays_at_trace_time(shape, dtype, request_, error, match):
    k = probe("takes_a_descriptor", grid=1, block=32, tma=[request_])
    x = jax.ShapeDtypeStruct(shape, dtype)
    with pytest.raises(error, match=match) as info:
        jax.jit(lambda x: k(x, out=out_like(x))).lower(x)
    assert "cutlax.jit takes_a_descriptor: tma[0]" in str(info.value)


def test_tma_takes_only_requests():
    with pytest.raises(TypeError, match=r"tma\[0\] must come from cutlax.jit.tma"):
        probe("takes_a_descriptor", grid=1, block=32, tma=[(0, (8, 8))])


# Clusters --------------------------------------------------------------------

@pytest.mark.parametrize("grid, cluster, match", [
    (4, 0, "each dimension must be >= 1"),
    (16, 16, "at most 8 blocks"),
    ((9, 9), (3, 3), "at most 8 blocks"),
    (5, 2, "grid=5 is not a multiple of it along axis x"),
    ((4, 3), (1, 2), r"grid=\(4, 3\) is not a multiple of it along axis y"),
    (4, (1, 1, 1, 1), "has 4 dimensions"),
])
def test_a_constant_cluster_is_checked_when_the_kernel_is_made(grid, cluster, match):
    with pytest.raises(ValueError, match=match) as info:
        probe("cluster_ranks", grid=grid, block=32, cluster=cluster)
    assert str(info.value).startswith(f"cutlax.jit cluster_ranks: cluster={cluster!r}")


def test_cluster_and_sm_count_are_launch_expressions():
    x = jax.ShapeDtypeStruct((96,), jnp.float32)
    program = cutlax.jit.launch_program(lambda x: cutlax.jit.min(x.size, 2 * cutlax.jit.sm_count()), 128, [x],
                                        cluster=lambda x: (2, 1))
    assert program.tolist()[-9:] == [2, 0, 2, 2, 0, 1, 2, 0, 1]
    assert program.tolist()[:8] == [7, 2, 0, 0, 2, 10, 5, 8]  # grid.x = min(x0.size, 2 * sm_count())
    assert repr(cutlax.jit.sm_count()) == "<cutlax.jit launch expression sm_count()>"


@needs_nvrtc
def test_the_call_carries_the_requests_and_exports_with_symbolic_shapes():
    n = jax.export.symbolic_shape("n")[0]
    spec = jax.ShapeDtypeStruct((n, 64), jnp.float32)
    exp = cutlax.export.export(tma_transpose.transpose, spec, platforms=("cpu", "cuda"))
    text = exp.mlir_module()
    call = next(line for line in text.splitlines() if "cutlax_jit_v2" in line)
    # Two requests of eleven words: x's box and y's, both 32 x 32 with the 128-byte swizzle.
    words = [int(w) for w in re.findall(r"-?\d+", re.search(r"tma = (?:dense<\[|array<i64: )([^>\]]*)", call)[1])]
    assert words == [0, 128, 0, 128, 0, 2, 32, 32, 0, 0, 0, 1, 128, 0, 128, 0, 2, 32, 32, 0, 0, 0]
    # On CPU the artifact runs the cpu= function, at any n.
    for rows in (32, 100):
        x = jnp.arange(rows * 64, dtype=jnp.float32).reshape(rows, 64)
        np.testing.assert_array_equal(exp.call(x), x.T)


# The transpose example on CPU --------------------------------------------------

def test_the_transpose_example_on_cpu():
    x = jax.random.normal(jax.random.key(0), (40, 72), jnp.float32)
    np.testing.assert_array_equal(jax.jit(tma_transpose.transpose)(x), x.T)
    g = jax.grad(lambda x: jnp.sum(tma_transpose.transpose(x) * jnp.arange(40.0)))(x)
    np.testing.assert_array_equal(g, jnp.broadcast_to(jnp.arange(40.0), (72, 40)).T)
    with pytest.raises(ValueError, match=r"x.shape\[1\] = 30 must be a multiple of 4 for float32"):
        tma_transpose.transpose(jnp.zeros((8, 30), jnp.float32))
    with pytest.raises(ValueError, match="x must be 2-D"):
        tma_transpose.transpose(jnp.zeros((8,), jnp.float32))


@needs_nvrtc
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_the_transpose_example_compiles_for_hopper(dtype):
    cubin, lowered = tma_transpose.kernel(dtype).compiled()
    assert lowered.startswith("_Z9transpose") and cubin.size > 1000


# On the GPU ----------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16, jnp.int32])
@pytest.mark.parametrize("shape", [(32, 32), (4, 16), (48, 1000), (1000, 48), (1056, 2080), (16, 16384)])
def test_transpose_matches_numpy(dtype, shape):
    step = 16 // np.dtype(dtype).itemsize
    shape = tuple(-(-s // step) * step for s in shape)  # 16-byte rows both ways
    x = jax.random.normal(jax.random.key(sum(shape)), shape, jnp.float32) * 50
    x = x.astype(dtype)
    y = jax.jit(tma_transpose.transpose)(x)
    assert y.shape == shape[::-1] and y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x).T)


@needs_gpu
def test_transpose_of_an_empty_array_launches_nothing():
    x = jnp.zeros((0, 64), jnp.float32)
    assert jax.jit(tma_transpose.transpose)(x).shape == (64, 0)


@needs_gpu
def test_transpose_symbolic_export_runs_at_two_sizes():
    spec = jax.ShapeDtypeStruct((jax.export.symbolic_shape("n")[0], 96), jnp.bfloat16)
    exp = jax.export.deserialize(cutlax.export.export(tma_transpose.transpose, spec).serialize())
    for rows in (64, 1000):
        x = jax.random.normal(jax.random.key(rows), (rows, 96), jnp.float32).astype(jnp.bfloat16)
        np.testing.assert_array_equal(np.asarray(exp.call(x)), np.asarray(x).T)


@needs_gpu
@pytest.mark.parametrize("cluster, expected_size", [(1, 1), (2, 2), (4, 4), (8, 8)])
def test_a_cluster_launch_gives_each_block_its_rank(cluster, expected_size):
    k = probe("cluster_ranks", grid=lambda x: x.size, block=32, cluster=cluster)
    x = jnp.zeros((32,), jnp.float32)
    spec = jax.ShapeDtypeStruct((32,), jnp.int32)
    ranks, sizes = jax.jit(lambda x: k(x, out=(spec, spec)))(x)
    np.testing.assert_array_equal(ranks, np.arange(32) % expected_size)
    np.testing.assert_array_equal(sizes, np.full(32, expected_size))


@needs_gpu
def test_a_grid_that_is_not_a_multiple_of_the_cluster_is_an_error_at_launch():
    k = probe("cluster_ranks", grid=lambda x: x.size, block=32, cluster=2)
    x = jnp.zeros((5,), jnp.float32)
    spec = jax.ShapeDtypeStruct((5,), jnp.int32)
    with pytest.raises(Exception, match=r"grid.x is 5, not a multiple of cluster.x \(2\)"):
        jax.block_until_ready(jax.jit(lambda x: k(x, out=(spec, spec)))(x))


@needs_gpu
def test_sm_count_is_the_gpus_multiprocessor_count():
    k = probe("grid_size", grid=cutlax.jit.sm_count(), block=32)
    y = jax.jit(lambda x: k(x, out=jax.ShapeDtypeStruct((1,), jnp.int32)))(jnp.zeros((1,), jnp.float32))
    count = int(y[0])
    assert 1 <= count <= 1024
    core_count = getattr(jax.devices("gpu")[0], "core_count", None)
    if core_count:
        assert count == core_count
