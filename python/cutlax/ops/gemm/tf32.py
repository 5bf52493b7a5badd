"""float32 on tensor cores: TF32 rounding, and 3xTF32 (precision "high",
"highest", TF32_TF32_F32_X3; docs/gemm.md, "3xTF32").

Each operand splits into a big part (rounded to TF32) and a small one (the
remainder, also rounded), and a b = a_big b_big + (a_big b_small + a_small
b_big) + (a_small b_small, below float32's precision, left out). a_big b_big
runs on a TF32 kernel with the bias ("highest": the promoted one, whose
partial sums are added in registers every K tile; "high": the heuristic's,
truncating over all of K). The cross products, 2^-11 of it, where the
truncating accumulation costs little, run in float16 (cross_products): every
part has TF32's 11 significant bits, which float16 holds exactly once scaled
into its range, so they are the same products at twice TF32's speed. XLA
adds the two and applies the activation in one fusion. An infinity's small
part is 0, and the cross products take the big parts with infinities as 0:
the infinity meets only the other operand's big part, as it would in FP32
(inf x 0 would otherwise make a NaN where the product is infinite).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from cutlax.ops.gemm import facts
from cutlax.ops.gemm.kernel import Operand, activation_backward, gradients, no_bias, product


def tf32(x):
    """x rounded to TF32 (10 mantissa bits), to nearest even; values that
    would round past the largest float are cut instead."""
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)
    cut = bits & np.uint32(0xFFFFE000)
    out = jax.lax.bitcast_convert_type(rounded, jnp.float32)
    out = jnp.where(jnp.isfinite(x) & ~jnp.isfinite(out), jax.lax.bitcast_convert_type(cut, jnp.float32), out)
    return jnp.where(jnp.isnan(x), x, out)  # a NaN's payload could round to infinity


def tf32_cut(x):
    """x as the tensor cores (and the CPU twin) read a float32 operand in
    TF32: its low 13 mantissa bits dropped; NaNs stay NaNs."""
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32) & np.uint32(0xFFFFE000)
    return jnp.where(jnp.isnan(x), x, jax.lax.bitcast_convert_type(bits, jnp.float32))


def split(x):
    """x's big part (TF32), for a_big b_big; and the cross products' two
    parts: the big part with infinities as 0, and the small part (0 for
    infinities)."""
    big = tf32(x)
    return big, (jnp.where(jnp.isinf(x), 0.0, big), tf32(jnp.where(jnp.isfinite(x), x - big, 0.0)))


# The norm that cross_products scales each row of a and column of b to,
# below 2^12: every scaled part is then at most 2^12 and each cross sum at
# most 2^-10 |a_r s| |b_c t| < 2^14 (Cauchy-Schwarz), both within float16's
# range (largest 65504). A small part stays exact (normal) down to entries
# 2^-15 of their row's or column's norm; below, float16 rounds it to a
# multiple of 2^-24 (2^-36 of the norm), and a big part down to 2^-26.
CROSS_NORM_BITS = 12


def scale_exponents(x, axis):
    """s per row (axis=1) or column (axis=0) of x, keeping x's rank: the
    norm of x's finite entries times 2^s lies in [2^11, 2^12) (s = 12 where
    all are 0)."""
    finite = jnp.where(jnp.isfinite(x), x, 0.0)
    _, top = jnp.frexp(jnp.max(jnp.abs(finite), axis=axis, keepdims=True, initial=0.0))  # K may be 0
    unit = jnp.ldexp(finite, -top)  # entries below 1: the squares' sum cannot overflow
    _, norm = jnp.frexp(jnp.sqrt(jnp.sum(unit * unit, axis=axis, keepdims=True)))
    return CROSS_NORM_BITS - top - norm


def cross_products(a, b, a_parts, b_parts):
    """a_big b_small + a_small b_big in float32, from split's (big, small)
    parts, as one float16 GEMM over 2K: [a_big | a_small] 2^s @ [b_small;
    b_big] 2^t, a's rows scaled by 2^s and b's columns by 2^t (exact powers
    of two, scale_exponents), the result scaled back. The float16 result
    rounds the cross sum (2^-11 of the product) to 11 bits."""
    s, t = scale_exponents(a, 1), scale_exponents(b, 0)
    (a_big, a_small), (b_big, b_small) = a_parts, b_parts

    def half(x, e):
        return jnp.ldexp(x, e).astype(jnp.float16)

    cross = product(Operand(jnp.concatenate([half(a_big, s), half(a_small, s)], axis=1)),
                    Operand(jnp.concatenate([half(b_small, t), half(b_big, t)], axis=0)),
                    no_bias(jnp.float16), facts.NO_ACTIVATION, 0)
    return jnp.ldexp(cross.astype(jnp.float32), -(s + t))


def _forward(a, b, bias, activation, config):
    # a_big b_big reads b's big part as (N, K), the TF32 kernel's K-major B:
    # XLA fuses the rounding with that copy.
    (a_big, a_parts), (b_big, b_parts) = split(a), split(b)
    big = product(Operand(a_big), Operand(b_big.T, True), bias, facts.NO_ACTIVATION, config)
    z = big + cross_products(a, b, a_parts, b_parts)
    if activation == facts.RELU:
        out = jax.nn.relu(z)
    elif activation == facts.GELU:
        out = jax.nn.gelu(z), z  # the kernel's tanh form, and z for the backward as gemm_aux gives it
    else:
        out = z
    return out, (a, b, bias, out)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def product_3xtf32(a, b, bias, activation: int, config: int):
    """act(a @ b + bias) in float32 by 3xTF32; its gradients likewise. For
    gelu, (c, z)."""
    return _forward(a, b, bias, activation, config)[0]


def _backward(activation, config, residuals, cts):
    a, b, bias, out = residuals
    dz, dbias = activation_backward(activation, out, cts, bias)

    def backward_product(x, y):
        x, y = (o.array.T if o.transposed else o.array for o in (x, y))
        return product_3xtf32(x, y, no_bias(x.dtype), facts.NO_ACTIVATION, config)

    da, db = gradients(Operand(a), Operand(b), dz, backward_product)
    return da, db, dbias


product_3xtf32.defvjp(_forward, _backward)
