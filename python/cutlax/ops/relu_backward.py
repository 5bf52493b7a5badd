"""relu_backward: relu's reverse-mode step, and the tangent map whose
transpose it is."""

import jax.numpy as jnp

from cutlax import _autodiff, _checks, batching, sharding
from cutlax.library import builtin
from cutlax.op import same_as

relu_backward = builtin("relu_backward", doc="""relu's reverse-mode step: ``g`` where ``y > 0``, else 0, for
``y = relu(x)`` (or ``y = bias_relu(x, bias)``) and a cotangent ``g``.""")
relu_backward.def_checks(lambda y, g: _checks.like("g", g, "y", y))
relu_backward.def_shape(same_as(0))
relu_backward.def_jvp(lambda out, args, t: RELU_TANGENT(args[0], t[1]))
relu_backward.def_vmap(batching.BROADCAST)
relu_backward.def_sharding(sharding.ELEMENTWISE)

# relu's tangent: XLA computes it in forward mode (it fuses into what
# follows), and its transpose, the reverse-mode step, is the kernel above.
RELU_TANGENT = _autodiff.TangentMap(
    "cutlax_relu_tangent",
    value=lambda y, t: jnp.where(y > 0, t, jnp.zeros_like(t)),
    transpose=lambda y, ct: (relu_backward(y, ct),),
    batched=lambda size, batched, y, t: RELU_TANGENT(*batching.broadcast_batch(size, batched, (y, t))))

__all__ = ["relu_backward"]
