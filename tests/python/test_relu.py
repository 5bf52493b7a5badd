"""relu: against jax.nn.relu on every platform (correctness), against its
model over random inputs (properties, hypothesis: properties.py), and bad
input (errors)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_same, random
from hypothesis import given
from hypothesis import strategies as st
from properties import (
    DEVICES,
    F32,
    _check,
    _daz,
    _elementwise,
    _examples,
    _flushes,
    _invalid_operands,
    _isnan,
    _name,
    _on,
    _platform,
    invalid_input_test,
    _same_bits,
    _widen,
    arrays,
    shapes,
)

import cutlax

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (1000,), (3, 5, 7), (2**20 + 3,), (0,)], ids=str)
def test_relu_matches_jax_nn_exactly(device, rng, shape, dtype):
    x = random(rng, shape, dtype)
    assert_same(cutlax.relu(x), jax.nn.relu(x))


def test_relu_nan_inf(device):
    x = jnp.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0, 2.0], jnp.float32)
    assert_same(cutlax.relu(x), jax.nn.relu(x))


# ---------------------------------------------------------------------------
# Properties

@_elementwise
@_examples(30)
@given(data=st.data())
def test_relu(dev, dtype, data):
    """``max(x, 0)``, no rounding: x itself (bit for bit) where x > 0 as the
    platform reads it, infinity included; NaN where x is NaN (as jax.nn.relu,
    the docstring's promise); +0 (bit for bit) everywhere else, -0 included,
    as jnp.maximum(x, 0) gives. A flushing platform (XLA:CPU's DAZ) reads a
    subnormal as a zero of its sign, so relu gives +0 for it, as XLA's own
    relu on that platform does."""
    shape = data.draw(shapes(), label="shape")
    x = data.draw(arrays(shape, dtype), label="x")
    flush = _flushes(dev)
    with jax.default_device(dev):
        out = cutlax.relu(*_on(dev, x))
    assert out.shape == shape and out.dtype == dtype
    nan, kept = _isnan(x), _daz(_widen(x), flush) > 0
    ok = np.where(kept, _same_bits(out, x), True)
    ok &= np.where(nan, _isnan(out), True)
    ok &= np.where(~kept & ~nan, _same_bits(out, np.zeros_like(x)), True)
    _check(ok, "relu", x=x, out=out)


@pytest.mark.parametrize("dtype", [F32, np.dtype(jnp.bfloat16)], ids=_name)
@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
def test_relu_of_a_negative_subnormal_is_not_negative(dev, dtype):
    """A regression test: relu's kernel was ``to_float(x) < 0 ? 0 : x``
    (src/ops/elementwise.hpp). Under XLA:CPU's DAZ a negative float32 (or
    bfloat16, widened to float32 by a shift) subnormal compares as -0, not
    below 0, so the CPU twin returned it unchanged: relu(-1e-45) == -1e-45
    (jax.nn.relu gives 0, the GPU 0). It is now ``x > 0 || x != x ? x : 0``,
    which gives +0 there (and for -0.0, as jnp.maximum does)."""
    x = -np.array([jnp.finfo(dtype).smallest_subnormal, float(jnp.finfo(dtype).tiny) / 2], dtype)
    out = _widen(cutlax.relu(*_on(dev, x)))
    assert np.all(out >= 0), out


# ---------------------------------------------------------------------------
# Errors

def test_relu_unsupported_dtype():
    with pytest.raises(TypeError, match="cutlax.relu: x has dtype int32"):
        cutlax.relu(jnp.ones(3, jnp.int32))


def _invalid_cases(shape, good, bad):
    _, xb, _, _, _, _ = _invalid_operands(shape, good, bad)
    return [
        (cutlax.relu, (xb,), TypeError),
    ]


test_invalid_input_raises_the_documented_error = invalid_input_test("relu", _invalid_cases, examples=6)
