"""Shared fixtures: random inputs, the devices under test, and GPU markers.

Every op test runs on each platform JAX offers in this process: CPU always
(the C++ twins), and the GPU when there is one (the CUDA kernels). Tests
marked ``gpu`` need a GPU and skip without one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax  # registers the FFI targets

# Eight CPU devices for the multi-device tests; must precede any device query.
jax.config.update("jax_num_cpu_devices", 8)

FLOAT_DTYPES = [jnp.float32, jnp.float16, jnp.bfloat16]


def _gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


GPUS = _gpus()
DEVICES = [jax.devices("cpu")[0]] + GPUS[:1]

# cutlax.jit compiles with NVRTC: tests that compile skip where there is none.
HAVE_NVRTC = cutlax.jit.nvrtc_version() != "not found"
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="needs NVRTC and the CUTLASS headers")
needs_gpu = pytest.mark.skipif(not GPUS, reason="needs a GPU")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not GPUS:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skips without one)")


@pytest.fixture(params=DEVICES, ids=lambda d: d.platform)
def device(request):
    """Each test using this runs once per platform, with inputs placed there."""
    with jax.default_device(request.param):
        yield request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


def random(rng, shape, dtype=jnp.float32, scale=1.0):
    """Normal random values (never zeros: they hide unwritten outputs)."""
    return jnp.asarray(scale * rng.standard_normal(shape), dtype=jnp.float32).astype(dtype)


def assert_same(actual, expected):
    """Bit-for-bit equality, NaN matching NaN."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_array_equal(
        np.asarray(actual.astype(jnp.float32)), np.asarray(expected.astype(jnp.float32))
    )


def ref_backward(y, g):
    """jax.numpy's (dx, dbias) of bias_relu_backward: dx = g where y > 0,
    dbias its sum over every axis but the last (relu_backward's is dx)."""
    dx = jnp.where(y > 0, g, jnp.zeros_like(g))
    dbias = dx.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    return dx, dbias.sum(axis=tuple(range(dx.ndim - 1)))


def forward_and_cotangent(rng, shape, dtype):
    """A bias_relu output y and a random cotangent g of its shape."""
    x = random(rng, shape, dtype)
    return cutlax.bias_relu(x, random(rng, shape[-1:], dtype)), random(rng, shape, dtype)


def tf32_bound(a, b):
    """|error| of a TF32 product: each operand loses under 2^-10 of itself
    (10 mantissa bits kept), so each product under 2^-9 (plus 2^-20), and
    float32 accumulation adds little next to that: 2^-8.9 |a| @ |b|."""
    return 2.0**-8.9 * jnp.matmul(jnp.abs(a), jnp.abs(b), precision="highest") + 1e-6
