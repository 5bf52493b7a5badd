"""cutlax.Op's wrapper stack (derivatives, batching, sharding, the kernel
call): built once per (attributes, result types, aliases) and reused, with
attributes told apart by their bits; the hooks that change it forget it.

Each test makes its own Op on a built-in target (``fresh``), so the memo it
looks at holds only its own calls."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from cutlax import batching, op as op_module
from cutlax.library import builtin_library
from cutlax.op import Op, same_as


def fresh(name, shape_rule=True):
    """A new Op on the built-in op ``name``'s target: no rules but the shape
    rule, an empty memo, and a count of the stacks it builds."""
    table_op = getattr(builtin_library(), name)
    op = Op(table_op.target, table_op.signature, library="test", platforms=table_op.platforms)
    if shape_rule:
        op.def_shape(same_as(0))
    op.builds = 0
    build = op._build

    def counted(*args):
        op.builds += 1
        return build(*args)

    op._build = counted
    return op


def test_the_same_attributes_and_result_types_reuse_one_stack():
    saxpy = fresh("saxpy")
    x, y = jnp.arange(6, dtype=jnp.float32), jnp.ones(6, jnp.float32)
    np.testing.assert_array_equal(saxpy(x, y, alpha=2.0), 2 * x + y)
    (stack,) = saxpy._memo.values()
    np.testing.assert_array_equal(saxpy(x, y, alpha=2.0), 2 * x + y)
    np.testing.assert_array_equal(jax.jit(lambda x, y: saxpy(x, y, alpha=2))(x, y), 2 * x + y)
    assert saxpy.builds == 1 and list(saxpy._memo.values()) == [stack]
    assert saxpy._wrapped({"alpha": np.float32(2)}, [jax.ShapeDtypeStruct((6,), jnp.float32)], None) is stack


def test_another_attribute_or_result_type_builds_another_stack():
    saxpy = fresh("saxpy")
    x, y = jnp.arange(6, dtype=jnp.float32), jnp.ones(6, jnp.float32)
    np.testing.assert_array_equal(saxpy(x, y, alpha=2.0), 2 * x + y)
    np.testing.assert_array_equal(saxpy(x, y, alpha=3.0), 3 * x + y)
    assert saxpy.builds == 2
    np.testing.assert_array_equal(saxpy(x[:4], y[:4], alpha=3.0), 3 * x[:4] + y[:4])
    np.testing.assert_array_equal(saxpy(x.astype(jnp.bfloat16), y.astype(jnp.bfloat16), alpha=3.0),
                                  (3 * x + y).astype(jnp.bfloat16))
    assert saxpy.builds == 4 and len(saxpy._memo) == 4
    stacks = list(saxpy._memo.values())
    assert len({id(s) for s in stacks}) == 4


def test_attributes_are_told_apart_by_their_bits():
    """0.0 == -0.0, but saxpy(-0.0, 1, -0.0) is -0.0 and saxpy(0.0, 1, -0.0)
    is +0.0: keyed by value, the second call would reuse the first's stack
    and its attribute. A NaN attribute, unequal to itself, is one stack.
    (Under jit: eager calls go through JAX's own cache of compiled calls,
    which takes -0.0 for 0.0 by itself.)"""
    saxpy = fresh("saxpy")
    x, y = jnp.ones(3, jnp.float32), jnp.full(3, -0.0, jnp.float32)

    def run(alpha):
        return jax.jit(lambda x, y: saxpy(x, y, alpha=alpha))(x, y)

    assert not np.signbit(run(0.0)).any()
    assert np.signbit(run(-0.0)).all()
    assert saxpy.builds == 2
    for _ in range(2):
        assert np.isnan(run(np.nan)).all()
    assert saxpy.builds == 3


def test_aliases_are_part_of_the_key():
    relu = fresh("relu")
    x = jnp.asarray([-1.0, 2.0], jnp.float32)
    np.testing.assert_array_equal(relu(x), [0.0, 2.0])
    np.testing.assert_array_equal(jax.jit(lambda x: relu(x, input_output_aliases={0: 0}))(x), [0.0, 2.0])
    assert relu.builds == 2


def test_a_hook_declared_after_a_call_is_used_by_the_next():
    relu = fresh("relu")
    x = jnp.asarray([-1.0, 2.0, 3.0], jnp.float32)
    np.testing.assert_array_equal(relu(x), [0.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="has no batching rule"):
        jax.vmap(relu)(x[None])
    relu.def_vmap(batching.BROADCAST)
    relu.def_jvp(lambda out, args, t: jnp.where(out > 0, t[0], 0))
    assert len(relu._memo) == 0
    np.testing.assert_array_equal(jax.vmap(relu)(jnp.stack([x, -x])), [[0, 2, 3], [1, 0, 0]])
    np.testing.assert_array_equal(jax.grad(lambda x: relu(x).sum())(x), [0.0, 1.0, 1.0])


def test_symbolic_result_shapes_are_built_each_time():
    relu = fresh("relu")
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("n"), jnp.float32)
    exported = cutlax.export.export(relu, spec)
    assert relu.builds == 1 and len(relu._memo) == 0
    np.testing.assert_array_equal(exported.call(jnp.asarray([-1.0, 2.0], jnp.float32)), [0.0, 2.0])


def test_the_memo_keeps_the_most_recent_stacks():
    relu = fresh("relu")
    size = op_module._MEMO_SIZE
    for n in range(size + 3):
        relu._wrapped({}, [jax.ShapeDtypeStruct((n,), jnp.float32)], None)
    assert len(relu._memo) == size and relu.builds == size + 3
    newest = relu._wrapped({}, [jax.ShapeDtypeStruct((size + 2,), jnp.float32)], None)
    assert relu.builds == size + 3
    relu._wrapped({}, [jax.ShapeDtypeStruct((0,), jnp.float32)], None)  # dropped: built again
    assert relu.builds == size + 4 and newest in relu._memo.values()


def test_without_a_shape_rule_a_batch_element_gets_the_calls_result_types():
    """A batching rule that runs the op per batch element (SEQUENTIAL) needs
    no shape rule: the element's results are the vmapped call's own out=. A
    rule that runs it on the whole batch does: then out= says nothing."""
    relu = fresh("relu", shape_rule=False)
    relu.def_vmap(batching.SEQUENTIAL)
    xs = jnp.asarray([[-1.0, 2.0], [3.0, -4.0]], jnp.float32)

    def call(x):
        return relu(x, out=jax.ShapeDtypeStruct(x.shape, x.dtype))

    np.testing.assert_array_equal(jax.vmap(call)(xs), [[0.0, 2.0], [3.0, 0.0]])
    relu.def_vmap(batching.BROADCAST)
    with pytest.raises(TypeError, match="needs out="):
        jax.vmap(call)(xs)
