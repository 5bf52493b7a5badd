"""Every op inside jax.shard_map over 8 CPU devices: each device runs the
same kernel on its local shard, JAX moves the data."""

import functools
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import cutlax

# float32 gemm in true FP32 with the K-splitting MATMUL rule (the default runs in TF32).
TILED_GEMM = functools.partial(cutlax.gemm, impl="tiled")


@pytest.fixture(scope="module")
def mesh():
    cpus = jax.devices("cpu")
    assert len(cpus) == 8
    return jax.sharding.Mesh(np.array(cpus).reshape(8), ("x",))


def run_sharded(mesh, fn, in_specs, out_specs, *args):
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, in_specs)]
    mapped = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=tuple(in_specs), out_specs=out_specs))
    return mapped(*args)


@pytest.mark.parametrize("spec", [P("x"), P(None, "x"), P(None, None, "x")], ids=str)
@pytest.mark.parametrize("op", ["vector_add", "saxpy", "saxpy_dynamic", "relu"])
def test_elementwise_on_any_axis(mesh, rng, op, spec):
    a, b = random(rng, (16, 24, 8)), random(rng, (16, 24, 8))
    fns = {
        "vector_add": (lambda a, b: cutlax.vector_add(a, b), lambda a, b: a + b),
        "saxpy": (lambda a, b: cutlax.saxpy(0.5, a, b), lambda a, b: 0.5 * a + b),
        "saxpy_dynamic": (lambda a, b: cutlax.saxpy(jnp.float32(0.5), a, b), lambda a, b: 0.5 * a + b),
        "relu": (lambda a, b: cutlax.relu(a), lambda a, b: jax.nn.relu(a)),
    }
    ours, ref = fns[op]
    out = run_sharded(mesh, ours, [spec, spec], spec, a, b)
    assert out.sharding.spec == spec
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6, atol=1e-6)


def test_result_varies_over_the_mapped_axis(mesh, rng):
    # The output's varying manual axes are the inputs': out_specs=P() is refused.
    a = jax.device_put(random(rng, (16,)), NamedSharding(mesh, P("x")))
    mapped = jax.jit(jax.shard_map(cutlax.relu, mesh=mesh, in_specs=P("x"), out_specs=P()))
    with pytest.raises(ValueError, match="varying|vma|out_specs"):
        mapped(a)


def test_bias_relu_sharded_rows(mesh, rng):
    x, bias = random(rng, (64, 40)), random(rng, (40,))
    out = run_sharded(mesh, cutlax.bias_relu, [P("x", None), P()], P("x", None), x, bias)
    np.testing.assert_array_equal(out, jax.nn.relu(x + bias))


def test_bias_relu_sharded_last_axis_with_bias_sharded_alike(mesh, rng):
    x, bias = random(rng, (6, 64)), random(rng, (64,))
    out = run_sharded(mesh, cutlax.bias_relu, [P(None, "x"), P("x")], P(None, "x"), x, bias)
    np.testing.assert_array_equal(out, jax.nn.relu(x + bias))


def test_gemm_rows_of_a(mesh, rng):
    a, b = random(rng, (64, 24)), random(rng, (24, 40))
    out = run_sharded(mesh, TILED_GEMM, [P("x", None), P()], P("x", None), a, b)
    np.testing.assert_allclose(out, jnp.matmul(a, b, precision="highest"), rtol=1e-5, atol=1e-5)


def test_gemm_columns_of_b(mesh, rng):
    a, b = random(rng, (20, 24)), random(rng, (24, 64))
    out = run_sharded(mesh, TILED_GEMM, [P(), P(None, "x")], P(None, "x"), a, b)
    np.testing.assert_allclose(out, jnp.matmul(a, b, precision="highest"), rtol=1e-5, atol=1e-5)


def test_gemm_k_sharded_with_psum(mesh, rng):
    a, b = random(rng, (20, 64)), random(rng, (64, 12))
    out = run_sharded(mesh, lambda a, b: jax.lax.psum(TILED_GEMM(a, b), "x"),
                      [P(None, "x"), P("x", None)], P(), a, b)
    np.testing.assert_allclose(out, jnp.matmul(a, b, precision="highest"), rtol=1e-5, atol=1e-5)


def test_uneven_split_is_rejected_clearly(mesh, rng):
    a = random(rng, (12,))
    mapped = jax.jit(jax.shard_map(cutlax.relu, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    with pytest.raises(ValueError, match="divisible|evenly|12"):
        mapped(a)


def test_grad_under_shard_map(rng):
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("x",))
    x, bias = random(rng, (16, 8)), random(rng, (8,))

    def loss(x, b):
        local = jax.shard_map(lambda x, b: cutlax.bias_relu(x, b), mesh=mesh,
                              in_specs=(P("x"), P()), out_specs=P("x"))
        return (local(x, b) ** 2).sum()

    got = jax.jit(jax.grad(loss, (0, 1)))(x, bias)
    want = jax.grad(lambda x, b: (jax.nn.relu(x + b) ** 2).sum(), (0, 1))(x, bias)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
