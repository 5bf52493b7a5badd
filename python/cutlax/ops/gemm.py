"""gemm: ``act(a[M, K] @ b[K, N] + bias)``.

Two kernels stand behind ``cutlax.gemm``:

* bf16 and f16: the Hopper GEMM (targets gemm and gemm_aux,
  src/ops/gemm_sm90.cuh): float32 accumulation, the bias and the activation
  fused into the epilogue, the result rounded once. gemm_aux also writes the
  pre-activation z, which gelu's backward needs; relu's backward needs only
  the result (c > 0 exactly where z > 0), in one sweep that also sums dbias
  (bias_relu_backward).
* float32: the teaching CuTe SGEMM (impl="tiled", true FP32 arithmetic), the
  bias and activation as cutlax elementwise ops after it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cutlax import _cutlax, _checks, batching, sharding
from cutlax.library import builtin
from cutlax.ops.bias_relu import bias_relu
from cutlax.ops.bias_relu_backward import bias_relu_backward
from cutlax.ops.relu import relu

# The kernel configurations, in the order of GemmConfig (src/ops/gemm.hpp):
# "auto" lets the C++ heuristic choose per shape (choose_gemm_config).
CONFIGS: tuple[str, ...] = tuple(_cutlax.build_info()["gemm_configs"])
IMPLS = ("auto", "tiled") + CONFIGS[1:]
# In the order of GemmActivation (src/ops/gemm.hpp).
ACTIVATIONS = (None, "relu", "gelu")
PRECISIONS = (None, "default", "highest")
_NONE, _RELU, _GELU = range(3)
# TMA moves 16-byte rows: the Hopper kernels take N and K in multiples of 8.
_ALIGNMENT = 8

_tiled = builtin("gemm_tiled", public_name="cutlax.gemm")
_fused = builtin("gemm", public_name="cutlax.gemm")
_fused_aux = builtin("gemm_aux", public_name="cutlax.gemm")


def _check_operands(a, b, *bias, **attrs):
    _checks.rank("a", a, 2)
    _checks.rank("b", b, 2)
    if b.shape[0] != a.shape[1]:
        raise ValueError(f"b has shape {tuple(b.shape)}; expected b.shape[0] == a.shape[1] == {a.shape[1]} (K), "
                         f"as a has shape {tuple(a.shape)}")
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {b.dtype.name}; expected {a.dtype.name}, a's")
    for x in bias:
        _checks.rank("bias", x, 1)
        if x.shape[0] != b.shape[1]:
            raise ValueError(f"bias has shape {tuple(x.shape)}; expected ({b.shape[1]},), N")
        if x.dtype != a.dtype:
            raise TypeError(f"bias has dtype {x.dtype.name}; expected {a.dtype.name}, a's")


def _product_shape(a, b, *bias, **attrs):
    return jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)


def _batched(call, axis_size, in_batched, a, b, *bias):
    """A batch of a alone folds into M, a batch of b alone into N (the bias
    repeated per batch element): one launch. Otherwise lax.map runs one
    launch per batch element (a batched kernel would take them in one)."""
    a_batched, b_batched, bias_batched = in_batched[0], in_batched[1], any(in_batched[2:])
    if a_batched and not b_batched and not bias_batched:  # (B, M, K) @ (K, N) = ((B M), K) @ (K, N)
        batch, m, k = a.shape
        out = call(a.reshape(batch * m, k), b, *bias)
        out = jax.tree.map(lambda r: r.reshape(batch, r.shape[0] // batch, r.shape[1]), out)
        return out, jax.tree.map(lambda _: True, out)
    if b_batched and not a_batched and not bias_batched:  # (M, K) @ (B, K, N) = (M, K) @ (K, (B N))
        batch, k, n = b.shape
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


# The Hopper GEMM: bf16, f16.
for _op in (_fused, _fused_aux):
    _op.def_checks(_check_operands)
    _op.def_vmap(_batched)
_fused.def_shape(_product_shape)
_fused_aux.def_shape(lambda a, b, bias, **attrs: (_product_shape(a, b),) * 2)
_fused.def_sharding(sharding.FUSED_MATMUL)
_fused_aux.def_sharding(sharding.FUSED_MATMUL_AUX)


def _round_up(n, multiple):
    return -(-n // multiple) * multiple


def _fused_product(a, b, bias, activation: int, config: int):
    """The Hopper kernel on any M, N, K: N and K are padded with zeros to
    multiples of 8 (zero columns of a and rows of b add nothing; padded
    columns of the result are dropped). Returns c, and z for gelu."""
    m, k = a.shape
    n = b.shape[1]
    k_pad, n_pad = max(_round_up(k, _ALIGNMENT), _ALIGNMENT) - k, _round_up(n, _ALIGNMENT) - n
    if k_pad or n_pad:
        a = jnp.pad(a, ((0, 0), (0, k_pad)))
        b = jnp.pad(b, ((0, k_pad), (0, n_pad)))
        bias = jnp.pad(bias, (0, n_pad))
    op = _fused_aux if activation == _GELU else _fused
    out = op(a, b, bias, activation=activation, config=config)
    if n_pad:
        out = jax.tree.map(lambda r: r[:, :n], out)
    return out


def _column_sums(dz):
    return dz.astype(jnp.float32).sum(axis=0).astype(dz.dtype)


def _fused_vjp(args, out, cts, activation, config):
    """dz = g act'(z), then da = dz b^T and db = a^T dz on the same kernel,
    dbias = the column sums of dz (for relu from the one sweep that also
    masks g)."""
    a, b, bias = args
    if activation == _GELU:
        (_, z), (g, _) = out, cts
        _, gelu_vjp = jax.vjp(jax.nn.gelu, z.astype(jnp.float32))
        dz = gelu_vjp(g.astype(jnp.float32))[0].astype(a.dtype)
        dbias = _column_sums(dz)
    elif activation == _RELU:
        dz, dbias = bias_relu_backward(out, cts)
    else:
        dz, dbias = cts, _column_sums(cts)
    no_bias = jnp.zeros((a.shape[1],), a.dtype), jnp.zeros((b.shape[1],), a.dtype)
    da = _fused_product(dz, b.T, no_bias[0], _NONE, config)
    db = _fused_product(a.T, dz, no_bias[1], _NONE, config)
    return da, db, dbias


_fused.def_vjp(_fused_vjp)
_fused_aux.def_vjp(_fused_vjp)


def gemm(a, b, *, bias=None, activation=None, impl: str = "auto", precision=None) -> jax.Array:
    """``act(a @ b + bias)`` for a[M, K], b[K, N], bias[N] (optional).

    activation: None, "relu" or "gelu" (the tanh form, ``jax.nn.gelu``'s
    default: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))).

    bfloat16 / float16: the Hopper (SM90) GEMM, float32 accumulation, the
    bias and activation fused into its epilogue, the result rounded once to
    the inputs' dtype; bias has the inputs' dtype. impl:
      "auto"   the configuration the heuristic picks per shape (the 128x256
               cooperative kernel when its tiles fill every SM, else the
               128x128 ping-pong kernel; docs/gemm.md)
      a name in ``cutlax.ops.gemm.CONFIGS[1:]`` forces that configuration.
    N and K that are not multiples of 8 are padded with zeros (a copy).

    float32: impl "auto" or "tiled", the teaching CuTe SGEMM in true FP32
    arithmetic (so precision None, "default" and "highest" all get full FP32
    accuracy); bias and activation run as cutlax elementwise ops after it.
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
        _check_operands(a, b, *(() if bias is None else (bias,)))
        if a.dtype == jnp.float32 and impl not in ("auto", "tiled"):
            raise TypeError(f"impl={impl!r} takes bfloat16 or float16; float32 runs on impl='tiled'")
        if a.dtype != jnp.float32 and impl == "tiled":
            raise TypeError(f"impl='tiled' takes float32, got {a.dtype.name}")
    if a.dtype != jnp.float32:
        if bias is None:
            bias = jnp.zeros((b.shape[1],), a.dtype)
        out = _fused_product(a, b, bias, ACTIVATIONS.index(activation), CONFIGS.index(impl))
        return out[0] if activation == "gelu" else out
    c = _tiled(a, b)
    if activation == "gelu":
        return jax.nn.gelu(c if bias is None else c + bias)
    if bias is None:
        return relu(c) if activation == "relu" else c
    return bias_relu(c, bias) if activation == "relu" else c + bias


__all__ = ["gemm"]
