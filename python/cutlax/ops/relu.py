"""relu: ``max(x, 0)``."""

from cutlax import batching, sharding
from cutlax.library import builtin
from cutlax.op import same_as
from cutlax.ops.relu_backward import RELU_TANGENT

relu = builtin("relu", doc="""``max(x, 0)`` elementwise (NaN stays NaN, as with ``jax.nn.relu``).

The CUDA kernel is the shared elementwise one: each element's flat index
comes from the layout, and only the last block, the one that crosses the
array's end, bounds-checks it.""")
relu.def_shape(same_as(0))
relu.def_jvp(lambda out, args, t: RELU_TANGENT(out, t[0]))
relu.def_vmap(batching.BROADCAST)
relu.def_sharding(sharding.ELEMENTWISE)

__all__ = ["relu"]
