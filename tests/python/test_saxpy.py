import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, random

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


def test_vmap(device, rng):
    # atol 1e-6: the CUDA kernel contracts a*x+y into one FMA, XLA may round twice.
    x, y = random(rng, (3, 40)), random(rng, (3, 40))
    alphas = jnp.array([0.5, -2.0, 3.0], jnp.float32)
    np.testing.assert_allclose(jax.vmap(lambda x, y: cutlax.saxpy(2.5, x, y))(x, y), 2.5 * x + y,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(lambda a, x, y: cutlax.saxpy(a, x, y))(alphas, x, y),
                               alphas[:, None] * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(lambda x: cutlax.saxpy(jnp.float32(2.0), x, y[0]))(x),
                               2.0 * x + y[0], rtol=1e-6, atol=1e-6)
