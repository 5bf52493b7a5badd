"""Plain jax.jit with sharded inputs: each op runs on its local shards, with
no all-gather. Over Explicit mesh axes the op wraps itself in shard_map; over
Auto axes XLA's partitioner splits it by the op's sharding rule. Programs over
Explicit axes export sharded."""

import functools
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same, forward_and_cotangent, random, ref_backward
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import cutlax
from cutlax import _sharding

# float32 gemm in true FP32 with the K-splitting MATMUL rule (the default runs in TF32).
TILED_GEMM = functools.partial(cutlax.gemm, impl="tiled")


@pytest.fixture(scope="module", params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    return jax.sharding.Mesh(np.array(jax.devices("cpu")).reshape(4, 2), ("x", "y"),
                             axis_types=(request.param, request.param))


def put(mesh, a, *spec):
    return jax.device_put(a, NamedSharding(mesh, P(*spec)))


def compiled_text(fn, *args):
    return jax.jit(fn).lower(*args).compile().as_text()


ELEMENTWISE = {
    "vector_add": (cutlax.vector_add, lambda a, b: a + b),
    "saxpy": (lambda a, b: cutlax.saxpy(1.5, a, b), lambda a, b: 1.5 * a + b),
    "saxpy_dynamic": (lambda a, b: cutlax.saxpy(jnp.float32(1.5), a, b), lambda a, b: 1.5 * a + b),
    "relu": (lambda a, b: cutlax.relu(a), lambda a, b: jax.nn.relu(a)),
}


@pytest.mark.parametrize("spec", [("x",), (None, "y"), ("x", "y"), (("x", "y"),), (None, None, "x")], ids=str)
@pytest.mark.parametrize("op", list(ELEMENTWISE))
def test_elementwise_runs_on_local_shards(mesh, rng, op, spec):
    ours, ref = ELEMENTWISE[op]
    a, b = (put(mesh, random(rng, (16, 8, 4)), *spec) for _ in range(2))
    text = compiled_text(ours, a, b)
    assert "all-gather" not in text
    out = jax.jit(ours)(a, b)
    padded = lambda s: tuple(s) + (None,) * (3 - len(s))  # noqa: E731
    assert padded(out.sharding.spec) == padded(spec)
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6, atol=1e-6)


def test_other_operand_is_resharded_to_the_first(mesh, rng):
    a, b = put(mesh, random(rng, (16, 8)), "x"), put(mesh, random(rng, (16, 8)), None, "y")
    np.testing.assert_allclose(jax.jit(cutlax.vector_add)(a, b), a + b, rtol=1e-6)


@pytest.mark.parametrize("x_spec,bias_spec", [(("x",), ()), (("x", "y"), ("y",)), ((None, None), ("y",))], ids=str)
def test_bias_relu(mesh, rng, x_spec, bias_spec):
    x, bias = put(mesh, random(rng, (16, 8)), *x_spec), put(mesh, random(rng, (8,)), *bias_spec)
    assert "all-gather" not in compiled_text(cutlax.bias_relu, x, bias)
    np.testing.assert_array_equal(jax.jit(cutlax.bias_relu)(x, bias), jax.nn.relu(x + bias))


@pytest.mark.parametrize("a_spec,b_spec,collective", [
    (("x", None), (None, None), None),        # rows of a
    ((None, None), (None, "y"), None),        # columns of b
    (("x", None), (None, "y"), None),         # both
    ((None, "x"), ("x", None), "all-reduce"),  # K: partial products summed
    (("y", "x"), ("x", None), "all-reduce"),
], ids=str)
def test_gemm(mesh, rng, a_spec, b_spec, collective):
    a, b = put(mesh, random(rng, (16, 32)), *a_spec), put(mesh, random(rng, (32, 8)), *b_spec)
    text = compiled_text(TILED_GEMM, a, b)
    assert "all-gather" not in text
    if collective:
        assert collective in text
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    np.testing.assert_allclose(jax.jit(TILED_GEMM)(a, b), ref, rtol=1e-5, atol=1e-5)


def test_uneven_split_is_rejected(mesh, rng):
    # Shardings must divide evenly: JAX refuses the array itself,
    # before any cutlax op sees it (shard_map does the same, test_shard_map.py).
    with pytest.raises(ValueError, match="evenly divide"):
        put(mesh, random(rng, (8, 6)), None, ("x", "y"))


def test_sharded_program_exports_and_runs(mesh, rng):
    x, bias = put(mesh, random(rng, (16, 8)), "x"), put(mesh, random(rng, (8,)))
    # For the mesh's platform (CPU), not the default backend, which is CUDA on a GPU machine.
    exp = cutlax.export.export(lambda x, b: cutlax.bias_relu(cutlax.relu(x), b), x, bias,
                               platforms=(mesh.devices.flat[0].platform,))
    assert exp.nr_devices == 8
    if mesh.axis_types[0] == AxisType.Explicit:
        # Exported sharded: the ops still run on local shards after reloading.
        assert "all-gather" not in exp.mlir_module()
    out = jax.export.deserialize(exp.serialize()).call(x, bias)
    np.testing.assert_array_equal(out, jax.nn.relu(jax.nn.relu(x) + bias))


def test_plain_jax_export_of_auto_axes_is_refused_by_jax(rng):
    # Outside cutlax.export, the Auto-axis rule is a custom_partitioning call,
    # whose Python callback jax.export refuses (docs/sharding.md says to use
    # cutlax.export, as the test above does).
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("d",), axis_types=(AxisType.Auto,))
    x = put(mesh, random(rng, (16, 4)), "d")
    with pytest.raises(NotImplementedError, match="serialization of host_callbacks"):
        jax.export.export(jax.jit(cutlax.relu), disabled_checks=cutlax.export.disabled_checks())(x)


def test_single_device_programs_hold_no_partitioning_call(rng):
    text = jax.jit(cutlax.relu).lower(random(rng, (16,))).as_text()
    assert "CustomSPMDPartitioning" not in text
    assert "cutlax_relu_v1" in text


def test_an_empty_operand_stays_out_of_the_partitioned_call():
    # gemm's bias of length 0 ("no bias"): the rule sees the other operands
    # alone, and the shards make the empty one themselves.
    empty = {2: jax.ShapeDtypeStruct((0,), jnp.bfloat16)}
    rule = _sharding._without_empty(cutlax.sharding.FUSED_MATMUL, [2, 2, 1], empty)
    assert rule.einsum([2, 2]) == "m k, k n -> m n"
    assert rule.need_replication_factors == ("k",)
    assert rule.plan([("x", None), (None, "y")]) == ([("x", None), (None, "y")], ("x", "y"), ())
    local = _sharding._with_empty(lambda a, b, bias: (a.shape, b.shape, bias.shape, bias.dtype), empty, 3)
    assert local(jnp.ones((4, 5)), jnp.ones((5, 6))) == ((4, 5), (5, 6), (0,), jnp.bfloat16)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y")], ids=str)
def test_sharded_backward_sums_dbias_across_row_shards(rng, axis_type, spec):
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")).reshape(4, 2), ("x", "y"),
                             axis_types=(axis_type, axis_type))
    y, g = (jax.device_put(a, NamedSharding(mesh, P(*spec))) for a in forward_and_cotangent(rng, (16, 8), jnp.float32))
    text = jax.jit(cutlax.bias_relu_backward).lower(y, g).compile().as_text()
    assert "all-gather" not in text
    if spec[0] is not None:  # rows sharded: the partial dbias are summed
        assert "all-reduce" in text
    dx, dbias = jax.jit(cutlax.bias_relu_backward)(y, g)
    want_dx, want_dbias = ref_backward(y, g)
    assert_same(dx, want_dx)
    np.testing.assert_allclose(dbias, want_dbias, rtol=1e-5, atol=1e-5)
