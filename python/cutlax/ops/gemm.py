"""gemm: ``a[M, K] @ b[K, N]``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cutlax import _checks, _sharding, _targets
from cutlax.ops.elementwise import bias_relu, relu

IMPLS = ("auto", "tiled")
ACTIVATIONS = (None, "relu")


def _gemm_tiled(a, b):
    out = _checks.result((a.shape[0], b.shape[1]), a.dtype, a, b)
    return jax.ffi.ffi_call(_targets.GEMM_TILED, out)(a, b)


@jax.custom_batching.custom_vmap
def _batchable(a, b):
    return _sharding.run(_gemm_tiled, (a, b), _sharding.MATMUL)


@_batchable.def_vmap
def _batched(axis_size, in_batched, a, b):
    # The batch folds into one 2-D product where one operand is shared; with
    # both batched, lax.map runs one launch per batch element (a batched
    # kernel would take them in one).
    a_batched, b_batched = in_batched
    if a_batched and not b_batched:  # (B, M, K) @ (K, N) = ((B M), K) @ (K, N)
        batch, m, k = a.shape
        return _product(a.reshape(batch * m, k), b).reshape(batch, m, -1), True
    if b_batched and not a_batched:  # (M, K) @ (B, K, N) = (M, K) @ (K, (B N))
        batch, k, n = b.shape
        folded = _product(a, jnp.transpose(b, (1, 0, 2)).reshape(k, batch * n))
        return jnp.transpose(folded.reshape(-1, batch, n), (1, 0, 2)), True
    return jax.lax.map(lambda ab: _product(*ab), (a, b)), True


@jax.custom_vjp
def _product(a, b):
    return _batchable(a, b)


def _product_fwd(a, b):
    return _product(a, b), (a, b)


def _product_bwd(residuals, g):
    # The transposed products run on the same kernel: da = g b^T, db = a^T g.
    a, b = residuals
    return _product(g, b.T), _product(a.T, g)


_product.defvjp(_product_fwd, _product_bwd)


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
    if impl not in IMPLS:
        raise ValueError(f"cutlax.gemm: impl must be one of {IMPLS}, got {impl!r}")
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"cutlax.gemm: activation must be one of {ACTIVATIONS}, got {activation!r}"
        )
    a = _checks.array("gemm", "a", a, dtypes=(jnp.float32,))
    b = _checks.array("gemm", "b", b, dtypes=(jnp.float32,))
    _checks.rank("gemm", "a", a, 2)
    _checks.rank("gemm", "b", b, 2)
    if b.shape[0] != a.shape[1]:
        raise ValueError(
            f"cutlax.gemm: b has shape {tuple(b.shape)}; expected b.shape[0] == "
            f"a.shape[1] == {a.shape[1]} (K), as a has shape {tuple(a.shape)}"
        )
    c = _product(a, b)
    if bias is not None:
        bias = _checks.array("gemm", "bias", bias, dtypes=(jnp.float32,))
        if bias.shape != (c.shape[1],):
            raise ValueError(
                f"cutlax.gemm: bias has shape {tuple(bias.shape)}; expected ({c.shape[1]},), N"
            )
        return bias_relu(c, bias) if activation == "relu" else c + bias
    return relu(c) if activation == "relu" else c
