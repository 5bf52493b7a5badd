"""What the property tests (hypothesis) share: settings, strategies for
shapes and values, exact NumPy models of the ops' arithmetic, comparisons,
and the invalid-input helpers. Each op's own properties live in its test
file, next to its other tests:

    vector_add          test_vector_add.py     bit for bit: the correctly rounded sum (== jnp.add)
    saxpy (static       test_saxpy.py          bit for bit: one of the two roundings of alpha * x + y
      and 0-d alpha)                             that float32 arithmetic allows (FMA, or multiply then add)
    relu                test_relu.py           exact: x where x > 0, NaN kept, a zero where x <= 0
    bias_relu           test_bias_relu.py      exact: relu of the rounded float32 sum (== jnp's, value for value)
    relu_backward       test_backward.py       bit for bit: g where y > 0, else +0 (== jnp.where)
    bias_relu_backward  test_backward.py       dx bit for bit; dbias within float32 summation's bound
    gemm                test_gemm_properties.py  every dtype, impl and precision, bias, activation None,
                                             relu, gelu: bit for bit on exactly representable integer
                                             problems (subnormal and overflowing results included),
                                             within a derived rounding bound on random ones, and
                                             NaN/inf where IEEE arithmetic puts them
    invalid input       each op's file         TypeError / ValueError, named after the op, eager and under jit

plus test_denormals.py, which checks the platforms' denormal modes that the
models assume, and regression tests of three bugs of the CPU twins that these
properties found (the GPU was right each time; see their docstrings): relu of
a negative subnormal (test_relu.py), saxpy's rounding at the end of an array
(test_saxpy.py), and the TF32 GEMM's handling of NaNs whose payload lies in
the low mantissa bits (test_gemm_properties.py).

Names. The helpers keep the leading underscore they had when every property
lived in one file: hypothesis derives a derandomized test's examples from its
source, so the moved tests, unchanged, still run the same examples.

Examples. Every property runs a fixed number of examples (``_examples(n)``
below), derandomized: hypothesis seeds its generator from the test, so CI runs
the same examples on every run and a failure reproduces by rerunning the
test; no example database is written, and hypothesis' other files (its
cache of the test's constants, a failure's patch) go to the temp dir, not
.hypothesis/ in the checkout. For a longer search (``-m hypothesis`` selects
the properties, a marker hypothesis gives them):

    CUTLAX_HYPOTHESIS_EXAMPLES=20 python3 -m pytest tests/python -m hypothesis
        # 20 times the examples (a float: 0.5 halves them)
    CUTLAX_HYPOTHESIS_RANDOM=1 python3 -m pytest tests/python -m hypothesis
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
one per shape, dtype and attribute).

Denormals. XLA:CPU runs its threads with FTZ and DAZ set, and the C++ twins
run on those threads: float32 subnormals read as zeros of their sign and
float32 subnormal results flush to zero, in jnp and cutlax alike. nvcc keeps
subnormals (no -ftz), and so does XLA:GPU. The models below read float32
values through ``_daz`` and flush results through ``_ftz`` on a flushing
platform (float16 values widen to normal float32 values, so only float32 and
bfloat16 are affected); ``test_platform_denormal_modes`` (test_denormals.py)
checks that XLA's own arithmetic does the same.
"""

from __future__ import annotations

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
# Invalid input: the documented exception types, raised at trace time (eager
# and under jit), the message prefixed with the op's name. Each op's file
# lists its cases, (function, its array arguments, expected exception type):
# the arrays are passed to jax.jit as arguments (traced), other values are
# closed over.

BAD_DTYPES = (np.int8, np.int32, np.uint8, np.bool_, np.complex64)

# What an invalid-input property draws: the shape (a non-empty last axis),
# a supported dtype, an unsupported one, and whether to call under jax.jit.
INVALID_INPUT = dict(shape=shapes(min_rank=1, max_rank=3).filter(lambda s: 0 < s[-1]),
                     good=st.sampled_from(DTYPES), bad=st.sampled_from(BAD_DTYPES), jit=st.booleans())


def _invalid_operands(shape, good, bad):
    """x of the good dtype, xb of the bad one, xo of another good dtype,
    ``longer`` (x one longer on its last axis), a 0-d ``scalar`` of the good
    dtype, and that other dtype."""
    x, xb = np.ones(shape, good), np.ones(shape, bad)
    other = DTYPES[(DTYPES.index(np.dtype(good)) + 1) % 3]
    xo = np.ones(shape, other)
    longer = np.ones(shape[:-1] + (shape[-1] + 1,), good)
    scalar = np.ones((), good)
    return x, xb, xo, longer, scalar, other


def invalid_input_test(name, cases, examples):
    """The invalid-input property of op ``name``: each of ``cases(shape,
    good_dtype, bad_dtype)`` (fn, args, error) raises ``error`` whose message
    starts with ``cutlax.<name>: `` (TypeError for wrong dtypes or kinds,
    ValueError for wrong shapes, ranks and argument values), at trace time,
    eagerly and inside jax.jit (the arrays traced) alike, before any kernel
    runs. Assign it to a test_ name in the op's test file."""

    @_examples(examples)
    @given(case=st.integers(0, len(cases((2, 3), F32, np.int8)) - 1), **INVALID_INPUT)
    def test(case, shape, good, bad, jit):
        fn, args, error = cases(shape, good, bad)[case]
        _raises_the_documented_error(name, fn, args, error, jit)

    return test


def _raises_the_documented_error(name, fn, args, error, jit):
    """``fn(*args)``, eagerly or under jax.jit (the arrays traced), raises
    ``error`` whose message starts with ``cutlax.<name>: ``."""
    with pytest.raises(error, match=rf"^cutlax\.{name}: "):
        jax.jit(fn)(*args) if jit else fn(*args)
