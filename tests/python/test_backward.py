"""The backward kernels: relu_backward and bias_relu_backward (dx and dbias
in one sweep), directly against jax.numpy on every platform (correctness),
against their models over random inputs (properties, hypothesis:
properties.py), and with bad input (errors). Inside gradients, under vmap and
sharded: transforms/."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_same, forward_and_cotangent, random, ref_backward
from hypothesis import given
from hypothesis import strategies as st
from properties import (
    F64,
    _check,
    _daz,
    _elementwise,
    _examples,
    _F32_MAX,
    _flushes,
    _invalid_operands,
    _on,
    invalid_input_test,
    _round_off,
    _same_bits,
    _widen,
    pairs,
    shapes,
)

import cutlax

SHAPES = [(5,), (7, 3), (64, 128), (3, 5, 24), (1000, 40), (4099, 8), (33, 1000)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias_relu_backward_matches_jnp(device, rng, shape, dtype):
    y, g = forward_and_cotangent(rng, shape, dtype)
    dx, dbias = jax.jit(cutlax.bias_relu_backward)(y, g)
    want_dx, want_dbias = ref_backward(y, g)
    assert_same(dx, want_dx)  # a mask: exact
    assert dbias.dtype == dtype and dbias.shape == shape[-1:]
    # float32 sums of exactly-masked values, rounded once to dtype.
    rtol = {jnp.float32: 1e-5, jnp.float16: 1e-3, jnp.bfloat16: 8e-3}[dtype]
    scale = float(np.sqrt(np.prod(shape[:-1])))
    np.testing.assert_allclose(np.asarray(dbias, np.float32), np.asarray(want_dbias),
                               rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", [(1,), (1023,), (8, 129)], ids=str)
def test_relu_backward_matches_jnp(device, rng, shape, dtype):
    y, g = cutlax.relu(random(rng, shape, dtype)), random(rng, shape, dtype)
    assert_same(jax.jit(cutlax.relu_backward)(y, g), ref_backward(y, g)[0])


def test_relu_backward_keeps_nan_masked():
    y = jnp.array([jnp.nan, 0.0, -1.0, 2.0], jnp.float32)
    g = jnp.array([5.0, 5.0, 5.0, 5.0], jnp.float32)
    assert_same(cutlax.relu_backward(y, g), jnp.array([0.0, 0.0, 0.0, 5.0], jnp.float32))


# ---------------------------------------------------------------------------
# Properties

def _mask_model(y, g, flush):
    """g where y > 0 (as the platform reads y), else +0: a select, no rounding."""
    return np.where(_daz(_widen(y), flush) > 0, g, np.zeros((), g.dtype))


@_elementwise
@_examples(30)
@given(data=st.data())
def test_relu_backward(dev, dtype, data):
    """``g where y > 0 else 0`` for any y (relu's output or not) and g: bit
    for bit against the model and jnp.where(y > 0, g, 0) on the same device
    (y NaN gives 0; a subnormal y is 0 on a flushing platform)."""
    shape = data.draw(shapes(), label="shape")
    y, g = data.draw(pairs(shape, dtype), label="y, g")
    with jax.default_device(dev):
        dy, dg = _on(dev, y, g)
        out = cutlax.relu_backward(dy, dg)
        ref = jnp.where(dy > 0, dg, jnp.zeros((), dtype))
    assert out.shape == shape and out.dtype == dtype
    model = _mask_model(y, g, _flushes(dev))
    _check(_same_bits(out, model), "relu_backward vs the model", y=y, g=g, out=out, model=model)
    _check(_same_bits(out, ref), "relu_backward vs jnp.where", y=y, g=g, out=out, jnp=ref)


def _check_column_sums(out, dx, dtype):
    """dbias against float32 summation of dx's columns in any order, rounded
    once to the dtype.

    For n rows, any order of float32 additions (the CPU twin's row chunks,
    the GPU's strided row threads and chunk sums) is within
    (n - 1) u sum|dx| of the exact sum S (u = 2^-24, first order; 1% margin),
    plus n 2^-126 where each partial sum may flush; rounding to the dtype
    adds u_T |S| and half a subnormal spacing. A column whose sum of
    magnitudes may overflow float32 depends on the order, and is not checked;
    with infinities or NaN the result is NaN (NaN, or +inf and -inf) or the
    infinity, exactly.
    """
    with np.errstate(all="ignore"):
        _check_sums(out, _widen(dx).astype(F64).reshape(-1, dx.shape[-1]), dtype)


def _check_sums(out, d, dtype):
    n = d.shape[0]
    finite = np.isfinite(d)
    magnitude = np.where(finite, np.abs(d), 0).sum(axis=0)
    exact = np.where(finite, d, 0).sum(axis=0)
    nan = np.isnan(d).any(axis=0) | ((d == np.inf).any(axis=0) & (d == -np.inf).any(axis=0))
    inf = ~nan & np.isinf(d).any(axis=0)
    checked = magnitude * (1 + 1e-3) < _F32_MAX
    o = _widen(out).astype(F64)
    u, sub = _round_off(dtype), float(jnp.finfo(dtype).smallest_subnormal)
    err = 1.01 * max(n - 1, 0) * 2.0**-24 * magnitude + n * 2.0**-126 + 2.0**-50 * magnitude
    lo, hi = exact - err, exact + err
    bound_lo, bound_hi = lo - u * np.abs(lo) - sub, hi + u * np.abs(hi) + sub
    overflow = float(jnp.finfo(dtype).max) * (1 - u)  # a sum past max (1 + u) rounds to infinity
    finite_ok = np.where(np.isposinf(o), bound_hi >= overflow,
                         np.where(np.isneginf(o), bound_lo <= -overflow, (o >= bound_lo) & (o <= bound_hi)))
    signed_inf = np.sign(np.where(np.isinf(d), d, 0).sum(axis=0))
    ok = np.where(nan, np.isnan(o), np.where(inf, o == signed_inf * np.inf, finite_ok))
    _check(~checked | ok, f"dbias over {n} rows", dbias=out, exact=exact, bound=err + u * np.abs(exact) + sub)


@_elementwise
@_examples(30)
@given(data=st.data())
def test_bias_relu_backward(dev, dtype, data):
    """``(dx, dbias)``: dx as relu_backward (bit for bit, and against
    jnp.where), dbias the float32 column sums of dx over every axis but the
    last, rounded once (_check_column_sums states the bound)."""
    shape = data.draw(shapes(min_rank=1), label="shape")
    y, g = data.draw(pairs(shape, dtype), label="y, g")
    flush = _flushes(dev)
    with jax.default_device(dev):
        dy, dg = _on(dev, y, g)
        dx, dbias = cutlax.bias_relu_backward(dy, dg)
        ref = jnp.where(dy > 0, dg, jnp.zeros((), dtype))
    assert dx.shape == shape and dx.dtype == dtype and dbias.shape == shape[-1:] and dbias.dtype == dtype
    model = _mask_model(y, g, flush)
    _check(_same_bits(dx, model), "bias_relu_backward dx vs the model", y=y, g=g, dx=dx, model=model)
    _check(_same_bits(dx, ref), "bias_relu_backward dx vs jnp.where", y=y, g=g, dx=dx, jnp=ref)
    if dx.shape[-1]:
        _check_column_sums(dbias, model, dtype)


# ---------------------------------------------------------------------------
# Errors

def test_bad_input_names_the_argument(rng):
    y = random(rng, (4, 3))
    with pytest.raises(ValueError, match=r"cutlax.bias_relu_backward: g has shape \(4, 2\) but y has shape \(4, 3\)"):
        cutlax.bias_relu_backward(y, random(rng, (4, 2)))
    with pytest.raises(TypeError, match="cutlax.relu_backward: g has dtype float16 but y has dtype float32"):
        cutlax.relu_backward(y, y.astype(jnp.float16))
    with pytest.raises(ValueError, match=r"cutlax.bias_relu_backward: y must have rank >= 1, got shape \(\)"):
        cutlax.bias_relu_backward(jnp.float32(1), jnp.float32(1))


@pytest.mark.parametrize("partials,message", [
    (jax.ShapeDtypeStruct((0, 3), jnp.float32), r"partials must have at least one row chunk, got shape \(0, 3\)"),
    (jax.ShapeDtypeStruct((2, 3), jnp.float16), "INVALID_ARGUMENT: partials has dtype float16; expected float32"),
    (jax.ShapeDtypeStruct((2, 4), jnp.float32),
     r"partials has shape \(2, 4\); expected dimension 1 to be 3 \(the width of y's last axis\)"),
])
def test_handler_rejects_a_bad_partials_buffer(device, rng, partials, message):
    # The C++ checks behind the Python ones: an ffi::Error, raised as an exception.
    y = random(rng, (4, 3))
    call = jax.ffi.ffi_call(cutlax.bias_relu_backward.target,
                            (jax.ShapeDtypeStruct(y.shape, y.dtype), jax.ShapeDtypeStruct((3,), y.dtype), partials))
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(call(y, y))


def _relu_backward_invalid_cases(shape, good, bad):
    x, xb, xo, longer, _, _ = _invalid_operands(shape, good, bad)
    return [
        (cutlax.relu_backward, (x, xo), TypeError),
        (cutlax.relu_backward, (xb, xb), TypeError),
        (cutlax.relu_backward, (x, longer), ValueError),
    ]


def _bias_relu_backward_invalid_cases(shape, good, bad):
    x, _, xo, longer, scalar, _ = _invalid_operands(shape, good, bad)
    return [
        (cutlax.bias_relu_backward, (x, xo), TypeError),
        (cutlax.bias_relu_backward, (x, longer), ValueError),
        (cutlax.bias_relu_backward, (scalar, scalar), ValueError),
    ]


test_relu_backward_invalid_input_raises_the_documented_error = invalid_input_test(
    "relu_backward", _relu_backward_invalid_cases, examples=9)


test_bias_relu_backward_invalid_input_raises_the_documented_error = invalid_input_test(
    "bias_relu_backward", _bias_relu_backward_invalid_cases, examples=9)
