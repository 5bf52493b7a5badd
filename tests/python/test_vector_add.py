"""vector_add: against jax.numpy on every platform (correctness), against
its rounding model over random inputs (properties, hypothesis: properties.py),
and bad input (errors)."""

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
    _widen,
    pairs,
    shapes,
)

import cutlax

SHAPES = [(), (1,), (1000,), (1024,), (3, 5, 7), (2**20 + 3,), (0,), (4, 0)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_jnp_exactly(device, rng, shape, dtype):
    a, b = random(rng, shape, dtype), random(rng, shape, dtype)
    out = cutlax.vector_add(a, b)
    assert out.devices() == {device}
    assert_same(out, a + b)


def test_inside_jit_composed_with_jnp(device, rng):
    a, b = random(rng, (517, 3)), random(rng, (517, 3))

    @jax.jit
    def f(a, b):
        return jnp.sin(cutlax.vector_add(a * 2.0, b)).sum(axis=0)

    np.testing.assert_allclose(f(a, b), jnp.sin(a * 2.0 + b).sum(axis=0), rtol=1e-6, atol=1e-6)


def test_lowering_names_the_versioned_target(rng):
    a = random(rng, (8,))
    text = jax.jit(cutlax.vector_add).lower(a, a).as_text()
    assert "cutlax_vector_add_v1" in text


# Rounding edges of the 16-bit conversions (include/cutlax/convert.hpp): sums
# that land on subnormals, on ties between two 16-bit values, past the
# largest finite value, and on signed zeros. Every pair three times over: 1200
# elements, more than a CPU twin's run (512 halves), so the edges go through
# both its run path (F16C where the CPU has it) and its element path.
EDGES = [0.0, -0.0, 1.0, -1.0, 2**-24, -(2**-24), 2**-14, 6e-5, 1e-7, 65504.0, -65504.0,
         3.0e38, -3.0e38, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-8, 1.0 + 3 * 2**-8,
         np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_rounding_edges_match_jnp(device, dtype):
    grid = np.array(EDGES, np.float32)
    a = jnp.asarray(np.tile(np.repeat(grid, len(grid)), 3)).astype(dtype)
    b = jnp.asarray(np.tile(grid, 3 * len(grid))).astype(dtype)
    assert_same(cutlax.vector_add(a, b), a + b)
    assert_same(cutlax.saxpy(0.5, a, b), (0.5 * a.astype(jnp.float32) + b).astype(dtype))
    assert_same(cutlax.relu(a), jax.nn.relu(a))


def test_infinities_and_nan_follow_jnp(device):
    a = jnp.array([np.inf, -np.inf, np.nan, 1.0, np.inf], jnp.float32)
    b = jnp.array([1.0, -np.inf, 2.0, np.nan, -np.inf], jnp.float32)
    assert_same(cutlax.vector_add(a, b), a + b)


def test_accepts_numpy_inputs(device):
    a = np.arange(10, dtype=np.float32)
    assert_same(cutlax.vector_add(a, a), jnp.asarray(a + a))


# ---------------------------------------------------------------------------
# Properties

@_elementwise
@_examples(30)
@given(data=st.data())
def test_vector_add(dev, dtype, data):
    """``a + b`` in float32, rounded once to the dtype: the correctly rounded
    sum, since float32's 24 bits hold a 16-bit sum's rounding exactly (a sum
    rounded to float32 and then to 11 or 8 bits is the sum rounded once).
    Bit for bit against the model and against jnp.add on the same device
    (signed zeros included; NaN payloads free)."""
    shape = data.draw(shapes(), label="shape")
    a, b = data.draw(pairs(shape, dtype), label="a, b")
    flush = _flushes(dev)
    with jax.default_device(dev):
        da, db = _on(dev, a, b)
        out = cutlax.vector_add(da, db)
        ref = jnp.add(da, db)
    assert out.shape == shape and out.dtype == dtype
    with np.errstate(all="ignore"):
        model = _narrow(_ftz(_daz(_widen(a), flush) + _daz(_widen(b), flush), flush), dtype)
    _check(_same_bits(out, model), "vector_add vs the model", a=a, b=b, out=out, model=model)
    _check(_same_bits(out, ref), "vector_add vs jnp.add", a=a, b=b, out=out, jnp=ref)


# ---------------------------------------------------------------------------
# Errors

def test_shape_mismatch_names_arguments(rng):
    with pytest.raises(ValueError, match=r"cutlax.vector_add: b has shape \(3,\) but a has shape \(4,\)"):
        cutlax.vector_add(random(rng, (4,)), random(rng, (3,)))


def test_dtype_mismatch_names_arguments(rng):
    with pytest.raises(TypeError, match="b has dtype float16 but a has dtype float32"):
        cutlax.vector_add(random(rng, (4,)), random(rng, (4,), jnp.float16))


@pytest.mark.parametrize("dtype", [jnp.int8, jnp.complex64, jnp.int32])
def test_unsupported_dtype_rejected_at_trace_time(dtype):
    a = jnp.ones((4,), dtype)
    with pytest.raises(TypeError, match=r"a has dtype \w+; expected one of: float32, float16, bfloat16"):
        jax.jit(cutlax.vector_add).lower(a, a)


def test_non_array_argument():
    with pytest.raises(TypeError, match="cutlax.vector_add: a"):
        cutlax.vector_add("not an array", jnp.ones(3))


def _invalid_cases(shape, good, bad):
    x, xb, xo, longer, _, _ = _invalid_operands(shape, good, bad)
    return [
        (cutlax.vector_add, (xb, xb), TypeError),
        (cutlax.vector_add, (x, xo), TypeError),
        (cutlax.vector_add, (x, longer), ValueError),
        (lambda b: cutlax.vector_add("not an array", b), (x,), TypeError),
    ]


test_invalid_input_raises_the_documented_error = invalid_input_test("vector_add", _invalid_cases, examples=12)
