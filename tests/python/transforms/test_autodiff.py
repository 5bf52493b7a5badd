"""Derivatives of every op: jax.test_util.check_grads against finite
differences (float32), bf16 gradients against jax.numpy's, second order for
the elementwise ops, the backward kernels inside gradients (and their own
derivatives), and a small MLP trained with cutlax ops."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import forward_and_cotangent, random
from jax.test_util import check_grads

import cutlax
from cutlax.cli.bench import mlp_train

# float32 gemm in true FP32 (the default multiplies in TF32).
TILED_GEMM = functools.partial(cutlax.gemm, impl="tiled")

# Finite differences in float32: step 1e-2, agreement to 2e-2.
TOL = dict(atol=2e-2, rtol=2e-2, eps=1e-2)

ELEMENTWISE = {
    "vector_add": (lambda a, b: cutlax.vector_add(a, b), lambda a, b: a + b),
    "saxpy_static": (lambda a, b: cutlax.saxpy(1.5, a, b), lambda a, b: 1.5 * a + b),
    "relu": (lambda a, b: cutlax.relu(a) * b, lambda a, b: jax.nn.relu(a) * b),
    "bias_relu": (lambda a, b: cutlax.bias_relu(a, b[0]), lambda a, b: jax.nn.relu(a + b[0])),
}


def away_from_kinks(rng, shape):
    """Values at least 0.5 from zero, so finite differences never cross relu's kink."""
    v = rng.standard_normal(shape)
    return jnp.asarray(np.sign(v) * (0.5 + np.abs(v)), jnp.float32)


@pytest.mark.parametrize("op", list(ELEMENTWISE))
def test_elementwise_first_and_second_order(rng, op):
    fn, _ = ELEMENTWISE[op]
    a = away_from_kinks(rng, (5, 6))
    b = jnp.clip(random(rng, (5, 6)), -1, 1) * (0.2 if op == "bias_relu" else 1.0)
    check_grads(fn, (a, b), order=2, modes=("fwd", "rev"), **TOL)


def test_saxpy_dynamic_alpha_gradient(rng):
    x, y = random(rng, (7,)), random(rng, (7,))
    check_grads(lambda alpha, x, y: cutlax.saxpy(alpha, x, y), (jnp.float32(0.7), x, y),
                order=2, modes=("fwd", "rev"), **TOL)
    g = jax.grad(lambda alpha: cutlax.saxpy(alpha, x, y).sum())(jnp.float32(2.0))
    np.testing.assert_allclose(g, x.sum(), rtol=1e-5)


def test_bias_gradient_is_a_column_sum(rng):
    x, bias = random(rng, (9, 4)), random(rng, (4,))
    gx, gb = jax.grad(lambda x, b: cutlax.bias_relu(x, b).sum(), argnums=(0, 1))(x, bias)
    mask = (x + bias > 0).astype(jnp.float32)
    np.testing.assert_array_equal(gx, mask)
    np.testing.assert_allclose(gb, mask.sum(axis=0), rtol=1e-6)


def test_gemm_reverse_mode(rng):
    a, b = random(rng, (6, 5)), random(rng, (5, 4))
    check_grads(lambda a, b: TILED_GEMM(a, b), (a, b), order=1, modes=("rev",), **TOL)
    ga, gb = jax.grad(lambda a, b: jnp.sum(jnp.sin(TILED_GEMM(a, b))), argnums=(0, 1))(a, b)
    ra, rb = jax.grad(lambda a, b: jnp.sum(jnp.sin(jnp.matmul(a, b, precision="highest"))), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, ra, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gb, rb, rtol=1e-5, atol=1e-5)


def test_gemm_forward_mode_says_to_use_grad(rng):
    a = random(rng, (3, 3))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(TILED_GEMM, (a, a), (a, a))


@pytest.mark.parametrize("op", ["vector_add", "saxpy_static", "relu", "bias_relu"])
def test_bf16_gradients_match_jnp(rng, op):
    ours, ref = ELEMENTWISE[op]
    a, b = random(rng, (8, 16), jnp.bfloat16), random(rng, (8, 16), jnp.bfloat16)
    g_ours = jax.grad(lambda a, b: ours(a, b).astype(jnp.float32).sum(), argnums=(0, 1))(a, b)
    g_ref = jax.grad(lambda a, b: ref(a, b).astype(jnp.float32).sum(), argnums=(0, 1))(a, b)
    for got, want in zip(g_ours, g_ref):
        assert got.dtype == jnp.bfloat16
        # One bf16 rounding apart at most: 2^-7 relative.
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=8e-3, atol=8e-3)


def mlp_losses(layer):
    return np.array(mlp_train(layer, batch=64, width=32, steps=8)[0])


def test_mlp_trains_like_the_jnp_model():
    ours = mlp_losses(lambda h, w, b: cutlax.bias_relu(TILED_GEMM(h, w), b))
    ref = mlp_losses(lambda h, w, b: jax.nn.relu(jnp.matmul(h, w, precision="highest") + b))
    assert ours[-1] < ours[0]  # it learns
    np.testing.assert_allclose(ours, ref, rtol=1e-5)


def test_gradients_run_the_backward_kernels(rng):
    x, bias = random(rng, (16, 8)), random(rng, (8,))
    hlo = jax.jit(jax.grad(lambda x, b: cutlax.bias_relu(x, b).sum(), (0, 1))).lower(x, bias).as_text()
    assert cutlax.bias_relu_backward.target in hlo
    hlo = jax.jit(jax.grad(lambda x: cutlax.relu(x).sum())).lower(x).as_text()
    assert cutlax.relu_backward.target in hlo
    # Forward mode keeps XLA's fused mask: no backward kernel.
    hlo = jax.jit(lambda x, t: jax.jvp(cutlax.relu, (x,), (t,))).lower(x, x).as_text()
    assert cutlax.relu_backward.target not in hlo


def test_backward_ops_are_differentiable(rng):
    y, g = forward_and_cotangent(rng, (6, 5), jnp.float32)
    from jax.test_util import check_grads
    check_grads(lambda g: cutlax.bias_relu_backward(y, g), (g,), order=2, modes=("fwd", "rev"))
    check_grads(lambda g: cutlax.relu_backward(y, g), (g,), order=2, modes=("fwd", "rev"))
