"""Elementwise ops: vector_add, saxpy, relu, bias_relu, and the backward
passes of relu and bias_relu.

Each is a thin spec over one FFI target: trace-time checks, the output's shape
and dtype, and the call. The kernels are src/ops/*.cu, the CPU twins
src/ops/*_cpu.cpp.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _autodiff, _checks, _sharding, _targets


def _kernel(target: str, like: int = 0, **attrs):
    """The FFI call of one elementwise target; its result has the shape and
    dtype of operand ``like`` and the type information of all of them.
    vmap never reaches it: each op has a batching rule."""

    def call(*args):
        result = _checks.result(args[like].shape, args[like].dtype, *args)
        return jax.ffi.ffi_call(target, result)(*args, **attrs)

    return call


def _sharded(call, rule=_sharding.ELEMENTWISE):
    """``call`` on local shards when its operands are sharded (see _sharding)."""
    return lambda *args: _sharding.run(call, args, rule)


def _batched_by_broadcast(fn, shared: tuple[int, ...] = ()):
    """``fn`` over same-shape operands, under vmap called once on the whole
    batch: unbatched operands are broadcast along it. An operand in ``shared``
    (saxpy's 0-d alpha) has no room for a batch; when it is batched, lax.map
    calls ``fn`` once per batch element."""
    batchable = jax.custom_batching.custom_vmap(fn)

    @batchable.def_vmap
    def _batched(axis_size, in_batched, *args):
        if any(in_batched[i] for i in shared):
            return jax.lax.map(lambda xs: batchable(*xs), tuple(
                a if b else jnp.broadcast_to(a, (axis_size, *a.shape)) for a, b in zip(args, in_batched))), True
        return batchable(*(a if b or i in shared else jnp.broadcast_to(a, (axis_size, *a.shape))
                           for i, (a, b) in enumerate(zip(args, in_batched)))), True

    return batchable


def _binary(op: str, names: tuple[str, str], a, b):
    a = _checks.array(op, names[0], a)
    b = _checks.array(op, names[1], b)
    _checks.same_dtype(op, names[1], b, names[0], a)
    _checks.same_shape(op, names[1], b, names[0], a)
    return a, b


def vector_add(a, b) -> jax.Array:
    """``a + b`` for two arrays of one shape and dtype (float32/16, bfloat16).

    The CUDA kernel is the classic CuTe one: the flat array seen as a 3-D
    tensor (elements_per_thread, threads_per_block, num_blocks).
    """
    a, b = _binary("vector_add", ("a", "b"), a, b)
    add = _autodiff.differentiable(_batched_by_broadcast(_sharded(_kernel(_targets.VECTOR_ADD))),
                                   lambda out, args, t: t[0] + t[1])
    return add(a, b)


def saxpy(alpha, x, y) -> jax.Array:
    """``alpha * x + y`` (arithmetic in float32, rounded once to x's dtype).

    ``alpha`` as a Python or NumPy number is *static*: it becomes an FFI
    attribute, a constant of the compiled program, so each new value compiles
    a new program (as with ``static_argnums``). A JAX array ``alpha`` (0-d,
    traced or not) is *dynamic*: it is passed to the kernel as an operand, so
    one compiled program serves every value.
    """
    x, y = _binary("saxpy", ("x", "y"), x, y)
    if isinstance(alpha, (bool, np.bool_, str, bytes)):
        raise TypeError(f"cutlax.saxpy: alpha must be a number or a 0-d array, got {alpha!r}")
    if isinstance(alpha, (numbers.Real, np.floating, np.integer)):
        scaled = _autodiff.differentiable(
            _batched_by_broadcast(_sharded(_kernel(_targets.SAXPY, alpha=np.float32(alpha)))),
            lambda out, args, t: (alpha * t[0].astype(jnp.float32) + t[1]).astype(out.dtype))
        return scaled(x, y)
    alpha = _checks.array("saxpy", "alpha", alpha, dtypes=_checks.REAL_DTYPES)
    if alpha.shape != ():
        raise ValueError(
            f"cutlax.saxpy: alpha must be a scalar (shape ()), got shape {tuple(alpha.shape)}"
        )

    def tangent(out, args, t):
        alpha, x, _ = args
        talpha, tx, ty = t
        return (alpha * tx.astype(jnp.float32) + talpha * x.astype(jnp.float32) + ty).astype(out.dtype)

    dynamic = _batched_by_broadcast(_sharded(_kernel(_targets.SAXPY_DYNAMIC, like=1)), shared=(0,))
    scaled = _autodiff.differentiable(dynamic, tangent)
    return scaled(alpha.astype(jnp.float32), x, y)


def relu(x) -> jax.Array:
    """``max(x, 0)`` elementwise (NaN stays NaN, as with ``jax.nn.relu``).

    The CUDA kernel uses flat indexing: global index = block * block_dim +
    thread, with a bounds check.
    """
    x = _checks.array("relu", "x", x)
    rectify = _autodiff.differentiable(_batched_by_broadcast(_sharded(_kernel(_targets.RELU))),
                                       lambda out, args, t: _RELU_TANGENT(out, t[0]))
    return rectify(x)


def bias_relu(x, bias) -> jax.Array:
    """``max(x + bias, 0)`` with ``bias`` over the last axis of ``x``, in one pass.

    ``x`` has rank >= 1 and ``bias.shape == (x.shape[-1],)``; the width is
    static (part of the compiled program's shapes).
    """
    x = _checks.array("bias_relu", "x", x)
    bias = _checks.array("bias_relu", "bias", bias)
    _checks.min_rank("bias_relu", "x", x, 1)
    _checks.same_dtype("bias_relu", "bias", bias, "x", x)
    if bias.shape != (x.shape[-1],):
        raise ValueError(
            f"cutlax.bias_relu: bias has shape {tuple(bias.shape)}; expected "
            f"({x.shape[-1]},), the width of x's last axis (x has shape {tuple(x.shape)})"
        )

    # vmap goes through the batching rule below, never to ffi_call itself.
    batchable = jax.custom_batching.custom_vmap(
        _sharded(_kernel(_targets.BIAS_RELU), _sharding.BIAS_LAST_AXIS))

    @batchable.def_vmap
    def _batched(axis_size, in_batched, x, bias):
        x_batched, bias_batched = in_batched
        if not x_batched:
            x = jnp.broadcast_to(x, (axis_size, *x.shape))
        if not bias_batched:
            # The kernel takes any leading axes: the batch is one more. One launch.
            return bias_relu(x, bias), True
        # A bias per batch element: broadcast it and run add + relu, two cutlax
        # launches over the whole batch (the fused kernel takes one bias row).
        rows = bias.reshape(axis_size, *([1] * (x.ndim - 2)), bias.shape[-1])
        return relu(vector_add(x, jnp.broadcast_to(rows, x.shape))), True

    fused = _autodiff.differentiable(batchable, lambda out, args, t: _BIAS_RELU_TANGENT(out, t[0], t[1]))
    return fused(x, bias)


def relu_backward(y, g) -> jax.Array:
    """relu's reverse-mode step: ``g`` where ``y > 0``, else 0, for
    ``y = relu(x)`` (or ``y = bias_relu(x, bias)``) and a cotangent ``g``."""
    y, g = _binary("relu_backward", ("y", "g"), y, g)
    masked = _autodiff.differentiable(_batched_by_broadcast(_sharded(_kernel(_targets.RELU_BACKWARD))),
                                      lambda out, args, t: _RELU_TANGENT(args[0], t[1]))
    return masked(y, g)


# dbias is summed in per-row-chunk partials (src/ops/backward.hpp). About 2048
# thread blocks fill an H200 several times over; one block covers 32 runs of
# 16 bytes of a row.
_TARGET_BLOCKS = 2048
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


def _bias_relu_backward_kernel(y, g):
    width = y.shape[-1]
    results = (_checks.result(y.shape, y.dtype, y, g), _checks.result((width,), y.dtype, y, g),
               _checks.result((_row_chunks(y.shape, y.dtype), width), jnp.float32, y, g))
    dx, dbias, _ = jax.ffi.ffi_call(_targets.BIAS_RELU_BACKWARD, results)(y, g)
    return dx, dbias


def bias_relu_backward(y, g) -> tuple[jax.Array, jax.Array]:
    """bias_relu's reverse-mode step in one sweep: ``(dx, dbias)`` with
    ``dx = g where y > 0 else 0`` and ``dbias = dx`` summed over every axis
    but the last (in float32, rounded once), for ``y = bias_relu(x, bias)``."""
    y, g = _binary("bias_relu_backward", ("y", "g"), y, g)
    _checks.min_rank("bias_relu_backward", "y", y, 1)
    batchable = jax.custom_batching.custom_vmap(
        _sharded(_bias_relu_backward_kernel, _sharding.COLUMN_SUM))

    @batchable.def_vmap
    def _batched(axis_size, in_batched, y, g):
        # One dbias per batch element: the masked dx in one launch, its
        # per-element column sums as an XLA reduction.
        y, g = _autodiff.broadcast_batch(axis_size, in_batched, (y, g))
        dx = relu_backward(y, g)
        dbias = dx.astype(jnp.float32).sum(axis=tuple(range(1, dx.ndim - 1))).astype(dx.dtype)
        return (dx, dbias), (True, True)

    def tangent(out, args, t):
        dx = _RELU_TANGENT(args[0], t[1])
        return dx, dx.astype(jnp.float32).sum(axis=tuple(range(dx.ndim - 1))).astype(dx.dtype)

    return _autodiff.differentiable(batchable, tangent)(y, g)


def _bias_relu_tangent_batched(size, batched, y, tx, tb):
    y, tx = _autodiff.broadcast_batch(size, batched[:2], (y, tx))
    if not batched[2]:  # one bias tangent for the whole batch: the map takes leading axes
        return _BIAS_RELU_TANGENT(y, tx, tb)
    rows = tb.reshape(size, *([1] * (y.ndim - 2)), tb.shape[-1])
    return _RELU_TANGENT(y, tx + rows)


# The tangent maps of relu and bias_relu (see _autodiff.TangentMap): XLA
# computes them in forward mode, and their transposes are the backward kernels.
_RELU_TANGENT = _autodiff.TangentMap(
    "cutlax_relu_tangent",
    value=lambda y, t: jnp.where(y > 0, t, jnp.zeros_like(t)),
    transpose=lambda y, ct: (relu_backward(y, ct),),
    batched=lambda size, batched, y, t: _RELU_TANGENT(*_autodiff.broadcast_batch(size, batched, (y, t))))
_BIAS_RELU_TANGENT = _autodiff.TangentMap(
    "cutlax_bias_relu_tangent",
    value=lambda y, tx, tb: jnp.where(y > 0, tx + tb, jnp.zeros_like(tx)),
    transpose=bias_relu_backward,
    batched=_bias_relu_tangent_batched)
