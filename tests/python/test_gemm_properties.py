"""The GEMM's property tests (hypothesis), moved here unchanged from the
file that held every op's (the shared strategies and models are in
properties.py, whose docstring states the method): every dtype, impl and
precision, bias, activation None, relu, gelu: bit for bit on exactly
representable integer problems (subnormal and overflowing results
included), within a derived rounding bound on random ones, and NaN/inf where
IEEE arithmetic puts them; invalid input raises the documented error; and a
regression test of the TF32 CPU twin's handling of NaNs whose payload lies in
the low mantissa bits."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import (
    DEVICES,
    DTYPES,
    F32,
    F64,
    _check,
    _close,
    _daz,
    _examples,
    _F32_TINY,
    _flushes,
    _invalid_operands,
    _name,
    _narrow,
    _on,
    _platform,
    invalid_input_test,
    _round_off,
    _same_value,
    _widen,
)

import cutlax
from cutlax.ops import gemm as gemm_module

GEMM_DIMS = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 0, 32, 33, 64, 100, 127, 128, 129, 255, 256, 257, 300)
ACTIVATIONS = (None, "relu", "gelu")
# (impl, precision) per dtype: every kernel configuration, the tiled SGEMM,
# 3xTF32, TF32 (asked for by its preset: the CPU's default is FP32); 16-bit
# inputs ignore precision. impl="auto" takes XLA's route at these sizes
# (cutlax.gemm_plan), whose 16-bit result may round the product before the
# bias, so the 16-bit models (rounded once) hold for cutlax's route only.
_TF32 = jax.lax.DotAlgorithmPreset.TF32_TF32_F32
F32_VARIANTS = (("auto", None), ("auto", "default"), ("auto", "high"), ("auto", "highest"), ("cutlax", None),
                ("cutlax", _TF32), ("cutlax", "high"), ("cutlax", "highest"), ("tiled", None),
                ("tiled", "highest"), (gemm_module.PROMOTED, "highest")) + tuple(
                    (c, p) for c in gemm_module.configs(F32)[1:] for p in (None, _TF32, "high"))
HALF_VARIANTS = {dtype: (("cutlax", None), ("cutlax", "highest")) + tuple(
    (c, None) for c in gemm_module.configs(dtype)[1:]) for dtype in DTYPES[1:]}


def _gemm_kind(dtype, impl, precision) -> str:
    if dtype != F32:
        return "16-bit"
    if impl == "tiled":
        return "fp32"
    return "3xtf32" if precision in ("high", "highest") else "tf32"


@functools.lru_cache(maxsize=None)
def _gemm(impl, precision, activation, with_bias):
    """One jitted function per variant: a new shape compiles once, faster
    than the eager call's several small programs."""
    if with_bias:
        return jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation, impl=impl,
                                                      precision=precision))
    return jax.jit(lambda a, b: cutlax.gemm(a, b, activation=activation, impl=impl, precision=precision))


def _run_gemm(dev, a, b, bias, activation, impl, precision):
    fn = _gemm(impl, precision, activation, bias is not None)
    out = fn(*_on(dev, a, b, *(() if bias is None else (bias,))))
    assert out.shape == (a.shape[0], b.shape[1]) and out.dtype == a.dtype
    return out


def _gelu64(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))


def _act64(activation, z):
    with np.errstate(all="ignore"):
        if activation == "relu":
            return np.where(np.isnan(z) | (z > 0), z, 0.0)
        return _gelu64(z) if activation == "gelu" else z


@st.composite
def gemm_problem(draw, max_dim=300):
    dtype = draw(st.sampled_from(DTYPES), label="dtype")
    impl, precision = draw(st.sampled_from(F32_VARIANTS if dtype == F32 else HALF_VARIANTS[dtype]),
                            label="impl, precision")
    dims = [d for d in GEMM_DIMS if d <= max_dim]
    m, n, k = (draw(st.sampled_from(dims), label=name) for name in "MNK")
    activation = draw(st.sampled_from(ACTIVATIONS), label="activation")
    with_bias = draw(st.booleans(), label="bias")
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    return dtype, impl, precision, (m, n, k), activation, with_bias, np.random.default_rng(seed)


# Exact problems: a = i 2^ea, b = j 2^eb, bias = l 2^(ea+eb) with |i|, |j| <= 16
# and |l| <= 255, so every product and partial sum is an integer times
# 2^(ea+eb) below 2^24 of it (K <= 300): exact in float32, in TF32 (5
# significant bits per operand), 3xTF32 (the small parts are 0) and in any
# order of accumulation. (ea, eb) per dtype: ordinary, large, small; for
# float16 results past 65504 (inf) and in the subnormal range, and subnormal
# operands; for float32 and bfloat16 subnormal operands times large ones
# (products stay normal float32: a flushing platform reads the subnormal
# operand as 0, which the model does too).
EXACT_SCALES = {
    F32: ((0, 0), (-3, 5), (40, 50), (-60, -40), (-133, 33)),
    np.dtype(np.float16): ((0, 0), (-3, 2), (4, 4), (-12, -12), (-20, 4)),
    np.dtype(jnp.bfloat16): ((0, 0), (-3, 5), (40, 50), (-60, -40), (-133, 33)),
}


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@_examples(40)
@given(problem=gemm_problem(), scales=st.integers(0, len(EXACT_SCALES[F32]) - 1))
def test_gemm_exact_problems(dev, problem, scales):
    """Integer problems scaled by powers of two (EXACT_SCALES): z = a @ b +
    bias is exact in every variant, so act(z) rounded once to the dtype is
    the only rounding, and the result must be that, bit for bit (zeros of
    either sign), for activation None and relu: overflow to inf, subnormal
    results, subnormal operands and K = 0 (act(bias)) included. gelu is not
    exact (the GPU epilogue uses tanh.approx): |c - gelu(z)| <= 2^-11 |z| +
    u_T |gelu(z)| + the dtype's smallest subnormal, u_T the unit round-off."""
    dtype, impl, precision, (m, n, k), activation, with_bias, rng = problem
    ea, eb = EXACT_SCALES[dtype][scales]
    a = (rng.integers(-16, 17, (m, k)) * 2.0**ea).astype(dtype)
    b = (rng.integers(-16, 17, (k, n)) * 2.0**eb).astype(dtype)
    bias = (rng.integers(-255, 256, n) * 2.0**(ea + eb)).astype(dtype) if with_bias else None
    with jax.default_device(dev):
        out = _run_gemm(dev, a, b, bias, activation, impl, precision)
    flush = _flushes(dev)
    z = _daz(_widen(a), flush).astype(F64) @ _daz(_widen(b), flush).astype(F64)
    if bias is not None:
        z = z + _daz(_widen(bias), flush).astype(F64)
    assert np.all(np.abs(z) < 2.0**24 * 2.0**(ea + eb)), "the problem is not exact"
    if activation == "gelu":
        ref = _gelu64(z)
        tol = 2.0**-11 * np.abs(z) + _round_off(dtype) * np.abs(ref) + float(jnp.finfo(dtype).smallest_subnormal)
        _check(_close(out, ref, tol, dtype), f"gemm {impl}/{precision} gelu", out=out, ref=ref, tol=tol)
        return
    want = _narrow(_act64(activation, z).astype(F32), dtype)  # z is exact in float32
    _check(_same_value(out, want), f"gemm {impl}/{precision} {activation}, exact problem", out=out, want=want)


def _gemm_error_bound(kind, a64, b64, bias64, activation, dtype, z):
    """|c - act(z)| for c the kernel's result and z = a @ b + bias exact.

    P = |a| @ |b|. The products: TF32 cuts each float32 operand to 10
    mantissa bits (under 2^-10 of it), so a product is within 2^-9 + 2^-20
    of itself; 3xTF32 leaves out small x small and the split's remainders
    (under 2^-20); float32 and 16-bit products are exact. The accumulation
    of n terms (3K for 3xTF32) in float32, in any order: n ua (1 + e) P,
    with ua = 2^-24 for FFMA's round to nearest (the tiled SGEMM) and 2^-23,
    a full ulp per addition, for the tensor cores, whose accumulation is not
    specified to round to nearest; the bias add rounds once more (2^-24).
    The activation: relu adds nothing, gelu multiplies the error by its
    largest slope, 1.13, and adds its own, under 2^-11 |z| (the GPU
    epilogue's GELU_taylor calls tanh.approx.f32, good to about 2^-11
    relative, so 0.5 |z| |d tanh| is about 2^-12 |z|). The result rounds once
    to the dtype: u_T |act(z)|, plus the dtype's smallest subnormal and
    float32's smallest normal (flushing)."""
    k = a64.shape[1]
    p = np.abs(a64) @ np.abs(b64)
    e_prod = {"tf32": 2.0**-9 + 2.0**-20, "3xtf32": 2.0**-20, "fp32": 0.0, "16-bit": 0.0}[kind]
    terms = 3 * k if kind == "3xtf32" else k
    ua = 2.0**-24 if kind == "fp32" else 2.0**-23
    magnitude = p * (1 + e_prod) + (0 if bias64 is None else np.abs(bias64))
    z_err = 1.01 * (e_prod * p + terms * ua * magnitude + 2.0**-24 * magnitude)
    slope, act_err = (1.13, 2.0**-11 * np.abs(z) + 2.0**-24 * magnitude) if activation == "gelu" else (1.0, 0.0)
    c = _act64(activation, z)
    return (slope * z_err + act_err + _round_off(dtype) * (np.abs(c) + slope * z_err)
            + float(jnp.finfo(dtype).smallest_subnormal) + _F32_TINY)


# Random problems: normal values times 2^s per operand (and the bias at the
# product's scale); float16 stays below overflow (|z| ~ sqrt(K) 2^(sa+sb)).
RANDOM_SCALES = {F32: (-20, 0, 30), np.dtype(np.float16): (-4, 0, 2), np.dtype(jnp.bfloat16): (-20, 0, 30)}


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@_examples(40)
@given(problem=gemm_problem(), sa=st.integers(0, 2), sb=st.integers(0, 2))
def test_gemm_within_rounding_bound(dev, problem, sa, sb):
    """Random normal problems: |c - act(a @ b + bias)| within
    _gemm_error_bound of the exact (float64) result, for every dtype,
    variant and activation. (For TF32 and K <= 300 this bound is inside
    conftest.tf32_bound, 2^-8.9 |a| @ |b|.)"""
    dtype, impl, precision, (m, n, k), activation, with_bias, rng = problem
    sa, sb = RANDOM_SCALES[dtype][sa], RANDOM_SCALES[dtype][sb]
    a = (rng.standard_normal((m, k)) * 2.0**sa).astype(dtype)
    b = (rng.standard_normal((k, n)) * 2.0**sb).astype(dtype)
    bias = (rng.standard_normal(n) * 2.0**(sa + sb)).astype(dtype) if with_bias else None
    with jax.default_device(dev):
        out = _run_gemm(dev, a, b, bias, activation, impl, precision)
    a64, b64 = _widen(a).astype(F64), _widen(b).astype(F64)
    bias64 = None if bias is None else _widen(bias).astype(F64)
    z = a64 @ b64 + (0 if bias64 is None else bias64)
    ref = _act64(activation, z)
    bound = _gemm_error_bound(_gemm_kind(dtype, impl, precision), a64, b64, bias64, activation, dtype, z)
    _check(_close(out, ref, bound, dtype), f"gemm {_name(dtype)} {impl}/{precision} {activation}", out=out, ref=ref,
           bound=bound)


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@_examples(30)
@given(problem=gemm_problem(max_dim=129), where=st.lists(
    st.tuples(st.sampled_from("ab"), st.integers(0, 2**16), st.sampled_from((np.nan, np.inf, -np.inf))),
    min_size=1, max_size=4), bias_special=st.sampled_from((None, np.nan, np.inf, -np.inf)))
def test_gemm_non_finite(dev, problem, where, bias_special):
    """NaN and infinities planted in a, b and the bias (finite entries
    normal, never 0, so no inf * 0): every result is NaN, +inf or -inf
    exactly where IEEE arithmetic in any order of summation puts it (NaN for
    a NaN term or +inf and -inf terms, else the infinity), through the
    activation (relu(-inf) = 0, gelu(-inf) = NaN, gelu(+inf) = +inf), and
    finite elsewhere, 3xTF32 included (an infinity meets only the other
    operand's big part, cutlax.ops.gemm.tf32.split). The NaNs are the canonical
    quiet NaN: TF32 drops the low 13 mantissa bits, so a NaN whose payload
    lies only there reads as an infinity under the default precision."""
    dtype, impl, precision, (m, n, k), activation, with_bias, rng = problem
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    a[a == 0], b[b == 0] = 1, 1
    for operand, index, value in where:
        target = a if operand == "a" else b
        if target.size:
            target.flat[index % target.size] = value
    bias = rng.standard_normal(n).astype(dtype) if with_bias or bias_special is not None else None
    if bias_special is not None and n:
        bias[rng.integers(0, n)] = bias_special
    with jax.default_device(dev):
        out = _run_gemm(dev, a, b, bias, activation, impl, precision)
    a64, b64 = _widen(a).astype(F64), _widen(b).astype(F64)
    with np.errstate(all="ignore"):
        terms = a64[:, :, None] * b64[None, :, :]  # (M, K, N); the finite ones are small
        nan = np.isnan(terms).any(axis=1)
        pos, neg = (terms == np.inf).any(axis=1), (terms == -np.inf).any(axis=1)
    if bias is not None:
        bias64 = _widen(bias).astype(F64)
        nan |= np.isnan(bias64)[None, :]
        pos |= (bias64 == np.inf)[None, :]
        neg |= (bias64 == -np.inf)[None, :]
    nan |= pos & neg
    z = np.where(nan, np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, 0.0)))
    want = _act64(activation, z)  # NaN, +-inf, or 0: finite
    o = _widen(out).astype(F64)
    ok = np.where(np.isnan(want), np.isnan(o), np.where(np.isinf(want), o == want, np.isfinite(o)))
    _check(ok, f"gemm {_name(dtype)} {impl}/{precision} {activation} with NaN/inf", out=out, want=want)


# ---------------------------------------------------------------------------
# Invalid input (the gemm cases of the invalid-input property)

def _invalid_cases(shape, good, bad):
    x, _, _, _, _, other = _invalid_operands(shape, good, bad)
    mat, bad_mat = np.ones((4, 8), good), np.ones((4, 8), bad)
    not_a_matrix = (x, np.ones((shape[-1], 3), good)) if len(shape) != 2 else (x.reshape(-1), x)
    wrong_config = ((lambda a, b: cutlax.gemm(a, b, impl="tiled"), TypeError) if good != F32 else
                    (lambda a, b: cutlax.gemm(a, b, impl=gemm_module.CONFIGS[1], precision="highest"), ValueError))
    return [
        (cutlax.gemm, (bad_mat, bad_mat.T), TypeError),
        (cutlax.gemm, (mat, np.ones((8, 4), other)), TypeError),
        (cutlax.gemm, (mat, np.ones((7, 4), good)), ValueError),
        (cutlax.gemm, not_a_matrix, ValueError),
        (lambda a, b, bias: cutlax.gemm(a, b, bias=bias), (mat, mat.T, np.ones(4, other)), TypeError),
        (lambda a, b, bias: cutlax.gemm(a, b, bias=bias), (mat, mat.T, np.ones(5, good)), ValueError),
        (lambda a, b: cutlax.gemm(a, b, activation="swish"), (mat, mat.T), ValueError),
        (lambda a, b: cutlax.gemm(a, b, impl="cublas"), (mat, mat.T), ValueError),
        (lambda a, b: cutlax.gemm(a, b, precision="max"), (mat, mat.T), ValueError),
        (wrong_config[0], (mat, mat.T), wrong_config[1]),
    ]


test_invalid_input_raises_the_documented_error = invalid_input_test("gemm", _invalid_cases, examples=30)


# ---------------------------------------------------------------------------
# Regression

@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@pytest.mark.parametrize("bits", [0x7F800001, 0xFF801000, 0x7F801FFF], ids=hex)
def test_default_precision_keeps_every_nan(dev, bits):
    """float32 gemm at the default precision (TF32): a NaN operand gives NaN
    whatever its payload. A regression test: the CPU twin's ``tf32``
    (src/ops/gemm_cpu.cpp) cleared the low 13 mantissa bits, which turned a
    NaN whose payload lies only there (a signalling NaN such as 0x7f800001)
    into an infinity, so its row of the result was -inf or +inf; it now
    keeps NaNs. The H200's tensor cores give NaN,
    as do precision="high" (cutlax.ops.gemm.tf32.tf32 keeps NaNs) and
    "highest" on both platforms."""
    a = np.full((1, 4), np.array(bits, np.uint32).view(np.float32))
    b = -np.ones((4, 4), np.float32)
    out = np.asarray(cutlax.gemm(*_on(dev, a, b)))
    assert np.all(np.isnan(out)), out
