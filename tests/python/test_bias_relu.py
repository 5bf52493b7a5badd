"""bias_relu (relu of x plus a bias over the last axis): against jax.numpy
on every platform (correctness), against its model over random inputs
(properties, hypothesis: properties.py), and bad input (errors)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_same, random
from hypothesis import given
from hypothesis import strategies as st
from properties import (
    _check,
    _daz,
    _elementwise,
    _examples,
    _flushes,
    _ftz,
    _invalid_operands,
    _narrow,
    _on,
    invalid_input_test,
    _same_bits,
    _same_value,
    _widen,
    arrays,
    shapes,
)

import cutlax

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


# ---------------------------------------------------------------------------
# Properties

@_elementwise
@_examples(30)
@given(data=st.data())
def test_bias_relu(dev, dtype, data):
    """``max(x + bias, 0)``, bias over the last axis: the float32 sum (the
    correctly rounded sum, as for vector_add), relu in float32, rounded once
    to the dtype; value for value the same as jnp.maximum(x + bias, 0) on the
    same device (rounding the sum first and then taking relu gives the same
    value: rounding is monotonic and keeps 0); bit for bit against the model,
    whose zeros are +0 as relu's are."""
    shape = data.draw(shapes(min_rank=1), label="shape")
    x = data.draw(arrays(shape, dtype), label="x")
    bias = data.draw(arrays(shape[-1:], dtype), label="bias")
    if x.size and data.draw(st.booleans(), label="bias cancels x"):
        x = np.where(np.random.default_rng(x.size).random(shape) < 0.5, -bias, x)
    flush = _flushes(dev)
    with jax.default_device(dev):
        dx, dbias = _on(dev, x, bias)
        out = cutlax.bias_relu(dx, dbias)
        ref = jnp.maximum(dx + dbias, jnp.zeros((), dtype))
    assert out.shape == shape and out.dtype == dtype
    with np.errstate(all="ignore"):
        s = _ftz(_daz(_widen(x), flush) + _daz(_widen(bias), flush), flush)
    model = _narrow(np.where(np.isnan(s) | (s > 0), s, 0), dtype)
    _check(_same_bits(out, model), "bias_relu vs the model", x=x, bias=bias, out=out, model=model)
    _check(_same_value(out, ref), "bias_relu vs jnp", x=x, bias=bias, out=out, jnp=ref)


# ---------------------------------------------------------------------------
# Errors

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


def _invalid_cases(shape, good, bad):
    x, xb, _, _, scalar, other = _invalid_operands(shape, good, bad)
    return [
        (cutlax.bias_relu, (xb, np.ones(shape[-1:], bad)), TypeError),
        (cutlax.bias_relu, (x, np.ones(shape[-1:], other)), TypeError),
        (cutlax.bias_relu, (x, np.ones((shape[-1] + 1,), good)), ValueError),
        (cutlax.bias_relu, (x, np.ones((1,) + shape[-1:], good)), ValueError),
        (cutlax.bias_relu, (scalar, np.ones((1,), good)), ValueError),
    ]


test_invalid_input_raises_the_documented_error = invalid_input_test("bias_relu", _invalid_cases, examples=15)
