"""Elementwise ops: vector_add, saxpy, relu, bias_relu.

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
                                       lambda out, args, t: jnp.where(args[0] > 0, t[0], 0))
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

    fused = _autodiff.differentiable(batchable, lambda out, args, t: jnp.where(out > 0, t[0] + t[1], 0))
    return fused(x, bias)
