"""Sharding rules an op can opt in to (``lib.op.def_rules(sharding=...)``).

With a rule, an op runs on local shards under ``jax.jit`` over sharded
inputs (Explicit and Auto mesh axes, see docs/sharding.md) instead of on
gathered arrays. Inside ``jax.shard_map`` no rule is needed.

  ELEMENTWISE  same-shape operands, sharded alike on any axis; 0-d operands whole
  ROWS         row-wise ops: leading axes sharded, the last axis whole; rank-1
               operands (a weight over the last axis) whole
  MATMUL       a[M, K] @ b[K, N]: rows, columns, and K with a psum
"""

from cutlax._sharding import ELEMENTWISE, MATMUL, ROWS, Rule

__all__ = ["ELEMENTWISE", "MATMUL", "ROWS", "Rule"]
