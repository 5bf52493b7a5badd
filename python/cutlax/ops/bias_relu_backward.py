"""bias_relu_backward: bias_relu's reverse-mode step, and the tangent map
whose transpose it is."""

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _autodiff, _checks, batching, sharding
from cutlax.library import builtin
from cutlax.ops.relu_backward import RELU_TANGENT, relu_backward

bias_relu_backward = builtin("bias_relu_backward", doc="""bias_relu's reverse-mode step in one sweep: ``(dx, dbias)``
with ``dx = g where y > 0 else 0`` and ``dbias = dx`` summed over every axis
but the last (in float32, rounded once), for ``y = bias_relu(x, bias)``.""")

# dbias is summed in per-row-chunk partials (src/ops/bias_relu_backward.hpp).
# One block covers 32 runs of 16 bytes of a row. About 512 blocks (4 per SM)
# hide the loads' latency while keeping the partials and their sum small: of
# the counts bench/gemm_tune.py's dbias section tries, 512 gave the fastest
# bf16 MLP step (bench/RESULTS.md).
_TARGET_BLOCKS = 512
_MAX_ROW_CHUNKS = 1024


def _row_chunks(shape, dtype) -> int:
    """How many row chunks the CUDA kernel splits y into (partials' rows).
    Symbolic sizes (export) take a fixed count: any count gives the same sums."""
    width = shape[-1]
    if not isinstance(width, int):
        return 256
    column_blocks = max(-(-width // (32 * (16 // np.dtype(dtype).itemsize))), 1)
    chunks = _TARGET_BLOCKS // column_blocks
    if all(isinstance(d, int) for d in shape[:-1]):  # no more chunks than rows
        chunks = min(chunks, int(np.prod(shape[:-1], dtype=np.int64)))
    return int(np.clip(chunks, 1, _MAX_ROW_CHUNKS))


@bias_relu_backward.def_checks
def _operands(y, g):
    _checks.like("g", g, "y", y)
    _checks.min_rank("y", y, 1)


@bias_relu_backward.def_shape
def _results(y, g):
    width = y.shape[-1]
    return (jax.ShapeDtypeStruct(y.shape, y.dtype), jax.ShapeDtypeStruct((width,), y.dtype),
            jax.ShapeDtypeStruct((_row_chunks(y.shape, y.dtype), width), jnp.float32))  # partials


def _column_sums(dx, axes):
    return dx.astype(jnp.float32).sum(axis=axes).astype(dx.dtype)


@bias_relu_backward.def_jvp
def _tangent(out, args, t):
    dx = RELU_TANGENT(args[0], t[1])
    return dx, _column_sums(dx, tuple(range(dx.ndim - 1)))


@bias_relu_backward.def_vmap
def _batched(call, axis_size, in_batched, y, g):
    # One dbias per batch element: the masked dx in one launch, its
    # per-element column sums as an XLA reduction.
    y, g = batching.broadcast_batch(axis_size, in_batched, (y, g))
    dx = relu_backward(y, g)
    return (dx, _column_sums(dx, tuple(range(1, dx.ndim - 1)))), (True, True)


bias_relu_backward.def_sharding(sharding.COLUMN_SUM)


def _tangent_batched(size, batched, y, tx, tb):
    y, tx = batching.broadcast_batch(size, batched[:2], (y, tx))
    if not batched[2]:  # one bias tangent for the whole batch: the map takes leading axes
        return BIAS_RELU_TANGENT(y, tx, tb)
    rows = tb.reshape(size, *([1] * (y.ndim - 2)), tb.shape[-1])
    return RELU_TANGENT(y, tx + rows)


# bias_relu's tangent: XLA computes it in forward mode, and its transpose is
# the one-sweep kernel above.
BIAS_RELU_TANGENT = _autodiff.TangentMap(
    "cutlax_bias_relu_tangent",
    value=lambda y, tx, tb: jnp.where(y > 0, tx + tb, jnp.zeros_like(tx)),
    transpose=bias_relu_backward,
    batched=_tangent_batched)

__all__ = ["bias_relu_backward"]
