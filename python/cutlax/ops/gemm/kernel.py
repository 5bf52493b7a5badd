"""The ops behind cutlax.gemm's cutlax route: the Hopper GEMM (targets gemm
and gemm_aux, src/ops/gemm_sm90.cuh; the CPU twin src/ops/gemm_cpu.cpp) and
the teaching SGEMM (gemm_tiled), with their checks, shape rules, batching,
sharding and derivatives, and ``product``, which runs a product on the
Hopper op in the form and padding the plan gives (plan.kernel_form,
plan.padding).

gemm_aux also writes the pre-activation z, which gelu's backward needs;
relu's backward needs only the result (c > 0 exactly where z > 0), in one
sweep that also sums dbias (bias_relu_backward). The attribute
``transpose`` lets the backward's products a @ b.T and a.T @ b read the
forward's arrays as they are.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from cutlax import _checks, batching, sharding
from cutlax.library import builtin
from cutlax.ops.bias_relu_backward import bias_relu_backward
from cutlax.ops.gemm import facts, plan
from cutlax.ops.relu_backward import relu_backward

tiled = builtin("gemm_tiled", public_name="cutlax.gemm")
fused = builtin("gemm", public_name="cutlax.gemm")
fused_aux = builtin("gemm_aux", public_name="cutlax.gemm")


class Operand(NamedTuple):
    """A product's operand as stored: the array, and whether the product
    uses its transpose (which a kernel form may read without a copy)."""

    array: jax.Array
    transposed: bool = False

    @property
    def T(self) -> Operand:
        return Operand(self.array, not self.transposed)

    @property
    def shape(self) -> tuple[int, int]:
        """The shape of the matrix in the product (the array's, reversed if
        transposed)."""
        rows, cols = self.array.shape
        return (cols, rows) if self.transposed else (rows, cols)

    def flipped(self) -> Operand:
        """The same matrix stored the other way: a transposing copy."""
        return Operand(self.array.T, not self.transposed)


def operands(a, b, transpose=facts.PLAIN) -> tuple[Operand, Operand]:
    """The op's arrays as the product's operands, by its attribute transpose."""
    return Operand(a, transpose == facts.A_TRANSPOSED), Operand(b, transpose == facts.B_TRANSPOSED)


def no_bias(dtype):
    """The bias operand of a product without one: length 0, which the kernel
    takes as none. It reads no bias then, and no N zeros are written first (a
    kernel of XLA's that the persistent GEMM would wait for)."""
    return jnp.zeros((0,), dtype)


def check_operands(a, b, *bias, bias_may_be_empty=True, **attrs):
    """The op's operands; a bias of length 0 is the op's "no bias", which
    cutlax.gemm's own bias= (bias_may_be_empty=False) cannot be."""
    _checks.rank("a", a, 2)
    _checks.rank("b", b, 2)
    if attrs.get("transpose", facts.PLAIN) not in range(len(facts.TRANSPOSES)):
        forms = [f"{i} ({t})" for i, t in enumerate(facts.TRANSPOSES)]
        raise ValueError(f"transpose must be {', '.join(forms[:-1])} or {forms[-1]}, got {attrs['transpose']}")
    x, y = operands(a, b, attrs.get("transpose", facts.PLAIN))
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


def _product_shape(a, b, *bias, transpose=facts.PLAIN, **attrs):
    x, y = operands(a, b, transpose)
    return jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), a.dtype)


def _batched(call, axis_size, in_batched, a, b, *bias):
    """A batch of a alone folds into M, a batch of b alone into N (the bias
    repeated per batch element): one launch, where that operand is not read
    transposed. Otherwise lax.map runs one launch per batch element (a
    batched kernel would take them in one)."""
    a_batched, b_batched, bias_batched = in_batched[0], in_batched[1], any(in_batched[2:])
    transpose = call.attrs.get("transpose", facts.PLAIN)
    if a_batched and not b_batched and not bias_batched and transpose != facts.A_TRANSPOSED:
        batch, m, k = a.shape  # (B, M, K) @ b = ((B M), K) @ b
        out = call(a.reshape(batch * m, k), b, *bias)
        out = jax.tree.map(lambda r: r.reshape(batch, r.shape[0] // batch, r.shape[1]), out)
        return out, jax.tree.map(lambda _: True, out)
    if b_batched and not a_batched and not bias_batched and transpose != facts.B_TRANSPOSED:
        batch, k, n = b.shape  # a @ (B, K, N) = a @ (K, (B N))
        folded = call(a, jnp.transpose(b, (1, 0, 2)).reshape(k, batch * n), *(jnp.tile(x, batch) for x in bias))
        out = jax.tree.map(lambda r: jnp.transpose(r.reshape(r.shape[0], batch, n), (1, 0, 2)), folded)
        return out, jax.tree.map(lambda _: True, out)
    return batching.SEQUENTIAL(call, axis_size, in_batched, a, b, *bias)


# The teaching SGEMM: float32.
tiled.def_checks(check_operands)
tiled.def_shape(_product_shape)
tiled.def_vmap(_batched)
tiled.def_sharding(sharding.MATMUL)


@tiled.def_vjp
def _tiled_vjp(args, out, g):
    # The transposed products run on the same kernel: da = g b^T, db = a^T g.
    a, b = args
    return tiled(g, b.T), tiled(a.T, g)


# The Hopper GEMM: bf16, f16, and f32 as TF32.
_OPERAND_DIMS = {facts.PLAIN: ("m k", "k n"), facts.B_TRANSPOSED: ("m k", "n k"),
                 facts.A_TRANSPOSED: ("k m", "k n")}
for _op, _results in ((fused, 1), (fused_aux, 2)):
    _op.def_checks(check_operands)
    _op.def_vmap(_batched)
    _op.def_shape(_product_shape if _results == 1 else lambda *args, **attrs: (_product_shape(*args, **attrs),) * 2)
    _rules = {t: sharding.fused_matmul(*dims, results=_results) for t, dims in _OPERAND_DIMS.items()}
    _op.def_sharding(lambda attrs, _rules=_rules: _rules[attrs["transpose"]])


def product(x: Operand, y: Operand, bias, activation: int, config: int):
    """act(x @ y + bias) on the Hopper op, for any M, N, K: the kernel form
    and configuration plan.kernel_form picks (a copy only where no built
    form reads the operands as stored), the rows padded with zeros by
    plan.padding (zero columns of a and rows of b add nothing; padded rows
    and columns of the result are dropped). Returns c, and z for gelu."""
    copy_x, copy_y, transpose, config = plan.kernel_form(x.array.dtype, x.transposed, y.transposed, config)
    x, y = (x.flipped() if copy_x else x), (y.flipped() if copy_y else y)
    a, b = x.array, y.array
    (m, k), n = x.shape, y.shape[1]
    m_pad, n_pad, k_pad = plan.padding(a.dtype, m, n, k, x.transposed)
    if m_pad or k_pad or n_pad:
        a = jnp.pad(a, ((0, k_pad), (0, m_pad)) if x.transposed else ((0, 0), (0, k_pad)))
        b = jnp.pad(b, ((0, n_pad), (0, k_pad)) if y.transposed else ((0, k_pad), (0, n_pad)))
        if bias.shape[0]:  # else none
            bias = jnp.pad(bias, (0, n_pad))
    op = fused_aux if activation == facts.GELU else fused
    out = op(a, b, bias, activation=activation, config=config, transpose=transpose)
    if m_pad or n_pad:
        out = jax.tree.map(lambda r: r[:m, :n], out)
    return out


def _column_sums(dz):
    return dz.astype(jnp.float32).sum(axis=0).astype(dz.dtype)


def activation_backward(activation, out, cts, bias):
    """dz = g act'(z), and dbias = its column sums (for relu from the one
    sweep that also masks g); an empty bias (none) has an empty gradient."""
    has_bias = bias.shape[0] != 0
    if activation == facts.GELU:
        (_, z), (g, _) = out, cts
        _, gelu_vjp = jax.vjp(jax.nn.gelu, z.astype(jnp.float32))
        dz = gelu_vjp(g.astype(jnp.float32))[0].astype(z.dtype)
    elif activation == facts.RELU:
        if has_bias:
            return bias_relu_backward(out, cts)
        dz = relu_backward(out, cts)
    else:
        dz = cts
    return dz, _column_sums(dz) if has_bias else jnp.zeros_like(bias)


def gradients(x: Operand, y: Operand, dz, product_fn):
    """The arrays' gradients for c = x @ y: dx = dz y^T, dy = x^T dz, each
    transposed back where the array holds the transpose."""
    g = Operand(dz)
    da = product_fn(y, g.T) if x.transposed else product_fn(g, y.T)
    db = product_fn(g.T, x) if y.transposed else product_fn(x.T, g)
    return da, db


def _fused_vjp(args, out, cts, activation, config, transpose):
    a, b, bias = args
    dz, dbias = activation_backward(activation, out, cts, bias)

    def backward_product(x, y):
        return product(x, y, no_bias(y.array.dtype), facts.NO_ACTIVATION, config)

    da, db = gradients(*operands(a, b, transpose), dz, backward_product)
    return da, db, dbias


fused.def_vjp(_fused_vjp)
fused_aux.def_vjp(_fused_vjp)
