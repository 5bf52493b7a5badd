"""cutlax.gemm under jax.grad, jax.vmap, sharding (jit over a mesh and
jax.shard_map) and jax.export, on both routes: cutlax's kernels
(impl="cutlax") and XLA's product (impl="xla", and auto where it picks it)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import DEVICES, random
from gemm_reference import ACTIVATIONS, RTOL, check, check_xla, operands, reference
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import cutlax

ROUTES = ["cutlax", "xla"]


def check_route(impl, out, *args):
    (check_xla if impl == "xla" else check)(out, *args)


@pytest.mark.parametrize("impl", ["cutlax", "xla", "auto"])
@pytest.mark.parametrize("precision", [None, "high", "highest"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_float32_grad(device, rng, precision, activation, impl):
    a, b, bias, w = random(rng, (33, 20)), random(rng, (20, 12)), random(rng, (12,)), random(rng, (33, 12))
    act = ACTIVATIONS[activation]
    ours = jax.grad(lambda a, b, bias: (cutlax.gemm(a, b, bias=bias, activation=activation, precision=precision,
                                                    impl=impl) * w).sum(), argnums=(0, 1, 2))(a, b, bias)
    want = jax.grad(lambda a, b, bias: (act(jnp.matmul(a, b, precision="highest") + bias) * w).sum(),
                    argnums=(0, 1, 2))(a, b, bias)
    tol = 2e-2 if precision is None and device.platform != "cpu" else 1e-5  # TF32 on the GPU
    if impl == "xla" and precision == "high" and device.platform != "cpu":
        tol = 2e-2  # XLA:GPU's "high" may be bf16 x3
    for name, g, r in zip("a b bias".split(), ours, want):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("impl", ROUTES)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("m,n,k", [(64, 40, 24), (33, 13, 7)])
def test_grad_matches_the_float32_reference(device, rng, m, n, k, activation, impl):
    a, b, bias = operands(rng, m, n, k, jnp.bfloat16)
    weights = random(rng, (m, n))

    def loss(fn):
        return lambda a, b, bias: (fn(a, b, bias).astype(jnp.float32) * weights).sum()

    got = jax.grad(loss(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation, impl=impl)),
                   argnums=(0, 1, 2))(a, b, bias)
    f32 = [x.astype(jnp.float32) for x in (a, b, bias)]
    want = jax.grad(loss(lambda a, b, bias: reference(a, b, bias, activation)), argnums=(0, 1, 2))(*f32)
    for name, g, w in zip("a b bias".split(), got, want):
        assert g.dtype == jnp.bfloat16, name
        # dz is rounded to bf16 before the backward products: a few units of
        # bf16 relative to the largest entry.
        scale = float(jnp.max(jnp.abs(w)))
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=2**-6, atol=2**-6 * scale, err_msg=name)


@pytest.mark.parametrize("impl", ROUTES)
@pytest.mark.parametrize("batched", [(True, False, False), (False, True, False), (True, True, False),
                                     (False, False, True)], ids=str)
def test_vmap(device, rng, batched, impl):
    a, b, bias = operands(rng, 24, 16, 40, jnp.float16)
    args = [jnp.stack([x, 0.5 * x, -x]) if on else x for x, on in zip((a, b, bias), batched)]
    axes = tuple(0 if on else None for on in batched)
    out = jax.vmap(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu", impl=impl), in_axes=axes)(*args)
    want = jax.vmap(lambda a, b, bias: reference(a, b, bias, "gelu"), in_axes=axes)(*args)
    if impl == "xla":
        for i in range(3):
            check_xla(out[i], *(x[i] if on else x for x, on in zip(args, batched)), "gelu")
    else:
        np.testing.assert_allclose(np.asarray(out, np.float32), want, rtol=RTOL[jnp.dtype(jnp.float16)], atol=1e-3)


@pytest.mark.parametrize("impl", ROUTES)
def test_vmap_of_grad(device, rng, impl):
    # The backward's transposed products under vmap: a batch of a alone.
    a, b, bias = operands(rng, 24, 16, 40, jnp.bfloat16)
    batch = jnp.stack([a, 0.5 * a, -a])

    def loss(gemm):
        return lambda a, b, bias: gemm(a, b, bias).astype(jnp.float32).sum()

    ours = jax.vmap(jax.grad(loss(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl)),
                             argnums=(0, 1, 2)), in_axes=(0, None, None))(batch, b, bias)
    f32 = [x.astype(jnp.float32) for x in (b, bias)]
    want = jax.vmap(jax.grad(loss(lambda a, b, bias: reference(a, b, bias, "relu")), argnums=(0, 1, 2)),
                    in_axes=(0, None, None))(batch.astype(jnp.float32), *f32)
    for name, g, w in zip("a b bias".split(), ours, want):
        scale = float(jnp.max(jnp.abs(w)))
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=2**-6, atol=2**-6 * scale, err_msg=name)


@pytest.fixture(scope="module", params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    return jax.sharding.Mesh(np.array(jax.devices("cpu")).reshape(4, 2), ("x", "y"),
                             axis_types=(request.param, request.param))


@pytest.mark.parametrize("impl", ROUTES)
@pytest.mark.parametrize("a_spec,b_spec", [(("x", None), (None, "y")), (("x", "y"), (None, None)),
                                           ((None, None), ("x", "y"))], ids=str)
def test_sharded_rows_and_columns_without_gathering_the_result(mesh, rng, a_spec, b_spec, impl):
    a, b, bias = operands(rng, 32, 48, 64, jnp.bfloat16)
    a = jax.device_put(a, NamedSharding(mesh, P(*a_spec)))
    b = jax.device_put(b, NamedSharding(mesh, P(*b_spec)))
    fn = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl))
    check_route(impl, fn(a, b, bias), a, b, bias, "relu")
    # Without a bias: the op's bias of length 0 is made inside the shards.
    no_bias = jax.jit(lambda a, b: cutlax.gemm(a, b, activation="relu", impl=impl))
    check_route(impl, no_bias(a, b), a, b, None, "relu")


def test_an_empty_bias_never_crosses_into_the_partitioned_call(mesh, rng):
    # As an operand of the partitioned call (custom_partitioning's, or
    # shard_map's manual computation), the bias of length 0 crashed jaxlib
    # 0.11.2's CPU compiler; the shards make it themselves.
    a, b, _ = operands(rng, 32, 48, 64, jnp.bfloat16)
    a = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    b = jax.device_put(b, NamedSharding(mesh, P(None, "y")))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, activation="relu", impl="cutlax")).lower(a, b).as_text()
    boundary = [line for line in text.splitlines() if "CustomSPMDPartitioning" in line or "manual_computation" in line]
    assert boundary and not any("tensor<0x" in line for line in boundary), boundary


@pytest.mark.parametrize("impl", ROUTES)
def test_sharded_grad(mesh, rng, impl):
    # The backward's transposed products split by their own rules.
    a, b, bias = operands(rng, 32, 48, 64, jnp.bfloat16)
    f32 = [x.astype(jnp.float32) for x in (a, b, bias)]
    want = jax.grad(lambda a, b, bias: reference(a, b, bias, "relu").sum(), argnums=(0, 1, 2))(*f32)
    a = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    b = jax.device_put(b, NamedSharding(mesh, P(None, "y")))

    def loss(a, b, bias):
        return cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl).astype(jnp.float32).sum()

    with jax.set_mesh(mesh):
        ours = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(a, b, bias)
    for name, g, w in zip("a b bias".split(), ours, want):
        scale = float(jnp.max(jnp.abs(w)))
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=2**-6, atol=2**-6 * scale, err_msg=name)


@pytest.mark.parametrize("impl", ["cutlax", "xla", "auto"])
@pytest.mark.parametrize("precision", [None, "highest"])
def test_shard_map_of_float32_on_each_route(rng, impl, precision):
    # Per-shard products under jax.shard_map: rows of a over 8 devices; the
    # float32 default is one lowering per platform (platform_dependent) on
    # cutlax's route, which shard_map must carry.
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("x",))
    a, b, bias = random(rng, (64, 24)), random(rng, (24, 16)), random(rng, (16,))
    fn = jax.jit(jax.shard_map(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl,
                                                              precision=precision),
                               mesh=mesh, in_specs=(P("x", None), P(), P()), out_specs=P("x", None)))
    np.testing.assert_allclose(fn(a, b, bias), jax.nn.relu(jnp.matmul(a, b, precision="highest") + bias),
                               rtol=1e-5, atol=1e-5)
    if impl == "cutlax":
        # cutlax's custom VJPs give b's cotangent per shard (varying over x)
        # where shard_map's check_vma wants it replicated, as for any
        # custom_vjp; the Op layer (cutlax.op) would need to psum it.
        return
    grad = jax.grad(lambda a: fn(a, b, bias).sum())(a)
    want = jax.grad(lambda a: jax.nn.relu(jnp.matmul(a, b, precision="highest") + bias).sum())(a)
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", ["cutlax", "auto"])
def test_exports_with_a_symbolic_batch_of_rows(rng, impl):
    m, = jax.export.symbolic_shape("m")
    specs = [jax.ShapeDtypeStruct((m, 24), jnp.bfloat16), jax.ShapeDtypeStruct((24, 40), jnp.bfloat16),
             jax.ShapeDtypeStruct((40,), jnp.bfloat16)]
    fn = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu", impl=impl))
    platforms = ["cpu", "cuda"] if len(DEVICES) > 1 else ["cpu"]
    exported = cutlax.export.export(fn, *specs, platforms=platforms)
    restored = jax.export.deserialize(exported.serialize())
    for rows in (3, 130):
        a, b, bias = operands(rng, rows, 40, 24, jnp.bfloat16)
        check_route("xla" if impl == "auto" else impl, restored.call(a, b, bias), a, b, bias, "gelu")


@pytest.mark.parametrize("impl", ["cutlax", "xla"])
def test_exports_float32_for_cpu_and_cuda_at_once(rng, impl):
    # Both platforms' lowerings in one artifact, the grad included.
    a, b = random(rng, (16, 24)), random(rng, (24, 8))
    fn = jax.jit(jax.value_and_grad(lambda a, b: cutlax.gemm(a, b, activation="relu", impl=impl).sum()))
    exported = cutlax.export.export(fn, jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, b.dtype),
                                    platforms=["cpu", "cuda"])
    value, grad = jax.export.deserialize(exported.serialize()).call(a, b)
    want_value, want_grad = jax.value_and_grad(
        lambda a, b: jax.nn.relu(jnp.matmul(a, b, precision="highest")).sum())(a, b)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", ["cutlax", "auto"])
@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_composes_with_vmap_sharding_and_export(mesh, rng, precision, impl):
    # float32's 3xTF32: its per-row and per-column scales (norms over K) and
    # its two GEMMs under vmap (a batch of a), sharded rows of a and columns
    # of b, and an export with a symbolic M, each within FP32's tolerance.
    a, b = random(rng, (32, 24)), random(rng, (24, 48))
    ref = jnp.matmul(a, b, precision="highest")

    def gemm(a, b):
        return cutlax.gemm(a, b, precision=precision, impl=impl)

    def close(out, want):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

    close(jax.vmap(gemm, in_axes=(0, None))(jnp.stack([a, -0.5 * a]), b), jnp.stack([ref, -0.5 * ref]))
    close(jax.jit(gemm)(jax.device_put(a, NamedSharding(mesh, P("x", None))),
                        jax.device_put(b, NamedSharding(mesh, P(None, "y")))), ref)
    m, = jax.export.symbolic_shape("m")
    exported = cutlax.export.export(jax.jit(gemm), jax.ShapeDtypeStruct((m, 24), jnp.float32),
                                    jax.ShapeDtypeStruct((24, 48), jnp.float32),
                                    platforms=["cpu", "cuda"] if len(DEVICES) > 1 else ["cpu"])
    close(jax.export.deserialize(exported.serialize()).call(a[:5], b), ref[:5])
