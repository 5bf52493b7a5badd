"""Sharding rules an op declares with ``op.def_sharding(rule)``.

With a rule, an op runs on local shards under ``jax.jit`` over sharded
inputs (Explicit and Auto mesh axes, see docs/sharding.md) instead of on
gathered arrays. Inside ``jax.shard_map`` no rule is needed.

  ELEMENTWISE     same-shape operands, sharded alike on any axis; 0-d operands whole
  ROWS            row-wise ops: leading axes sharded, the last axis whole; rank-1
                  operands (a weight over the last axis) whole
  BIAS_LAST_AXIS  x and a bias over x's last axis (bias_relu): bias follows
                  x's last axis
  COLUMN_SUM      y, g -> (dx, column sums of dx) (bias_relu_backward): the
                  sums are added up across the mesh axes that split the rows
  MATMUL          a[M, K] @ b[K, N]: rows, columns, and K with a psum
  FUSED_MATMUL    act(a @ b + bias[N]): rows and columns (the bias follows the
                  columns); K whole, as an activation does not distribute
                  over partial sums. FUSED_MATMUL_AUX: the same, two results;
                  fused_matmul(a_dims, b_dims, results) for transposed operands

An op whose split depends on its attributes declares a function of them that
returns the rule: ``op.def_sharding(lambda attrs: ...)``.
"""

from cutlax._sharding import (BIAS_LAST_AXIS, COLUMN_SUM, ELEMENTWISE, FUSED_MATMUL, FUSED_MATMUL_AUX, MATMUL,
                              ROWS, Rule, fused_matmul)

__all__ = ["BIAS_LAST_AXIS", "COLUMN_SUM", "ELEMENTWISE", "FUSED_MATMUL", "FUSED_MATMUL_AUX", "MATMUL", "ROWS",
           "Rule", "fused_matmul"]
