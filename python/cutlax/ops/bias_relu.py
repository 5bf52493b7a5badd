"""bias_relu: ``max(x + bias, 0)`` with bias over the last axis, in one pass."""

import jax.numpy as jnp

from cutlax import _checks, sharding
from cutlax.library import builtin
from cutlax.op import same_as
from cutlax.ops.bias_relu_backward import BIAS_RELU_TANGENT
from cutlax.ops.relu import relu
from cutlax.ops.vector_add import vector_add

bias_relu = builtin("bias_relu", doc="""``max(x + bias, 0)`` with ``bias`` over the last axis of ``x``, in one pass.

``x`` has rank >= 1 and ``bias.shape == (x.shape[-1],)``; the width is
static (part of the compiled program's shapes).""")


@bias_relu.def_checks
def _operands(x, bias):
    _checks.min_rank("x", x, 1)
    _checks.same_dtype("bias", bias, "x", x)
    if bias.shape != (x.shape[-1],):
        raise ValueError(f"bias has shape {tuple(bias.shape)}; expected ({x.shape[-1]},), the width of "
                         f"x's last axis (x has shape {tuple(x.shape)})")


@bias_relu.def_vmap
def _batched(call, axis_size, in_batched, x, bias):
    x_batched, bias_batched = in_batched
    if not x_batched:
        x = jnp.broadcast_to(x, (axis_size, *x.shape))
    if not bias_batched:
        # The kernel takes any leading axes: the batch is one more. One launch.
        return call(x, bias), True
    # A bias per batch element: broadcast it and run add + relu, two cutlax
    # launches over the whole batch (the fused kernel takes one bias row).
    rows = bias.reshape(axis_size, *([1] * (x.ndim - 2)), bias.shape[-1])
    return relu(vector_add(x, jnp.broadcast_to(rows, x.shape))), True


bias_relu.def_shape(same_as(0))
bias_relu.def_jvp(lambda out, args, t: BIAS_RELU_TANGENT(out, t[0], t[1]))
bias_relu.def_sharding(sharding.BIAS_LAST_AXIS)

__all__ = ["bias_relu"]
