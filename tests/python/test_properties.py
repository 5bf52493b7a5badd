"""Property tests (hypothesis) of every public op, against jax.numpy and exact
NumPy models of the ops' arithmetic, over random shapes, dtypes and values.

What is checked, per op (each test's docstring states its rounding model):

    vector_add          bit for bit: the correctly rounded sum (== jnp.add)
    saxpy (static       bit for bit: one of the two roundings of alpha * x + y
      and 0-d alpha)      that float32 arithmetic allows (FMA, or multiply then add)
    relu                exact: x where x > 0, NaN kept, a zero where x <= 0
    bias_relu           exact: relu of the rounded float32 sum (== jnp's, value for value)
    relu_backward       bit for bit: g where y > 0, else +0 (== jnp.where)
    bias_relu_backward  dx bit for bit; dbias within float32 summation's bound
    gemm                every dtype, impl and precision, bias, activation None, relu,
                        gelu: bit for bit on exactly representable integer
                        problems (subnormal and overflowing results included),
                        within a derived rounding bound on random ones, and
                        NaN/inf where IEEE arithmetic puts them
    invalid input       TypeError / ValueError, named after the op, eager and under jit

plus deterministic tests of the platforms' denormal modes, and regression
tests of three bugs of the CPU twins that these properties found (the GPU
was right each time; see their docstrings): relu of a negative subnormal,
saxpy's rounding at the end of an array, and the TF32 GEMM's handling of NaNs
whose payload lies in the low mantissa bits.

Examples. Every property runs a fixed number of examples (``_examples(n)``
below), derandomized: hypothesis seeds its generator from the test, so CI runs
the same examples on every run and a failure reproduces by rerunning the
test; no example database is written, and hypothesis' other files (its
cache of the test's constants, a failure's patch) go to the temp dir, not
.hypothesis/ in the checkout. For a longer search:

    CUTLAX_HYPOTHESIS_EXAMPLES=20 python3 -m pytest tests/python/test_properties.py
        # 20 times the examples (a float: 0.5 halves them)
    CUTLAX_HYPOTHESIS_RANDOM=1 python3 -m pytest tests/python/test_properties.py
        # fresh random examples on each run; a failure prints the
        # @reproduce_failure blob that replays it

Inputs. An example draws the shape (rank 0-4 where the op takes any rank;
sizes 0, 1, primes, powers of two and their neighbours, up to 65537 elements
so that the CPU twins' thread-pool tasks, the GPU kernels' last partial block
and every tail path are reached), the dtype where a test does not fix it, and
the values: a seed for NumPy's generator, which fills the bulk from one to
three classes (normal, small integers, log-uniform over the whole range,
near the largest finite value, subnormals, random bit patterns), a rate of
special values (NaN, +-inf, +-0, the smallest and largest subnormal and
normal, the largest finite value and its half), and up to six values that
hypothesis draws itself (its floats lean to the same edges) planted at drawn
positions, the last elements included. Drawing every element through
hypothesis would be slow at these sizes and would not shrink better.
Two-operand ops also draw whether y copies or negates x on half the elements
(exact cancellations, signed zeros, x + x overflowing).

Runs on every device in conftest.DEVICES (the CPU twins, and the CUDA kernels
where there is a GPU). Each new shape compiles a program (eager calls cache
one per shape, dtype and attribute); on the 2-core CPU machine the file takes
about a minute.

Denormals. XLA:CPU runs its threads with FTZ and DAZ set, and the C++ twins
run on those threads: float32 subnormals read as zeros of their sign and
float32 subnormal results flush to zero, in jnp and cutlax alike. nvcc keeps
subnormals (no -ftz), and so does XLA:GPU. The models below read float32
values through ``_daz`` and flush results through ``_ftz`` on a flushing
platform (float16 values widen to normal float32 values, so only float32 and
bfloat16 are affected); ``test_platform_denormal_modes`` checks that XLA's
own arithmetic does the same.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import DEVICES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cutlax
from cutlax.ops import gemm as gemm_module

# hypothesis caches what it finds (constants of the local modules, failure
# patches) under .hypothesis/ in the working directory: the temp dir instead,
# so a run leaves nothing in the checkout (unless the variable says otherwise).
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "cutlax-hypothesis"))
_SCALE = float(os.environ.get("CUTLAX_HYPOTHESIS_EXAMPLES", "1"))
_RANDOM = os.environ.get("CUTLAX_HYPOTHESIS_RANDOM", "") not in ("", "0")


def _examples(n: int):
    """hypothesis settings for a property of ``n`` examples (times
    CUTLAX_HYPOTHESIS_EXAMPLES)."""
    return settings(max_examples=max(1, round(n * _SCALE)), deadline=None, derandomize=not _RANDOM,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example])


F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
DTYPES = (F32, np.dtype(np.float16), np.dtype(jnp.bfloat16))
_UINT = {2: np.uint16, 4: np.uint32}
_F32_TINY = 2.0**-126  # float32's smallest normal
_F32_MAX = float(np.finfo(np.float32).max)


def _name(dtype) -> str:
    return np.dtype(dtype).name


def _platform(dev) -> str:
    return dev.platform


def _flushes(dev) -> bool:
    """Whether cutlax's kernels on ``dev`` run with FTZ and DAZ (module docstring)."""
    return dev.platform == "cpu"


def _round_off(dtype) -> float:
    """The unit round-off u of ``dtype``: half its epsilon (2^-24 float32,
    2^-11 float16, 2^-8 bfloat16)."""
    return float(jnp.finfo(dtype).eps) / 2


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    return x.view(_UINT[x.dtype.itemsize])


def _isnan(x) -> np.ndarray:
    return np.isnan(np.asarray(x).astype(F32))


# ---------------------------------------------------------------------------
# Shapes and values.

# Sizes: primes, powers of two and their neighbours around the kernels' run,
# block and task lengths, and 0. 1 comes first (hypothesis shrinks towards
# the first), 0 in the middle (it draws the ends of a list more often).
DIMS = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 127, 128, 0, 129, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049,
        4095, 4096, 4097)
# Rank 1 also reaches past one CPU task of a float32 twin (256 runs of 256 elements).
LONG = (65535, 65536, 65537)
MAX_ELEMENTS = 65537


@st.composite
def shapes(draw, min_rank=0, max_rank=4):
    rank = draw(st.sampled_from([r for r in (1, 2, 3, 4, 0) if min_rank <= r <= max_rank]), label="rank")
    shape: list[int] = []
    for i in range(rank):
        room = MAX_ELEMENTS // max(math.prod(shape), 1)
        dims = DIMS + LONG if rank == 1 else DIMS
        shape.append(draw(st.sampled_from([d for d in dims if d <= room]), label=f"dim {i}"))
    return tuple(shape)


def _special_values(dtype) -> np.ndarray:
    """NaN, +-inf, +-0, +-1, the smallest and largest subnormal and the
    smallest normal, the largest finite value, its predecessor and its half."""
    fi = jnp.finfo(dtype)
    uint = _UINT[dtype.itemsize]
    sign = uint(1 << (8 * dtype.itemsize - 1))
    with np.errstate(all="ignore"):
        plain = np.array([np.nan, np.inf, 0.0, 1.0, float(fi.smallest_subnormal), float(fi.tiny),
                          float(fi.max), float(fi.max) / 2], F64).astype(dtype)
    edges = np.array([np.array(fi.tiny, dtype).view(uint) - 1, np.array(fi.max, dtype).view(uint) - 1],
                     uint).view(dtype)
    positive = np.concatenate([plain, edges])
    return np.concatenate([positive, (_bits(positive) ^ sign).view(dtype)])


_CLASSES = ("normal", "ints", "wide", "huge", "subnormal", "bits")


def _bulk(rng, n: int, dtype, classes, special_rate: float) -> np.ndarray:
    fi = jnp.finfo(dtype)
    uint = _UINT[dtype.itemsize]
    out = np.zeros(n, dtype)
    pick = rng.integers(0, len(classes), n)
    for index, cls in enumerate(classes):
        where = pick == index
        k = int(where.sum())
        sign = rng.choice([-1.0, 1.0], k)
        if cls == "bits":  # every exponent, NaNs with any payload, infinities
            out[where] = rng.integers(0, np.iinfo(uint).max, k, dtype=uint, endpoint=True).view(dtype)
            continue
        if cls == "normal":
            v = rng.standard_normal(k)
        elif cls == "ints":
            v = rng.integers(-8, 9, k).astype(F64)
        elif cls == "wide":  # log-uniform from the smallest subnormal to the largest finite value
            v = sign * np.exp2(rng.uniform(np.log2(float(fi.smallest_subnormal)), np.log2(float(fi.max)), k))
        elif cls == "huge":  # where sums and products overflow
            v = sign * rng.uniform(0.25, 1.0, k) * float(fi.max)
        else:  # subnormal
            v = sign * rng.integers(1, 2**fi.nmant, k) * float(fi.smallest_subnormal)
        with np.errstate(all="ignore"):
            out[where] = np.clip(v, -float(fi.max), float(fi.max)).astype(dtype)
    specials = _special_values(dtype)
    where = rng.random(n) < special_rate
    out[where] = specials[rng.integers(0, len(specials), int(where.sum()))]
    return out


def _floats(dtype):
    """Single values: hypothesis' floats of the dtype's width (they lean to
    NaN, infinities, zeros, subnormals and extremes), or a special value."""
    width = 16 if dtype == np.float16 else 32
    return st.one_of(st.floats(width=width), st.sampled_from(list(_special_values(dtype).astype(F32))))


@st.composite
def arrays(draw, shape, dtype, classes=None):
    n = math.prod(shape)
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    if classes is None:
        classes = draw(st.lists(st.sampled_from(_CLASSES), min_size=1, max_size=3, unique=True), label="classes")
    rate = draw(st.sampled_from((0.0, 0.02, 0.3)), label="special rate")
    x = _bulk(np.random.default_rng(seed), n, dtype, classes, rate)
    if n:
        at = st.one_of(st.integers(0, n - 1), st.integers(max(n - 64, 0), n - 1))
        for i, v in draw(st.lists(st.tuples(at, _floats(dtype)), max_size=6), label="planted"):
            with np.errstate(all="ignore"):
                x[i] = np.asarray(v, F32 if dtype != np.float16 else dtype).astype(dtype)
    return x.reshape(shape)


@st.composite
def pairs(draw, shape, dtype):
    """x and y; y copies or negates x on about half the elements, or not."""
    x, y = draw(arrays(shape, dtype), label="x"), draw(arrays(shape, dtype), label="y")
    relation = draw(st.sampled_from(("independent", "copy", "negate")), label="relation")
    if relation != "independent" and x.size:
        half = np.random.default_rng(x.size).random(shape) < 0.5
        y = np.where(half, x if relation == "copy" else -x, y)
    return x, y


def _on(dev, *arrays):
    return [jax.device_put(a, dev) for a in arrays]


# ---------------------------------------------------------------------------
# Models: float32 arithmetic as the platform does it, and comparisons.

def _widen(x) -> np.ndarray:
    return np.asarray(x).astype(F32)  # exact from float16 and bfloat16


def _daz(v, flush: bool) -> np.ndarray:
    """float32 values as a flushing platform reads them (subnormals as zeros
    of their sign); also float32 results as it writes them (FTZ)."""
    v = np.asarray(v, F32)
    if not flush:
        return v
    return np.where(np.abs(v) < _F32_TINY, np.copysign(np.float32(0), v), v).astype(F32)


_ftz = _daz


def _narrow(v32, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(v32, F32).astype(dtype)  # round to nearest even (NumPy, ml_dtypes)


def _fma32(a, x, y) -> np.ndarray:
    """a * x + y rounded once to float32 (what an FMA gives), from exact
    float64 arithmetic: the product of two floats is exact in float64, and
    the sum's rounding error (TwoSum) decides the one case where rounding
    the float64 sum again would be wrong, a float64 sum on a float32 tie."""
    with np.errstate(all="ignore"):
        p = np.asarray(a, F64) * np.asarray(x, F64)
        y = np.asarray(y, F64)
        s = p + y
        r = s.astype(F32)
        bb = s - p
        err = (p - (s - bb)) + (y - bb)
        r64 = r.astype(F64)
        other = np.nextafter(r, np.where(s > r64, np.inf, -np.inf).astype(F32))
        # The float32 tie next to s: between r and its neighbour past s, or,
        # where s rounded to infinity, float32's overflow threshold.
        tie = np.where(np.isinf(r), np.sign(r64) * (_F32_MAX + 2.0**103), (r64 + other.astype(F64)) / 2)
        wrong = np.isfinite(s) & (r64 != s) & (s == tie) & (err != 0) & ((r64 - s) * err < 0)
    return np.where(wrong, other, r).astype(F32)


def _same_bits(out, want) -> np.ndarray:
    """Elementwise: the same bits, or both NaN (payloads may differ)."""
    out, want = np.asarray(out), np.asarray(want)
    assert out.shape == want.shape and out.dtype == want.dtype, (out.shape, out.dtype, want.shape, want.dtype)
    return (_bits(out) == _bits(want)) | (_isnan(out) & _isnan(want))


def _same_value(out, want) -> np.ndarray:
    """Elementwise: equal values (+0 == -0), or both NaN."""
    out, want = np.asarray(out), np.asarray(want)
    assert out.shape == want.shape, (out.shape, want.shape)
    o, w = out.astype(F64), want.astype(F64)
    return (o == w) | (np.isnan(o) & np.isnan(w))


def _check(ok, what: str, **arrays):
    """Fails naming the first few elements where ``ok`` is False, with every
    array's value (and bits) there."""
    ok = np.asarray(ok)
    if ok.all():
        return
    bad = [tuple(int(i) for i in index) for index in np.argwhere(~ok)[:5]]
    lines = [f"{what}: {int((~ok).sum())} of {ok.size} elements wrong; first at {bad}"]
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.shape != ok.shape:
            lines.append(f"  {name}: {a!r}")
            continue
        picked = np.array([a[i] for i in bad], a.dtype)
        bits = f" bits {[hex(int(b)) for b in _bits(picked)]}" if a.dtype in DTYPES else ""
        lines.append(f"  {name} ({a.dtype}): {picked!r}{bits}")
    raise AssertionError("\n".join(lines))


def _close(out, ref, tol, dtype) -> np.ndarray:
    """Elementwise: |out - ref| <= tol for ref, tol float64; an infinite
    out where ref + tol reaches the dtype's largest finite value (the result
    overflowed when rounded); NaN where ref is NaN."""
    o = _widen(out).astype(F64)
    big = float(jnp.finfo(dtype).max)
    with np.errstate(all="ignore"):
        near = np.abs(o - ref) <= tol
        overflowed = np.where(o > 0, ref + tol >= big, ref - tol <= -big)
    return np.where(np.isnan(ref), np.isnan(o), np.where(np.isinf(o), overflowed, near))


def _elementwise(fn):
    """Parametrizes a property over the devices and the float dtypes."""
    fn = pytest.mark.parametrize("dev", DEVICES, ids=_platform)(fn)
    return pytest.mark.parametrize("dtype", DTYPES, ids=_name)(fn)


# ---------------------------------------------------------------------------
# vector_add

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
# saxpy

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


# ---------------------------------------------------------------------------
# relu

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
# bias_relu

@_elementwise
@_examples(30)
@given(data=st.data())
def test_bias_relu(dev, dtype, data):
    """``max(x + bias, 0)``, bias over the last axis: the float32 sum (the
    correctly rounded sum, as for vector_add), relu in float32, rounded once
    to the dtype; value for value the same as jnp.maximum(x + bias, 0) on the
    same device (rounding the sum first and then taking relu gives the same
    value: rounding is monotonic and keeps 0); bit for bit against the model,
    whose zeros are +0 as relu's are."""
    shape = data.draw(shapes(min_rank=1), label="shape")
    x = data.draw(arrays(shape, dtype), label="x")
    bias = data.draw(arrays(shape[-1:], dtype), label="bias")
    if x.size and data.draw(st.booleans(), label="bias cancels x"):
        x = np.where(np.random.default_rng(x.size).random(shape) < 0.5, -bias, x)
    flush = _flushes(dev)
    with jax.default_device(dev):
        dx, dbias = _on(dev, x, bias)
        out = cutlax.bias_relu(dx, dbias)
        ref = jnp.maximum(dx + dbias, jnp.zeros((), dtype))
    assert out.shape == shape and out.dtype == dtype
    with np.errstate(all="ignore"):
        s = _ftz(_daz(_widen(x), flush) + _daz(_widen(bias), flush), flush)
    model = _narrow(np.where(np.isnan(s) | (s > 0), s, 0), dtype)
    _check(_same_bits(out, model), "bias_relu vs the model", x=x, bias=bias, out=out, model=model)
    _check(_same_value(out, ref), "bias_relu vs jnp", x=x, bias=bias, out=out, jnp=ref)


# ---------------------------------------------------------------------------
# relu_backward and bias_relu_backward

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
# gemm

GEMM_DIMS = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 0, 32, 33, 64, 100, 127, 128, 129, 255, 256, 257, 300)
ACTIVATIONS = (None, "relu", "gelu")
# (impl, precision) per dtype: every kernel configuration, the tiled SGEMM,
# 3xTF32; 16-bit inputs ignore precision.
F32_VARIANTS = (("auto", None), ("auto", "default"), ("auto", "high"), ("auto", "highest"), ("tiled", None),
                ("tiled", "highest"), (gemm_module.PROMOTED, "highest")) + tuple(
                    (c, p) for c in gemm_module.configs(F32)[1:] for p in (None, "high"))
HALF_VARIANTS = {dtype: (("auto", None), ("auto", "highest")) + tuple((c, None) for c in gemm_module.configs(dtype)[1:])
                 for dtype in DTYPES[1:]}


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
    operand's big part, cutlax.ops.gemm._3xtf32_split). The NaNs are the canonical
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
# Invalid input: the documented exception types, raised at trace time (eager
# and under jit), the message prefixed with the op's name.

BAD_DTYPES = (np.int8, np.int32, np.uint8, np.bool_, np.complex64)


def _invalid_cases(shape, good, bad):
    """(op name, function, its array arguments, expected exception type):
    the arrays are passed to jax.jit as arguments (traced), other values are
    closed over."""
    x, xb = np.ones(shape, good), np.ones(shape, bad)
    other = DTYPES[(DTYPES.index(np.dtype(good)) + 1) % 3]
    xo = np.ones(shape, other)
    longer = np.ones(shape[:-1] + (shape[-1] + 1,), good)
    mat, bad_mat = np.ones((4, 8), good), np.ones((4, 8), bad)
    scalar = np.ones((), good)
    not_a_matrix = (x, np.ones((shape[-1], 3), good)) if len(shape) != 2 else (x.reshape(-1), x)
    wrong_config = ((lambda a, b: cutlax.gemm(a, b, impl="tiled"), TypeError) if good != F32 else
                    (lambda a, b: cutlax.gemm(a, b, impl=gemm_module.CONFIGS[1], precision="highest"), ValueError))
    return [
        ("vector_add", cutlax.vector_add, (xb, xb), TypeError),
        ("vector_add", cutlax.vector_add, (x, xo), TypeError),
        ("vector_add", cutlax.vector_add, (x, longer), ValueError),
        ("vector_add", lambda b: cutlax.vector_add("not an array", b), (x,), TypeError),
        ("saxpy", lambda a, b: cutlax.saxpy(2.0, a, b), (xb, xb), TypeError),
        ("saxpy", lambda a, b: cutlax.saxpy(2.0, a, b), (x, xo), TypeError),
        ("saxpy", lambda a, b: cutlax.saxpy(2.0, a, b), (x, longer), ValueError),
        ("saxpy", lambda a, b: cutlax.saxpy(True, a, b), (x, x), TypeError),
        ("saxpy", lambda a, b: cutlax.saxpy("2", a, b), (x, x), TypeError),
        ("saxpy", lambda a, b: cutlax.saxpy(1j, a, b), (x, x), TypeError),
        ("saxpy", cutlax.saxpy, (np.ones(2, np.float32), x, x), ValueError),
        ("saxpy", cutlax.saxpy, (np.ones((), np.int8), x, x), TypeError),
        ("saxpy", cutlax.saxpy, (np.ones((), np.float32), x, xo), TypeError),
        ("relu", cutlax.relu, (xb,), TypeError),
        ("bias_relu", cutlax.bias_relu, (xb, np.ones(shape[-1:], bad)), TypeError),
        ("bias_relu", cutlax.bias_relu, (x, np.ones(shape[-1:], other)), TypeError),
        ("bias_relu", cutlax.bias_relu, (x, np.ones((shape[-1] + 1,), good)), ValueError),
        ("bias_relu", cutlax.bias_relu, (x, np.ones((1,) + shape[-1:], good)), ValueError),
        ("bias_relu", cutlax.bias_relu, (scalar, np.ones((1,), good)), ValueError),
        ("relu_backward", cutlax.relu_backward, (x, xo), TypeError),
        ("relu_backward", cutlax.relu_backward, (xb, xb), TypeError),
        ("relu_backward", cutlax.relu_backward, (x, longer), ValueError),
        ("bias_relu_backward", cutlax.bias_relu_backward, (x, xo), TypeError),
        ("bias_relu_backward", cutlax.bias_relu_backward, (x, longer), ValueError),
        ("bias_relu_backward", cutlax.bias_relu_backward, (scalar, scalar), ValueError),
        ("gemm", cutlax.gemm, (bad_mat, bad_mat.T), TypeError),
        ("gemm", cutlax.gemm, (mat, np.ones((8, 4), other)), TypeError),
        ("gemm", cutlax.gemm, (mat, np.ones((7, 4), good)), ValueError),
        ("gemm", cutlax.gemm, not_a_matrix, ValueError),
        ("gemm", lambda a, b, bias: cutlax.gemm(a, b, bias=bias), (mat, mat.T, np.ones(4, other)), TypeError),
        ("gemm", lambda a, b, bias: cutlax.gemm(a, b, bias=bias), (mat, mat.T, np.ones(5, good)), ValueError),
        ("gemm", lambda a, b: cutlax.gemm(a, b, activation="swish"), (mat, mat.T), ValueError),
        ("gemm", lambda a, b: cutlax.gemm(a, b, impl="cublas"), (mat, mat.T), ValueError),
        ("gemm", lambda a, b: cutlax.gemm(a, b, precision="max"), (mat, mat.T), ValueError),
        ("gemm", wrong_config[0], (mat, mat.T), wrong_config[1]),
    ]


_INVALID_COUNT = len(_invalid_cases((2, 3), F32, np.int8))


@_examples(60)
@given(case=st.integers(0, _INVALID_COUNT - 1), shape=shapes(min_rank=1, max_rank=3).filter(lambda s: 0 < s[-1]),
       good=st.sampled_from(DTYPES), bad=st.sampled_from(BAD_DTYPES), jit=st.booleans())
def test_invalid_input_raises_the_documented_error(case, shape, good, bad, jit):
    """Wrong dtypes (or kinds) raise TypeError, wrong shapes, ranks and
    argument values ValueError, naming the op (``cutlax.<op>: ...``), at
    trace time: eagerly and inside jax.jit (the arrays traced) alike, before
    any kernel runs."""
    name, fn, args, error = _invalid_cases(shape, good, bad)[case]
    with pytest.raises(error, match=rf"^cutlax\.{name}: "):
        jax.jit(fn)(*args) if jit else fn(*args)


# ---------------------------------------------------------------------------
# What the properties step around.

@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
def test_platform_denormal_modes(dev):
    """The models' denormal assumption (_flushes) is XLA's own on the
    device: jnp arithmetic there reads float32 subnormals as zero (DAZ) and
    flushes subnormal results (FTZ) exactly where cutlax's models say the
    kernels do, for float32 and bfloat16."""
    flush = _flushes(dev)
    mul = jax.jit(lambda x, y: x * y)
    for dtype in (F32, np.dtype(jnp.bfloat16)):
        daz = float(mul(*_on(dev, np.array(2.0**-130, dtype), np.array(2.0**30, dtype))))
        ftz = float(mul(*_on(dev, np.array(2.0**-100, dtype), np.array(2.0**-30, dtype))))
        assert (daz == 0) == flush and (ftz == 0) == flush, (dev, dtype, daz, ftz)


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


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
@pytest.mark.parametrize("bits", [0x7F800001, 0xFF801000, 0x7F801FFF], ids=hex)
def test_default_precision_keeps_every_nan(dev, bits):
    """float32 gemm at the default precision (TF32): a NaN operand gives NaN
    whatever its payload. A regression test: the CPU twin's ``tf32``
    (src/ops/gemm_cpu.cpp) cleared the low 13 mantissa bits, which turned a
    NaN whose payload lies only there (a signalling NaN such as 0x7f800001)
    into an infinity, so its row of the result was -inf or +inf; it now
    keeps NaNs. The H200's tensor cores give NaN,
    as do precision="high" (cutlax.ops.gemm._tf32 keeps NaNs) and
    "highest" on both platforms."""
    a = np.full((1, 4), np.array(bits, np.uint32).view(np.float32))
    b = -np.ones((4, 4), np.float32)
    out = np.asarray(cutlax.gemm(*_on(dev, a, b)))
    assert np.all(np.isnan(out)), out
