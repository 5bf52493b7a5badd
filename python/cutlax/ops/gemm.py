"""gemm: ``act(a[M, K] @ b[K, N] + bias)``.

Two kernels stand behind ``cutlax.gemm``:

* the Hopper GEMM (targets gemm and gemm_aux, src/ops/gemm_sm90.cuh): bf16
  and f16, and float32 as TF32 (precision "default"; "high" and "highest"
  are 3xTF32, the three products of a big/small split: big x big on a TF32
  kernel, for "highest" the one that promotes its partial sums, and the
  cross products as one float16 GEMM), float32 accumulation, the bias and
  the activation fused into the epilogue, the result rounded once. gemm_aux
  also writes the pre-activation z, which gelu's backward needs; relu's
  backward needs only the result (c > 0 exactly where z > 0), in one sweep
  that also sums dbias (bias_relu_backward). The attribute ``transpose``
  lets the backward's products a @ b.T and a.T @ b read the forward's arrays
  as they are.
* float32 with impl="tiled": the teaching CuTe SGEMM (true FP32
  arithmetic), the bias and activation as cutlax elementwise ops after it.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _cutlax, _checks, batching, sharding
from cutlax.library import builtin
from cutlax.ops.bias_relu import bias_relu
from cutlax.ops.bias_relu_backward import bias_relu_backward
from cutlax.ops.relu import relu
from cutlax.ops.relu_backward import relu_backward

# The kernel configurations, in the order of GemmConfig (src/ops/gemm_configs.hpp):
# "auto" lets the C++ heuristic choose per shape (choose_gemm_config).
CONFIGS: tuple[str, ...] = tuple(_cutlax.build_info()["gemm_configs"])
IMPLS = ("auto", "tiled") + CONFIGS[1:]
# In the order of GemmActivation (src/ops/gemm.hpp).
ACTIVATIONS = (None, "relu", "gelu")
PRECISIONS = (None, "default", "high", "highest")
_NONE, _RELU, _GELU = range(3)
# The attribute "transpose", in the order of GemmTranspose: which operand the
# kernel reads transposed.
_TRANSPOSES = tuple(_cutlax.build_info()["gemm_transposes"])
TRANSPOSES = _TRANSPOSES  # the op's attribute values, for callers of the op itself (docs/gemm.md, "The op")
_PLAIN, _B_TRANSPOSED, _A_TRANSPOSED = (_TRANSPOSES.index(t) for t in ("none", "b", "a"))
# The SM90 kernels that are built (src/ops/gemm_kernels.def), as
# (dtype name, transpose name, config name): not every configuration for
# every dtype and form.
KERNELS: frozenset[tuple[str, str, str]] = frozenset(map(tuple, _cutlax.build_info()["gemm_kernels"]))


def configs(dtype) -> tuple[str, ...]:
    """The configurations that impl= can force for this dtype, in CONFIGS'
    order, "auto" first: those built for a form that reads a as it is
    stored, with b as stored or copied to (N, K) (float32: the promoted
    kernel takes b as (N, K)). The backward's a-transposed form may have more,
    e.g. the 64x128 kernel that auto picks for the weight gradient."""
    name = jnp.dtype(dtype).name
    return tuple(c for c in CONFIGS if c == "auto" or any((name, f, c) in KERNELS for f in ("none", "b")))


# The float32 kernel that adds its WGMMA partial sums into registers every K
# tile (gemm_configs.hpp): the truncating tensor-core accumulation then
# covers 32 products, not all of K, and 3xTF32 on it is as accurate as FP32.
# precision="highest" runs on it.
PROMOTED = "cooperative_128x128_1x1_promoted"

# TMA moves rows of 16 bytes: each array's rows must be multiples of 16 bytes.
_ROW_BYTES = 16

_tiled = builtin("gemm_tiled", public_name="cutlax.gemm")
_fused = builtin("gemm", public_name="cutlax.gemm")
_fused_aux = builtin("gemm_aux", public_name="cutlax.gemm")


class _Operand(NamedTuple):
    """A product's operand as stored: the array, and whether the product
    uses its transpose (which a kernel form may read without a copy)."""

    array: jax.Array
    transposed: bool = False

    @property
    def T(self) -> _Operand:
        return _Operand(self.array, not self.transposed)

    @property
    def shape(self) -> tuple[int, int]:
        """The shape of the matrix in the product (the array's, reversed if
        transposed)."""
        rows, cols = self.array.shape
        return (cols, rows) if self.transposed else (rows, cols)

    def flipped(self) -> _Operand:
        """The same matrix stored the other way: a transposing copy."""
        return _Operand(self.array.T, not self.transposed)


def _operands(a, b, transpose=_PLAIN) -> tuple[_Operand, _Operand]:
    """The op's arrays as the product's operands, by its attribute transpose."""
    return _Operand(a, transpose == _A_TRANSPOSED), _Operand(b, transpose == _B_TRANSPOSED)


def _no_bias(dtype):
    """The bias operand of a product without one: length 0, which the kernel
    takes as none. It reads no bias then, and no N zeros are written first (a
    kernel of XLA's that the persistent GEMM would wait for)."""
    return jnp.zeros((0,), dtype)


def _check_operands(a, b, *bias, bias_may_be_empty=True, **attrs):
    """The op's operands; a bias of length 0 is the op's "no bias", which
    cutlax.gemm's own bias= (bias_may_be_empty=False) cannot be."""
    _checks.rank("a", a, 2)
    _checks.rank("b", b, 2)
    if attrs.get("transpose", _PLAIN) not in range(len(_TRANSPOSES)):
        raise ValueError(f"transpose must be 0 (none), 1 (b) or 2 (a), got {attrs['transpose']}")
    x, y = _operands(a, b, attrs.get("transpose", _PLAIN))
    (_, k_a), (k_b, n) = x.shape, y.shape
    if k_a != k_b:
        raise ValueError(f"b has shape {tuple(b.shape)}; expected its K to be {k_a}, a's, "
                         f"as a has shape {tuple(a.shape)}")
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {b.dtype.name}; expected {a.dtype.name}, a's")
    for z in bias:
        _checks.rank("bias", z, 1)
        if z.shape[0] != n and not (bias_may_be_empty and z.shape[0] == 0):
            none = ", or (0,) for none" if bias_may_be_empty else ""
            raise ValueError(f"bias has shape {tuple(z.shape)}; expected ({n},), N{none}")
        if z.dtype != a.dtype:
            raise TypeError(f"bias has dtype {z.dtype.name}; expected {a.dtype.name}, a's")


def _product_shape(a, b, *bias, transpose=_PLAIN, **attrs):
    x, y = _operands(a, b, transpose)
    return jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), a.dtype)


def _batched(call, axis_size, in_batched, a, b, *bias):
    """A batch of a alone folds into M, a batch of b alone into N (the bias
    repeated per batch element): one launch, where that operand is not read
    transposed. Otherwise lax.map runs one launch per batch element (a
    batched kernel would take them in one)."""
    a_batched, b_batched, bias_batched = in_batched[0], in_batched[1], any(in_batched[2:])
    transpose = call.attrs.get("transpose", _PLAIN)
    if a_batched and not b_batched and not bias_batched and transpose != _A_TRANSPOSED:
        batch, m, k = a.shape  # (B, M, K) @ b = ((B M), K) @ b
        out = call(a.reshape(batch * m, k), b, *bias)
        out = jax.tree.map(lambda r: r.reshape(batch, r.shape[0] // batch, r.shape[1]), out)
        return out, jax.tree.map(lambda _: True, out)
    if b_batched and not a_batched and not bias_batched and transpose != _B_TRANSPOSED:
        batch, k, n = b.shape  # a @ (B, K, N) = a @ (K, (B N))
        folded = call(a, jnp.transpose(b, (1, 0, 2)).reshape(k, batch * n), *(jnp.tile(x, batch) for x in bias))
        out = jax.tree.map(lambda r: jnp.transpose(r.reshape(r.shape[0], batch, n), (1, 0, 2)), folded)
        return out, jax.tree.map(lambda _: True, out)
    return batching.SEQUENTIAL(call, axis_size, in_batched, a, b, *bias)


# The teaching SGEMM: float32.
_tiled.def_checks(_check_operands)
_tiled.def_shape(_product_shape)
_tiled.def_vmap(_batched)
_tiled.def_sharding(sharding.MATMUL)


@_tiled.def_vjp
def _tiled_vjp(args, out, g):
    # The transposed products run on the same kernel: da = g b^T, db = a^T g.
    a, b = args
    return _tiled(g, b.T), _tiled(a.T, g)


# The Hopper GEMM: bf16, f16, and f32 as TF32.
_OPERAND_DIMS = {_PLAIN: ("m k", "k n"), _B_TRANSPOSED: ("m k", "n k"), _A_TRANSPOSED: ("k m", "k n")}
for _op, _results in ((_fused, 1), (_fused_aux, 2)):
    _op.def_checks(_check_operands)
    _op.def_vmap(_batched)
    _op.def_shape(_product_shape if _results == 1 else lambda *args, **attrs: (_product_shape(*args, **attrs),) * 2)
    _rules = {t: sharding.fused_matmul(*dims, results=_results) for t, dims in _OPERAND_DIMS.items()}
    _op.def_sharding(lambda attrs, _rules=_rules: _rules[attrs["transpose"]])


def _round_up(n, multiple):
    return -(-n // multiple) * multiple


def _built(dtype, transpose: int, config: int = 0) -> bool:
    """Whether a kernel is built for the dtype and form (in the configuration,
    unless it is 0, auto)."""
    return any(k[:2] == (jnp.dtype(dtype).name, _TRANSPOSES[transpose]) and (config == 0 or k[2] == CONFIGS[config])
               for k in KERNELS)


def _stored_forms(x: _Operand, y: _Operand, config: int):
    """The operands as a built kernel form reads them, with the fewest
    transposing copies: each operand as stored, or copied to the other
    layout (the same matrix); in the configuration asked for where some form
    has it (else 0, the heuristic's). Returns them, the form and the
    configuration."""
    forms = []
    for flip_x, flip_y in ((False, False), (True, False), (False, True), (True, True)):
        fx, fy = x.flipped() if flip_x else x, y.flipped() if flip_y else y
        if not (fx.transposed and fy.transposed):
            forms.append((fx, fy, _A_TRANSPOSED if fx.transposed else _B_TRANSPOSED if fy.transposed else _PLAIN))
    for wanted in dict.fromkeys((config, 0)):
        for fx, fy, transpose in forms:
            if _built(fx.array.dtype, transpose, wanted):
                return fx, fy, transpose, wanted
    raise TypeError(f"cutlax.gemm: no kernel is built for {x.array.dtype.name}")


def _product(x: _Operand, y: _Operand, bias, activation: int, config: int):
    """act(x @ y + bias) on the Hopper kernel, for any M, N, K: the kernel
    form that reads the operands as stored (a copy only where no built form
    does, e.g. both transposed), in the configuration asked for where a form
    has it, with a copy if need be (float32's promoted kernel takes b as
    (N, K)), else the heuristic's; the rows padded with zeros to 16
    bytes (zero columns of a and rows of b add nothing; padded rows and
    columns of the result are dropped). Returns c, and z for gelu."""
    x, y, transpose, config = _stored_forms(x, y, config)
    a, b = x.array, y.array
    align = _ROW_BYTES // a.dtype.itemsize
    (m, k), n = x.shape, y.shape[1]
    # Rows that must be whole multiples: K (a's rows) unless a is transposed,
    # then M; N always (b's or the result's rows). K is at least 1.
    m_pad = _round_up(m, align) - m if x.transposed else 0
    k_pad = max(k, 1) - k if x.transposed else max(_round_up(k, align), align) - k
    n_pad = _round_up(n, align) - n
    if m_pad or k_pad or n_pad:
        a = jnp.pad(a, ((0, k_pad), (0, m_pad)) if x.transposed else ((0, 0), (0, k_pad)))
        b = jnp.pad(b, ((0, n_pad), (0, k_pad)) if y.transposed else ((0, k_pad), (0, n_pad)))
        if bias.shape[0]:  # else none
            bias = jnp.pad(bias, (0, n_pad))
    op = _fused_aux if activation == _GELU else _fused
    out = op(a, b, bias, activation=activation, config=config, transpose=transpose)
    if m_pad or n_pad:
        out = jax.tree.map(lambda r: r[:m, :n], out)
    return out


def _column_sums(dz):
    return dz.astype(jnp.float32).sum(axis=0).astype(dz.dtype)


def _activation_backward(activation, out, cts, bias):
    """dz = g act'(z), and dbias = its column sums (for relu from the one
    sweep that also masks g); an empty bias (none) has an empty gradient."""
    has_bias = bias.shape[0] != 0
    if activation == _GELU:
        (_, z), (g, _) = out, cts
        _, gelu_vjp = jax.vjp(jax.nn.gelu, z.astype(jnp.float32))
        dz = gelu_vjp(g.astype(jnp.float32))[0].astype(z.dtype)
    elif activation == _RELU:
        if has_bias:
            return bias_relu_backward(out, cts)
        dz = relu_backward(out, cts)
    else:
        dz = cts
    return dz, _column_sums(dz) if has_bias else jnp.zeros_like(bias)


def _gradients(x: _Operand, y: _Operand, dz, product):
    """The arrays' gradients for c = x @ y: dx = dz y^T, dy = x^T dz, each
    transposed back where the array holds the transpose."""
    g = _Operand(dz)
    da = product(y, g.T) if x.transposed else product(g, y.T)
    db = product(g.T, x) if y.transposed else product(x.T, g)
    return da, db


def _fused_vjp(args, out, cts, activation, config, transpose):
    a, b, bias = args
    dz, dbias = _activation_backward(activation, out, cts, bias)

    def product(x, y):
        return _product(x, y, _no_bias(y.array.dtype), _NONE, config)

    da, db = _gradients(*_operands(a, b, transpose), dz, product)
    return da, db, dbias


_fused.def_vjp(_fused_vjp)
_fused_aux.def_vjp(_fused_vjp)


# precision="high" and "highest" in float32: 3xTF32. Each operand splits
# into a big part (rounded to TF32) and a small one (the remainder, also
# rounded), and a b = a_big b_big + (a_big b_small + a_small b_big) + (a_small
# b_small, below float32's precision, left out). a_big b_big runs on a TF32
# kernel with the bias ("highest": the promoted one, whose partial sums are
# added in registers every K tile; "high": the heuristic's, truncating over
# all of K). The cross products, 2^-11 of it, where the truncating
# accumulation costs little, run in float16 (_cross_products): every part has
# TF32's 11 significant bits, which float16 holds exactly once scaled into
# its range, so they are the same products at twice TF32's speed. XLA adds
# the two and applies the activation in one fusion. An infinity's small part
# is 0, and the cross products take the big parts with infinities as 0: the
# infinity meets only the other operand's big part, as it would in FP32
# (inf x 0 would otherwise make a NaN where the product is infinite).

def _tf32(x):
    """x rounded to TF32 (10 mantissa bits), to nearest even; values that
    would round past the largest float are cut instead."""
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)
    cut = bits & np.uint32(0xFFFFE000)
    out = jax.lax.bitcast_convert_type(rounded, jnp.float32)
    out = jnp.where(jnp.isfinite(x) & ~jnp.isfinite(out), jax.lax.bitcast_convert_type(cut, jnp.float32), out)
    return jnp.where(jnp.isnan(x), x, out)  # a NaN's payload could round to infinity


def _3xtf32_split(x):
    """x's big part (TF32), for a_big b_big; and the cross products' two
    parts: the big part with infinities as 0, and the small part (0 for
    infinities)."""
    big = _tf32(x)
    return big, (jnp.where(jnp.isinf(x), 0.0, big), _tf32(jnp.where(jnp.isfinite(x), x - big, 0.0)))


# The norm that _cross_products scales each row of a and column of b to,
# below 2^12: every scaled part is then at most 2^12 and each cross sum at
# most 2^-10 |a_r s| |b_c t| < 2^14 (Cauchy-Schwarz), both within float16's
# range (largest 65504). A small part stays exact (normal) down to entries
# 2^-15 of their row's or column's norm; below, float16 rounds it to a
# multiple of 2^-24 (2^-36 of the norm), and a big part down to 2^-26.
_CROSS_NORM_BITS = 12


def _scale_exponents(x, axis):
    """s per row (axis=1) or column (axis=0) of x, keeping x's rank: the
    norm of x's finite entries times 2^s lies in [2^11, 2^12) (s = 12 where
    all are 0)."""
    finite = jnp.where(jnp.isfinite(x), x, 0.0)
    _, top = jnp.frexp(jnp.max(jnp.abs(finite), axis=axis, keepdims=True, initial=0.0))  # K may be 0
    unit = jnp.ldexp(finite, -top)  # entries below 1: the squares' sum cannot overflow
    _, norm = jnp.frexp(jnp.sqrt(jnp.sum(unit * unit, axis=axis, keepdims=True)))
    return _CROSS_NORM_BITS - top - norm


def _cross_products(a, b, a_parts, b_parts):
    """a_big b_small + a_small b_big in float32, from _3xtf32_split's
    (big, small) parts, as one float16 GEMM over 2K: [a_big | a_small] 2^s
    @ [b_small; b_big] 2^t, a's rows scaled by 2^s and b's columns by 2^t
    (exact powers of two, _scale_exponents), the result scaled back. The
    float16 result rounds the cross sum (2^-11 of the product) to 11 bits."""
    s, t = _scale_exponents(a, 1), _scale_exponents(b, 0)
    (a_big, a_small), (b_big, b_small) = a_parts, b_parts

    def half(x, e):
        return jnp.ldexp(x, e).astype(jnp.float16)

    cross = _product(_Operand(jnp.concatenate([half(a_big, s), half(a_small, s)], axis=1)),
                     _Operand(jnp.concatenate([half(b_small, t), half(b_big, t)], axis=0)),
                     _no_bias(jnp.float16), _NONE, 0)
    return jnp.ldexp(cross.astype(jnp.float32), -(s + t))


def _3xtf32_forward(a, b, bias, activation, config):
    # a_big b_big reads b's big part as (N, K), the TF32 kernel's K-major B:
    # XLA fuses the rounding with that copy.
    (a_big, a_parts), (b_big, b_parts) = _3xtf32_split(a), _3xtf32_split(b)
    big = _product(_Operand(a_big), _Operand(b_big.T, True), bias, _NONE, config)
    z = big + _cross_products(a, b, a_parts, b_parts)
    if activation == _RELU:
        out = jax.nn.relu(z)
    elif activation == _GELU:
        out = jax.nn.gelu(z), z  # the kernel's tanh form, and z for the backward as gemm_aux gives it
    else:
        out = z
    return out, (a, b, bias, out)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _3xtf32_product(a, b, bias, activation: int, config: int):
    """act(a @ b + bias) in float32 by 3xTF32; its gradients likewise."""
    return _3xtf32_forward(a, b, bias, activation, config)[0]


def _3xtf32_backward(activation, config, residuals, cts):
    a, b, bias, out = residuals
    dz, dbias = _activation_backward(activation, out, cts, bias)

    def product(x, y):
        x, y = (o.array.T if o.transposed else o.array for o in (x, y))
        return _3xtf32_product(x, y, _no_bias(x.dtype), _NONE, config)

    da, db = _gradients(_Operand(a), _Operand(b), dz, product)
    return da, db, dbias


_3xtf32_product.defvjp(_3xtf32_forward, _3xtf32_backward)


def gemm(a, b, *, bias=None, activation=None, impl: str = "auto", precision=None) -> jax.Array:
    """``act(a @ b + bias)`` for a[M, K], b[K, N], bias[N] (optional).

    activation: None, "relu" or "gelu" (the tanh form, ``jax.nn.gelu``'s
    default: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))).

    The Hopper (SM90) GEMM, float32 accumulation, the bias and activation
    fused into its epilogue, the result rounded once to the inputs' dtype;
    bias has the inputs' dtype. impl:
      "auto"   the configuration the heuristic picks per shape (float32:
               the 128x256 cooperative kernel; 16-bit: the same where K >=
               8192 and its tiles fill four waves of the SMs, the 64x128
               ping-pong kernel where 128x128 tiles leave SMs idle, else the
               128x128 ping-pong kernel; docs/gemm.md)
      a name in ``cutlax.ops.gemm.configs(dtype)[1:]`` forces that
               configuration (where the product's operand form has it: the
               backward's transposed products fall back on "auto" where
               they do not; ``KERNELS`` lists what is built)
      "tiled"  float32 only: the teaching CuTe SGEMM in true FP32 arithmetic
               (any precision), bias and activation as cutlax elementwise
               ops after it.
    Rows that are not multiples of 16 bytes are padded with zeros (a copy).

    precision (float32; JAX's names): None or "default" multiplies in TF32
    (tensor cores read 10 mantissa bits, as XLA's default on this GPU);
    "high" by 3xTF32 (three products of a big/small split of each operand,
    big x big on the heuristic's TF32 kernel, the two cross products in
    float16), fast but less accurate than XLA's "highest" as K grows:
    the tensor cores' own accumulation truncates; "highest" by 3xTF32 with
    big x big on ``PROMOTED``, whose partial sums are added in registers
    every K tile, with FP32's accuracy (bench/RESULTS.md has both against
    XLA's "highest"), or on impl="tiled".
    bfloat16/float16 ignore it.
    """
    with _checks.errors("cutlax.gemm"):
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        a = _checks.array("a", a, dtypes=(jnp.float32, jnp.bfloat16, jnp.float16))
        b = _checks.array("b", b, dtypes=(a.dtype,))
        if bias is not None:
            bias = _checks.array("bias", bias, dtypes=(a.dtype,))
        _check_operands(a, b, *(() if bias is None else (bias,)), bias_may_be_empty=False)
        if a.dtype != jnp.float32 and impl == "tiled":
            raise TypeError(f"impl='tiled' takes float32, got {a.dtype.name}")
        if impl in CONFIGS and impl not in configs(a.dtype):
            raise ValueError(f"impl={impl!r} has no {a.dtype.name} kernel for a @ b; {a.dtype.name} has "
                             f"{configs(a.dtype) + (('tiled',) if a.dtype == jnp.float32 else ())}")
        if a.dtype == jnp.float32 and precision == "highest" and impl not in ("auto", "tiled", PROMOTED):
            raise ValueError(f"precision='highest' runs on impl='auto' ({PROMOTED!r}) or 'tiled' (FP32 accuracy), "
                             f"not impl={impl!r}")
    if a.dtype == jnp.float32 and precision == "highest" and impl == "auto":
        impl = PROMOTED
    if impl == "tiled":
        c = _tiled(a, b)
        if activation == "gelu":
            return jax.nn.gelu(c if bias is None else c + bias)
        if bias is None:
            return relu(c) if activation == "relu" else c
        return bias_relu(c, bias) if activation == "relu" else c + bias
    if bias is None:
        bias = _no_bias(a.dtype)
    args = (bias, ACTIVATIONS.index(activation), CONFIGS.index(impl))
    if a.dtype == jnp.float32 and precision in ("high", "highest"):
        out = _3xtf32_product(a, b, *args)
    else:
        out = _product(_Operand(a), _Operand(b), *args)
    return out[0] if activation == "gelu" else out


__all__ = ["gemm"]
