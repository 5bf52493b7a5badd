import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_same, random

import cutlax


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (1000,), (3, 5, 7), (2**20 + 3,), (0,)], ids=str)
def test_relu_matches_jax_nn_exactly(device, rng, shape, dtype):
    x = random(rng, shape, dtype)
    assert_same(cutlax.relu(x), jax.nn.relu(x))


def test_relu_nan_inf(device):
    x = jnp.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0, 2.0], jnp.float32)
    assert_same(cutlax.relu(x), jax.nn.relu(x))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize(
    "shape", [(1,), (7,), (5, 3), (4, 8), (3, 5, 7), (33, 1000), (2, 3, 4, 16), (1025, 129)], ids=str
)
def test_bias_relu_matches_jnp_exactly(device, rng, shape, dtype):
    x, bias = random(rng, shape, dtype), random(rng, shape[-1:], dtype)
    assert_same(cutlax.bias_relu(x, bias), jax.nn.relu(x + bias))


def test_bias_relu_empty_and_zero_width(device, rng):
    for shape in [(0, 4), (3, 0)]:
        x, bias = random(rng, shape), random(rng, shape[-1:])
        assert_same(cutlax.bias_relu(x, bias), jax.nn.relu(x + bias))


def test_bias_relu_nan_inf(device):
    x = jnp.array([[np.nan, 1.0, -np.inf], [np.inf, -2.0, 3.0]], jnp.float32)
    bias = jnp.array([1.0, np.nan, np.inf], jnp.float32)
    assert_same(cutlax.bias_relu(x, bias), jax.nn.relu(x + bias))


def test_bias_relu_inside_jit(device, rng):
    x, bias = random(rng, (64, 32)), random(rng, (32,))
    f = jax.jit(lambda x, b: cutlax.bias_relu(x @ x.T[:, :32], b) * 2)
    np.testing.assert_allclose(f(x, bias), jax.nn.relu(x @ x.T[:, :32] + bias) * 2, rtol=1e-5, atol=1e-5)


def test_bias_of_wrong_length(rng):
    with pytest.raises(ValueError, match=r"bias has shape \(7,\); expected \(8,\), the width of x's last axis"):
        cutlax.bias_relu(random(rng, (3, 8)), random(rng, (7,)))


def test_bias_of_wrong_rank(rng):
    with pytest.raises(ValueError, match=r"bias has shape \(1, 8\); expected \(8,\)"):
        cutlax.bias_relu(random(rng, (3, 8)), random(rng, (1, 8)))


def test_bias_relu_needs_rank_one(rng):
    with pytest.raises(ValueError, match=r"x must have rank >= 1, got shape \(\)"):
        cutlax.bias_relu(random(rng, ()), random(rng, (1,)))


def test_bias_dtype_mismatch(rng):
    with pytest.raises(TypeError, match="bias has dtype bfloat16 but x has dtype float32"):
        cutlax.bias_relu(random(rng, (3, 8)), random(rng, (8,), jnp.bfloat16))


def test_relu_unsupported_dtype():
    with pytest.raises(TypeError, match="cutlax.relu: x has dtype int32"):
        cutlax.relu(jnp.ones(3, jnp.int32))
