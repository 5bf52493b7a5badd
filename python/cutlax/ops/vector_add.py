"""vector_add: ``a + b``."""

from cutlax import _checks, batching, sharding
from cutlax.library import builtin
from cutlax.op import same_as

vector_add = builtin("vector_add", doc="""``a + b`` for two arrays of one shape and dtype (float32/16, bfloat16).

The CUDA kernel is the classic CuTe one: the flat array seen as a 3-D tensor
((16 bytes, accesses), threads_per_block, num_blocks).""")
vector_add.def_checks(lambda a, b: _checks.like("b", b, "a", a))
vector_add.def_shape(same_as(0))
vector_add.def_jvp(lambda out, args, t: t[0] + t[1])
vector_add.def_vmap(batching.BROADCAST)
vector_add.def_sharding(sharding.ELEMENTWISE)

__all__ = ["vector_add"]
