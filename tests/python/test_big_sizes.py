"""Sizes past 32-bit indexing, on the GPU: every elementwise op on more than
2^31 elements and GEMMs whose output has more than 2^31 elements, so an index
or offset that wraps at 2^31 (int32 arithmetic anywhere in a kernel or its
launcher) shows as a wrong element; and a size a kernel cannot take is an
error, not a wrong answer.

The inputs are small integers, exactly representable in bfloat16, so every
result is exact and compared bit for bit against jax.numpy on the same
device, on the whole array (the comparison is one fused XLA reduction, so it
needs no host copy). Each test holds 10-20 GB of device memory.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import cutlax

from conftest import GPUS

pytestmark = pytest.mark.gpu

# 523,905 rows of 4,099 (prime) columns: 2^31 + 2,947 elements, a multiple of
# no block, tile or vector width.
ROWS, COLS = 523_905, 4_099
assert ROWS * COLS > 2**31


def _pattern(shape, seed: int, lo: int = -6, hi: int = 6):
    """Integers in [lo, hi] that vary along both axes (no period that a
    wrapped index would land on by luck), as bfloat16, built on the GPU."""
    rows = jax.lax.broadcasted_iota(jnp.int32, shape, 0)
    cols = jax.lax.broadcasted_iota(jnp.int32, shape, 1)
    values = (rows * 7 + cols * 13 + seed) % (hi - lo + 1) + lo
    return values.astype(jnp.bfloat16)


@pytest.fixture(scope="module")
def big():
    with jax.default_device(GPUS[0]):
        make = jax.jit(_pattern, static_argnums=(0, 1))
        x, y = make((ROWS, COLS), 0), make((ROWS, COLS), 5)
        bias = jax.jit(lambda: _pattern((1, COLS), 3)[0])()
        yield x, y, bias  # (ROWS, COLS), (ROWS, COLS), (COLS,)


@jax.jit
def _same(a, b):
    return jnp.all(a == b)


def _check(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert bool(_same(got, expected)), "differs from jax.numpy"


ELEMENTWISE = {
    "vector_add": (lambda x, y, b: cutlax.vector_add(x, y), lambda x, y, b: x + y),
    "saxpy": (lambda x, y, b: cutlax.saxpy(0.5, x, y), lambda x, y, b: 0.5 * x + y),
    "saxpy_dynamic": (lambda x, y, b: cutlax.saxpy(jnp.float32(-2.0), x, y), lambda x, y, b: -2.0 * x + y),
    "relu": (lambda x, y, b: cutlax.relu(x), lambda x, y, b: jax.nn.relu(x)),
    "relu_backward": (lambda x, y, b: cutlax.relu_backward(x, y), lambda x, y, b: jnp.where(x > 0, y, 0)),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_past_two_to_the_31(big, name):
    x, y, _ = big
    op, reference = ELEMENTWISE[name]
    flat = lambda fn: jax.jit(lambda x, y: fn(x.reshape(-1), y.reshape(-1), None).astype(x.dtype))  # noqa: E731
    _check(flat(op)(x, y), flat(reference)(x, y))


def test_bias_relu_and_its_backward_past_two_to_the_31(big):
    x, g, bias = big
    y = jax.jit(cutlax.bias_relu)(x, bias)
    _check(y, jax.jit(lambda x, b: jax.nn.relu(x + b))(x, bias))
    dx, dbias = jax.jit(cutlax.bias_relu_backward)(y, g)
    expected_dx = jax.jit(lambda y, g: jnp.where(y > 0, g, 0).astype(g.dtype))(y, g)
    _check(dx, expected_dx)
    # The column sums are integers below 2^24, exact in float32, then rounded
    # once to bfloat16: the same value whatever the summation order.
    _check(dbias, jax.jit(lambda dx: dx.astype(jnp.float32).sum(axis=0).astype(dx.dtype))(expected_dx))


# M * N = 46,341 * 46,344 = 2^31 + 143,656 output elements; N a multiple of 8
# (TMA's 16-byte rows), M and K of nothing in particular.
M, N, K = 46_341, 46_344, 40


@pytest.mark.parametrize("dtype, impl, activation", [
    (jnp.bfloat16, "auto", None),
    (jnp.bfloat16, "auto", "relu"),
    (jnp.float32, "tiled", None),
])
def test_gemm_output_past_two_to_the_31(dtype, impl, activation):
    assert M * N > 2**31
    with jax.default_device(GPUS[0]):
        a = jax.jit(_pattern, static_argnums=(0, 1, 2, 3))((M, K), 1, -2, 2).astype(dtype)
        b = jax.jit(_pattern, static_argnums=(0, 1, 2, 3))((K, N), 2, -2, 2).astype(dtype)
        bias = jax.jit(lambda: _pattern((1, N), 4)[0].astype(dtype))()
        # |sums| <= 40 * 4 + 6: integers exact in bfloat16's 8 bits and in TF32.
        got = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation, impl=impl))(a, b, bias)

        def reference(a, b, bias):
            z = jnp.matmul(a, b, preferred_element_type=jnp.float32, precision="highest") + bias
            return (jax.nn.relu(z) if activation else z).astype(dtype)

        _check(got, jax.jit(reference)(a, b, bias))


def test_a_grid_too_large_for_the_tiled_gemm_is_an_error():
    # The tiled SGEMM's grid has one block per 128 columns in grid.y, at most
    # 65,535 of them: wider B is refused before any launch.
    with jax.default_device(GPUS[0]):
        a = jnp.ones((1, 1), jnp.float32)
        b = jnp.ones((1, 65_535 * 128 + 1), jnp.float32)
        with pytest.raises(jax.errors.JaxRuntimeError, match=r"b has too many columns for one launch"):
            jax.block_until_ready(cutlax.gemm(a, b, impl="tiled"))
        assert float(cutlax.gemm(a, b[:, :128], impl="tiled").sum()) == 128.0  # and the next call works
