"""precision= as JAX spells it, resolved per backend (docs/gemm.md,
"Precision").

``resolve(dtype, precision)`` turns what the user passed (None, a
``jax.lax.Precision`` or its name, a pair of them, or a
``jax.lax.DotAlgorithmPreset``) into the arithmetic each platform runs:

* ``"16-bit"``: bfloat16/float16 operands, float32 accumulation.
* ``"tf32"``: one product with float32 operands read as TF32.
* ``"3xtf32"``: 3xTF32 (tf32.py), big x big on the heuristic's kernel.
* ``"3xtf32_promoted"``: 3xTF32, big x big on the promoted kernel: FP32's accuracy.
* ``"fp32"``: FP32 arithmetic (the tiled SGEMM on cutlax's route).

float32 with the default precision is TF32 on a GPU, as XLA:GPU's, and FP32
on the CPU, as XLA:CPU's; everything else means the same on both.
"""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp

Precision = jax.lax.Precision
Preset = jax.lax.DotAlgorithmPreset

PLATFORMS = ("cpu", "cuda")
ARITHMETICS = ("16-bit", "tf32", "3xtf32", "3xtf32_promoted", "fp32")


def _both(arithmetic):
    return types.MappingProxyType({p: arithmetic for p in PLATFORMS})


# float32: the precision asked for -> the arithmetic per platform. The keys
# are the canonical forms (canonical()): a Precision or a preset.
FLOAT32 = types.MappingProxyType({
    Precision.DEFAULT: types.MappingProxyType({"cpu": "fp32", "cuda": "tf32"}),
    Precision.HIGH: _both("3xtf32"),
    Precision.HIGHEST: _both("3xtf32_promoted"),
    Preset.TF32_TF32_F32: _both("tf32"),
    Preset.TF32_TF32_F32_X3: _both("3xtf32"),
    Preset.F32_F32_F32: types.MappingProxyType({"cpu": "fp32", "cuda": "3xtf32_promoted"}),
})
# bfloat16 and float16: the kernels' one arithmetic; the Precision names do
# not change it (as XLA's for 16-bit operands), presets must name it.
HALF_PRESETS = types.MappingProxyType({
    jnp.dtype(jnp.bfloat16): (Preset.BF16_BF16_F32,),
    jnp.dtype(jnp.float16): (Preset.F16_F16_F32,),
})
NAMES = ("default", "high", "highest")


def supported(dtype) -> tuple:
    """The presets cutlax has a kernel for, for operands of the dtype."""
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float32:
        return tuple(p for p in FLOAT32 if isinstance(p, Preset))
    return HALF_PRESETS.get(dtype, ())


def _expected(dtype) -> str:
    presets = ", ".join(p.name for p in supported(dtype))
    return (f"None, a jax.lax.Precision or one of {NAMES}, a pair of them, or a jax.lax.DotAlgorithmPreset "
            f"with a {jnp.dtype(dtype).name} kernel ({presets})")


def canonical(dtype, precision):
    """The precision as one Precision or preset (a pair: the more precise of
    the two; DotAlgorithmPreset.DEFAULT is Precision.DEFAULT). Raises
    ValueError naming precision= and what it takes."""
    if precision is None:
        return Precision.DEFAULT
    if isinstance(precision, tuple) and len(precision) == 2 and not isinstance(precision, Preset):
        first, second = (canonical(dtype, p) for p in precision)
        if isinstance(first, Preset) or isinstance(second, Preset):
            raise ValueError(f"precision must be {_expected(dtype)}; a pair cannot hold a preset, got {precision!r}")
        return max(first, second, key=lambda p: p.value)
    if isinstance(precision, Precision):
        return precision
    if isinstance(precision, str):
        try:
            return Precision(precision)
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"precision must be {_expected(dtype)}, got {precision!r}") from None
    if isinstance(precision, Preset):
        if precision == Preset.DEFAULT:
            return Precision.DEFAULT
        if precision not in supported(dtype):
            raise ValueError(f"precision must be {_expected(dtype)}; {precision.name} has no cutlax kernel for "
                             f"{jnp.dtype(dtype).name}")
        return precision
    raise ValueError(f"precision must be {_expected(dtype)}, got {precision!r}")


def resolve(dtype, precision, impl: str = "auto") -> types.MappingProxyType:
    """The arithmetic per platform ({"cpu": ..., "cuda": ...}) for operands of
    the dtype; impl="tiled" is FP32 whatever the precision."""
    key = canonical(dtype, precision)
    if jnp.dtype(dtype) != jnp.float32:
        return _both("16-bit")
    if impl == "tiled":
        return _both("fp32")
    return FLOAT32[key]


def xla(dtype, precision, platform: str):
    """What the XLA route passes to jnp.matmul on the platform, and whether
    it cuts the operands to TF32 first: the precision as the user gave it
    (XLA's own meaning on that backend), except that XLA:CPU has no TF32
    presets: TF32_TF32_F32 there reads the operands cut to TF32 (as the CPU
    twin does) in FP32 arithmetic, and TF32_TF32_F32_X3 is FP32."""
    key = canonical(dtype, precision)
    if jnp.dtype(dtype) != jnp.float32 or key == Precision.DEFAULT:
        return None, False
    if platform == "cpu" and key in (Preset.TF32_TF32_F32, Preset.TF32_TF32_F32_X3):
        return Precision.HIGHEST, key == Preset.TF32_TF32_F32
    return key, False
