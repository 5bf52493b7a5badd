"""gemm: ``a[M, K] @ b[K, N]``, optionally with a bias and an activation."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cutlax import _checks, sharding
from cutlax.library import builtin
from cutlax.ops.bias_relu import bias_relu
from cutlax.ops.relu import relu

IMPLS = ("auto", "tiled")
ACTIVATIONS = (None, "relu")

_tiled = builtin("gemm_tiled", public_name="cutlax.gemm")


@_tiled.def_checks
def _operands(a, b):
    _checks.rank("a", a, 2)
    _checks.rank("b", b, 2)
    if b.shape[0] != a.shape[1]:
        raise ValueError(f"b has shape {tuple(b.shape)}; expected b.shape[0] == a.shape[1] == {a.shape[1]} (K), "
                         f"as a has shape {tuple(a.shape)}")


@_tiled.def_shape
def _product(a, b):
    return jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)


@_tiled.def_vjp
def _transposed_products(args, out, g):
    # The transposed products run on the same kernel: da = g b^T, db = a^T g.
    a, b = args
    return _tiled(g, b.T), _tiled(a.T, g)


@_tiled.def_vmap
def _batched(call, axis_size, in_batched, a, b):
    # The batch folds into one 2-D product where one operand is shared; with
    # both batched, lax.map runs one launch per batch element (a batched
    # kernel would take them in one).
    a_batched, b_batched = in_batched
    if a_batched and not b_batched:  # (B, M, K) @ (K, N) = ((B M), K) @ (K, N)
        batch, m, k = a.shape
        return call(a.reshape(batch * m, k), b).reshape(batch, m, -1), True
    if b_batched and not a_batched:  # (M, K) @ (B, K, N) = (M, K) @ (K, (B N))
        batch, k, n = b.shape
        folded = call(a, jnp.transpose(b, (1, 0, 2)).reshape(k, batch * n))
        return jnp.transpose(folded.reshape(-1, batch, n), (1, 0, 2)), True
    return jax.lax.map(lambda ab: call(*ab), (a, b)), True


_tiled.def_sharding(sharding.MATMUL)


def gemm(a, b, *, bias=None, activation=None, impl: str = "auto") -> jax.Array:
    """``a @ b`` for a[M, K], b[K, N]; optionally ``+ bias`` (shape (N,)) and ``relu``.

    impl:
      "tiled"  the teaching CuTe SGEMM: float32, true FP32 arithmetic (no
               TF32), any M, N, K.
      "auto"   the best implementation available for the inputs (today:
               "tiled").
    With impl="tiled", ``bias``/``activation`` run as the cutlax elementwise
    ops after the product (bias+relu fused into one pass), not inside the
    GEMM's epilogue.
    """
    with _checks.errors("cutlax.gemm"):
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    c = _tiled(a, b)
    if bias is None:
        return relu(c) if activation == "relu" else c
    with _checks.errors("cutlax.gemm"):
        bias = _checks.array("bias", bias, dtypes=(jnp.float32,))
        if bias.shape != (c.shape[1],):
            raise ValueError(f"bias has shape {tuple(bias.shape)}; expected ({c.shape[1]},), N")
    return bias_relu(c, bias) if activation == "relu" else c + bias


__all__ = ["gemm"]
