"""References and operands shared by the GEMM's test files (test_gemm*.py).

Tolerances for 16-bit results: the reference is jnp.matmul in float32
(``precision="highest"``) plus the bias, then the activation in float32: the
kernel's own arithmetic up to the order of the float32 sums. The kernel
rounds the result once to the 16-bit dtype, so a result is within 2^-8
(bf16) / 2^-11 (f16) relative of the reference; a sum that lands near a
rounding boundary can round the other way, hence rtol = 2^-7 / 2^-10 (one
unit in the last place), plus an atol of 1e-3 for results near zero, where
relative error means nothing (and gelu's tanh comes from the GPU's
tanh.approx, absolute error about 5e-4). XLA's route (``act(a @ b + bias)``
as a user writes it) may round the product before the bias: one more unit
of the product's magnitude (check_xla).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from conftest import random

from cutlax.library import builtin_library

# The op behind cutlax.gemm's cutlax route, called directly (docs/gemm.md, "The op").
GEMM_OP, GEMM_AUX_OP = builtin_library().gemm, builtin_library().gemm_aux
HALF_DTYPES = [jnp.bfloat16, jnp.float16]
RTOL = {jnp.dtype(jnp.bfloat16): 2.0**-7, jnp.dtype(jnp.float16): 2.0**-10}
ACTIVATIONS = {None: lambda z: z, "relu": jax.nn.relu, "gelu": jax.nn.gelu}
TF32_TF32_F32 = jax.lax.DotAlgorithmPreset.TF32_TF32_F32


def reference(a, b, bias=None, activation=None):
    z = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32), precision="highest")
    if bias is not None:
        z = z + bias.astype(jnp.float32)
    return ACTIVATIONS[activation](z)


def check(out, a, b, bias=None, activation=None):
    """A 16-bit result against the float32 reference, rounded once."""
    ref = reference(a, b, bias, activation)
    assert out.shape == ref.shape and out.dtype == a.dtype
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(ref), rtol=RTOL[a.dtype], atol=1e-3)


def check_xla(out, a, b, bias=None, activation=None):
    """A 16-bit result of XLA's route: the product may be rounded to the
    dtype before the bias is added, an error up to a unit of |a| |b|."""
    ref = reference(a, b, bias, activation)
    assert out.shape == ref.shape and out.dtype == a.dtype
    scale = jnp.matmul(jnp.abs(a.astype(jnp.float32)), jnp.abs(b.astype(jnp.float32)), precision="highest")
    bound = 1.13 * 2 * RTOL[a.dtype] * (scale + jnp.abs(ref)) + 1e-3
    assert bool(jnp.all(jnp.abs(np.asarray(out, np.float32) - ref) <= bound))


def check_f32(out, a, b):
    """Against true-FP32 jnp.matmul: relative Frobenius error under 1e-5 (FP32
    accumulation over K), and every element within 1e-4 * sqrt(K) of it."""
    ref = jnp.matmul(a, b, precision="highest")
    assert out.shape == ref.shape and out.dtype == jnp.float32
    err = float(jnp.linalg.norm(out - ref) / max(float(jnp.linalg.norm(ref)), 1e-30))
    assert err < 1e-5, err
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[1]))


def operands(rng, m, n, k, dtype):
    # Scaled so that the products stay O(1) at any K.
    return (random(rng, (m, k), dtype, scale=max(k, 1) ** -0.5), random(rng, (k, n), dtype),
            random(rng, (n,), dtype))


def gemm_calls(text):
    """The lowered program's gemm calls: (config, transpose, a's type, b's type) each."""
    return re.findall(r"custom_call @cutlax_gemm_v1\(.*config = (\d+) : i64, transpose = (\d) : i64.*"
                      r": \((tensor<[^>]+>), (tensor<[^>]+>)", text)


def float64_error(out, a, b):
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    return np.abs(np.asarray(out, np.float64) - exact)


def normalized_error(out, a, b):
    """float64_error over |a| |b|, elementwise."""
    return float64_error(out, a, b) / (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))
