"""jax.vmap over leading and inner axes, and nested, for every op."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same, forward_and_cotangent, random, ref_backward

import cutlax

# float32 gemm in true FP32 (the default multiplies in TF32).
TILED_GEMM = functools.partial(cutlax.gemm, impl="tiled")

HIGH = dict(precision="highest")
CASES = {
    # name: (cutlax fn, reference, argument shapes)
    "vector_add": (cutlax.vector_add, lambda a, b: a + b, [(4, 6), (4, 6)]),
    "saxpy": (lambda x, y: cutlax.saxpy(2.0, x, y), lambda x, y: 2.0 * x + y, [(4, 6), (4, 6)]),
    "saxpy_dynamic": (lambda a, x: cutlax.saxpy(a, x, x), lambda a, x: a * x + x, [(), (4, 6)]),
    "relu": (cutlax.relu, jax.nn.relu, [(4, 6)]),
    "bias_relu": (cutlax.bias_relu, lambda x, b: jax.nn.relu(x + b), [(4, 6), (6,)]),
    "gemm": (TILED_GEMM, lambda a, b: jnp.matmul(a, b, **HIGH), [(4, 6), (6, 3)]),
}


def batched(rng, shapes, axis, size=3):
    return [random(rng, s[:axis] + (size,) + s[axis:]) for s in shapes]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_every_argument(rng, name, axis):
    fn, ref, shapes = CASES[name]
    axes = [min(axis, len(s)) for s in shapes]
    args = [random(rng, s[:a] + (3,) + s[a:]) for s, a in zip(shapes, axes)]
    out = jax.vmap(fn, in_axes=tuple(axes))(*args)
    np.testing.assert_allclose(out, jax.vmap(ref, in_axes=tuple(axes))(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_first_argument_only(rng, name):
    fn, ref, shapes = CASES[name]
    args = [random(rng, (3,) + shapes[0])] + [random(rng, s) for s in shapes[1:]]
    in_axes = (0,) + (None,) * (len(shapes) - 1)
    np.testing.assert_allclose(jax.vmap(fn, in_axes=in_axes)(*args),
                               jax.vmap(ref, in_axes=in_axes)(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_nested_vmap(rng, name):
    fn, ref, shapes = CASES[name]
    args = [random(rng, (2, 3) + s) for s in shapes]
    np.testing.assert_allclose(jax.vmap(jax.vmap(fn))(*args), jax.vmap(jax.vmap(ref))(*args),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0)], ids=str)
def test_gemm_with_one_shared_operand_is_one_launch(rng, in_axes):
    a, b = random(rng, (3, 4, 6)), random(rng, (3, 6, 5))
    a, b = (a if in_axes[0] == 0 else a[0]), (b if in_axes[1] == 0 else b[0])
    text = jax.jit(jax.vmap(TILED_GEMM, in_axes=in_axes)).lower(a, b).as_text()
    assert text.count("cutlax_gemm_tiled_v1") == 1 and "while" not in text


def test_bias_relu_batched_over_x_only_is_one_launch(rng):
    x, bias = random(rng, (3, 4, 6)), random(rng, (6,))
    text = jax.jit(jax.vmap(cutlax.bias_relu, in_axes=(0, None))).lower(x, bias).as_text()
    assert text.count("cutlax_bias_relu_v1") == 1


@pytest.mark.parametrize("in_axes", [0, 1, (0, None)], ids=str)
def test_vector_add_vmap(device, rng, in_axes):
    a, b = random(rng, (4, 6)), random(rng, (4, 6))
    if in_axes == (0, None):
        b = b[0]
    out = jax.vmap(cutlax.vector_add, in_axes=in_axes)(a, b)
    np.testing.assert_array_equal(out, jax.vmap(lambda p, q: p + q, in_axes=in_axes)(a, b))


def test_saxpy_vmap(device, rng):
    # atol 1e-6: the CUDA kernel contracts a*x+y into one FMA, XLA may round twice.
    x, y = random(rng, (3, 40)), random(rng, (3, 40))
    alphas = jnp.array([0.5, -2.0, 3.0], jnp.float32)
    np.testing.assert_allclose(jax.vmap(lambda x, y: cutlax.saxpy(2.5, x, y))(x, y), 2.5 * x + y,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(lambda a, x, y: cutlax.saxpy(a, x, y))(alphas, x, y),
                               alphas[:, None] * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(lambda x: cutlax.saxpy(jnp.float32(2.0), x, y[0]))(x),
                               2.0 * x + y[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("in_axes", [0, 1, (None, 0)], ids=str)
def test_vmap_keeps_a_dbias_per_batch_element(rng, in_axes):
    y, g = forward_and_cotangent(rng, (3, 4, 6), jnp.float32)
    if in_axes == (None, 0):
        y = y[0]
    dx, dbias = jax.vmap(cutlax.bias_relu_backward, in_axes=in_axes)(y, g)
    want = jax.vmap(ref_backward, in_axes=in_axes)(y, g)
    assert_same(dx, want[0])
    np.testing.assert_allclose(dbias, want[1], rtol=1e-5, atol=1e-5)
