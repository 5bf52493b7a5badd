"""saxpy, alpha static (a Python or NumPy number) or dynamic (a 0-d array):
against jax.numpy on every platform (correctness), against its rounding
model over random inputs (properties, hypothesis: properties.py), and bad
input (errors)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, random
from hypothesis import given
from hypothesis import strategies as st
from properties import (
    DEVICES,
    DTYPES,
    F32,
    F64,
    _check,
    _daz,
    _elementwise,
    _examples,
    _F32_TINY,
    _flushes,
    _floats,
    _fma32,
    _ftz,
    _invalid_operands,
    _narrow,
    _on,
    _platform,
    invalid_input_test,
    _same_bits,
    _widen,
    pairs,
    shapes,
)

import cutlax

# One rounding of an f32 result to the output type, against XLA's own
# rounding of 2.5 * x + y (XLA may or may not round the product first).
RTOL = {jnp.float32: 1e-6, jnp.float16: 1e-3, jnp.bfloat16: 8e-3}


def reference(alpha, x, y):
    return (alpha * x.astype(jnp.float32) + y.astype(jnp.float32)).astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (1023,), (3, 5, 7), (2**16 + 5,)], ids=str)
@pytest.mark.parametrize("static", [True, False], ids=["static", "dynamic"])
def test_matches_reference(device, rng, shape, dtype, static):
    x, y = random(rng, shape, dtype), random(rng, shape, dtype)
    alpha = 2.5 if static else jnp.float32(2.5)
    out = cutlax.saxpy(alpha, x, y)
    assert out.dtype == dtype and out.shape == shape
    np.testing.assert_allclose(
        np.asarray(out, np.float32), np.asarray(reference(2.5, x, y), np.float32),
        rtol=RTOL[dtype], atol=RTOL[dtype],
    )


def test_static_alpha_is_part_of_the_program(rng):
    x = random(rng, (16,))
    hlo_a = jax.jit(lambda x: cutlax.saxpy(2.0, x, x)).lower(x).as_text()
    hlo_b = jax.jit(lambda x: cutlax.saxpy(3.0, x, x)).lower(x).as_text()
    assert "cutlax_saxpy_v1" in hlo_a and hlo_a != hlo_b
    assert "alpha = 2.000000e+00" in hlo_a


def test_traced_alpha_takes_the_dynamic_path(device, rng):
    x, y = random(rng, (100,)), random(rng, (100,))
    f = jax.jit(lambda alpha, x, y: cutlax.saxpy(alpha, x, y))
    assert "cutlax_saxpy_dynamic_v1" in f.lower(1.0, x, y).as_text()
    for alpha in (0.5, -3.0):  # one compilation serves both values
        np.testing.assert_allclose(f(alpha, x, y), alpha * x + y, rtol=1e-6, atol=1e-6)


def test_integer_and_numpy_alpha_are_static(device, rng):
    x, y = random(rng, (10,)), random(rng, (10,))
    np.testing.assert_allclose(cutlax.saxpy(3, x, y), 3 * x + y, rtol=1e-6)
    np.testing.assert_allclose(cutlax.saxpy(np.float64(0.25), x, y), 0.25 * x + y, rtol=1e-6)


def test_non_finite_values_propagate(device):
    x = jnp.array([np.inf, np.nan, 1.0, -np.inf], jnp.float32)
    y = jnp.array([1.0, 1.0, np.inf, np.inf], jnp.float32)
    np.testing.assert_array_equal(cutlax.saxpy(2.0, x, y), 2.0 * x + y)


# ---------------------------------------------------------------------------
# Properties

def _saxpy_candidates(alpha, x, y, dtype, flush):
    """The results of alpha * x + y in float32 rounded once (an FMA), then
    rounded once to the dtype.

    The kernels compute ``fmaf(alpha, float(x), float(y))``: the GPU's FFMA,
    and the CPU twin's FMA instruction or libm's fmaf (the twin used to let
    GCC contract the expression, which it did in the x86-64-v3 run loops but
    not in the loop for an array's last elements: test_saxpy_rounds_once).
    So every element is fl(alpha x + y), within half an ulp (of the result)
    of the exact alpha x + y; a multiply then add, fl(fl(alpha x) + y), is
    not (alpha = x = 1 + 2^-12, y = -(1 + 2^-11): exact 2^-24, unfused 0).

    For 16-bit outputs the float32 result is rounded once more, to the dtype
    (within half an ulp of the dtype of the float32 result). On a flushing
    platform the operands read through DAZ and the float32 result flushes
    (FTZ), whether the hardware detects tininess before or after rounding:
    those are the candidates.
    """
    a, x, y = (_daz(v, flush) for v in (np.float32(alpha), _widen(x), _widen(y)))
    with np.errstate(all="ignore"):
        fused = _fma32(a, x, y)
        candidates = [_ftz(fused, flush)]
        if flush:  # tininess detected before rounding
            exact = np.asarray(a, F64) * np.asarray(x, F64) + np.asarray(y, F64)
            candidates.append(np.where(np.abs(exact) < _F32_TINY, np.copysign(np.float32(0), fused), fused))
    return [_narrow(c, dtype) for c in candidates]


def _check_saxpy(out, alpha, x, y, dtype, flush):
    assert out.shape == x.shape and out.dtype == dtype
    candidates = _saxpy_candidates(alpha, x, y, dtype, flush)
    ok = np.zeros(x.shape, bool)
    for c in candidates:
        ok |= _same_bits(out, c)
    _check(ok, f"saxpy(alpha={alpha!r}) is not alpha * x + y rounded once", x=x, y=y, out=out,
           fused=candidates[0])


# Static alphas: each value is a new program, so a modest set: zeros, units,
# an inexact fraction, a Python int and a NumPy float, a float32 subnormal,
# magnitudes that overflow any product, infinities and NaN.
ALPHAS = (0.0, -0.0, 1.0, -1.0, 2.5, 1 / 3, 1.0 + 2**-12, -7, np.float64(0.1), 2.0**-149, 2.0**-130, 1e30,
          3.0e38, 65504.0, np.inf, -np.inf, np.nan)


@st.composite
def saxpy_operands(draw, dtype):
    shape = draw(shapes(), label="shape")
    x, y = draw(pairs(shape, dtype), label="x, y")
    return shape, x, y


def _cancelling(alpha, x, y, dtype, data):
    """On about half the elements (when drawn), y = -fl(alpha x): the
    product's rounding error is all that is left, so FMA and multiply-add
    differ."""
    if x.size and data.draw(st.booleans(), label="cancel alpha * x"):
        with np.errstate(all="ignore"):
            minus = _narrow(-(np.float32(alpha) * _widen(x)), dtype)
        y = np.where(np.random.default_rng(x.size + 1).random(x.shape) < 0.5, minus, y)
    return y


@_elementwise
@_examples(30)
@given(data=st.data())
def test_saxpy_static_alpha(dev, dtype, data):
    """saxpy with a Python/NumPy-number alpha (an attribute, rounded to
    float32): every element one of the roundings of _saxpy_candidates."""
    alpha = data.draw(st.sampled_from(ALPHAS), label="alpha")
    shape, x, y = data.draw(saxpy_operands(dtype), label="operands")
    y = _cancelling(alpha, x, y, dtype, data)
    with jax.default_device(dev):
        out = cutlax.saxpy(alpha, *_on(dev, x, y))
    _check_saxpy(out, alpha, x, y, dtype, _flushes(dev))


@_elementwise
@_examples(30)
@given(data=st.data())
def test_saxpy_dynamic_alpha(dev, dtype, data):
    """saxpy with a 0-d array alpha (an operand, converted to float32) of
    float32, float16, bfloat16 or int32: as the static form, with alpha as
    any float the dtype holds (hypothesis' floats: NaN, inf, subnormals)."""
    alpha_dtype = data.draw(st.sampled_from(DTYPES + (np.dtype(np.int32),)), label="alpha dtype")
    if alpha_dtype == np.int32:
        alpha = np.int32(data.draw(st.integers(-2**31, 2**31 - 1), label="alpha"))
    else:
        alpha = _narrow(data.draw(_floats(alpha_dtype), label="alpha"), alpha_dtype)[()]
    shape, x, y = data.draw(saxpy_operands(dtype), label="operands")
    alpha32 = np.asarray(alpha).astype(F32)
    y = _cancelling(alpha32, x, y, dtype, data)
    with jax.default_device(dev):
        out = cutlax.saxpy(*_on(dev, np.asarray(alpha), x, y))
    _check_saxpy(out, alpha32, x, y, dtype, _flushes(dev))


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@pytest.mark.parametrize("alpha", ["static", "dynamic"])
def test_saxpy_rounds_once(dev, alpha):
    """A regression test of saxpy's docstring: arithmetic in float32,
    "rounded once". On the CPU the twin's run loops (CUTLAX_HOST_LOOP,
    x86-64-v3: GCC contracted alpha * x + y into an FMA) rounded once, but
    the element loop that finishes the last n % 256 float32 elements
    (map_runs_in_tasks, src/ops/elementwise_cpu.hpp, compiled for baseline
    x86-64) multiplied and added: the same inputs gave different results by
    position. The kernel now calls fmaf. Here fl(alpha x) loses 2^-24, which
    y cancels: the FMA keeps it, multiply-then-add gives 0."""
    a = 1.0 + 2.0**-12
    x = np.full(257, a, np.float32)
    y = np.full(257, -(1.0 + 2.0**-11), np.float32)
    alpha_arg = a if alpha == "static" else np.float32(a)
    out = np.asarray(cutlax.saxpy(*_on(dev, alpha_arg, x, y)) if alpha == "dynamic"
                     else cutlax.saxpy(alpha_arg, *_on(dev, x, y)))
    np.testing.assert_array_equal(out, np.full(257, 2.0**-24, np.float32))


# ---------------------------------------------------------------------------
# Errors

def test_alpha_must_be_a_scalar(rng):
    x = random(rng, (4,))
    with pytest.raises(ValueError, match=r"alpha must be a scalar \(shape \(\)\), got shape \(4,\)"):
        cutlax.saxpy(jnp.ones(4), x, x)
    with pytest.raises(TypeError, match="alpha must be a number"):
        cutlax.saxpy("2", x, x)
    with pytest.raises(TypeError, match="alpha must be a number"):
        cutlax.saxpy(True, x, x)


def test_x_y_mismatch(rng):
    with pytest.raises(ValueError, match=r"cutlax.saxpy: y has shape \(5,\) but x has shape \(4,\)"):
        cutlax.saxpy(1.0, random(rng, (4,)), random(rng, (5,)))


def _invalid_cases(shape, good, bad):
    x, xb, xo, longer, _, _ = _invalid_operands(shape, good, bad)
    return [
        (lambda a, b: cutlax.saxpy(2.0, a, b), (xb, xb), TypeError),
        (lambda a, b: cutlax.saxpy(2.0, a, b), (x, xo), TypeError),
        (lambda a, b: cutlax.saxpy(2.0, a, b), (x, longer), ValueError),
        (lambda a, b: cutlax.saxpy(True, a, b), (x, x), TypeError),
        (lambda a, b: cutlax.saxpy("2", a, b), (x, x), TypeError),
        (lambda a, b: cutlax.saxpy(1j, a, b), (x, x), TypeError),
        (cutlax.saxpy, (np.ones(2, np.float32), x, x), ValueError),
        (cutlax.saxpy, (np.ones((), np.int8), x, x), TypeError),
        (cutlax.saxpy, (np.ones((), np.float32), x, xo), TypeError),
    ]


test_invalid_input_raises_the_documented_error = invalid_input_test("saxpy", _invalid_cases, examples=27)
