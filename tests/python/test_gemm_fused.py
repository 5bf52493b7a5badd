"""cutlax.gemm in bf16 and f16: the Hopper kernel on the GPU, its C++ twin on
the CPU, with the bias and activation fused, under grad, vmap, sharding and
export.

Tolerances. The reference is jnp.matmul in float32 (``precision="highest"``)
plus the bias, then the activation in float32: the kernel's own arithmetic up
to the order of the float32 sums. The kernel rounds the result once to the
16-bit dtype, so a result is within 2^-8 (bf16) / 2^-11 (f16) relative of
the reference; a sum that lands near a rounding boundary can round the other
way, hence rtol = 2^-7 / 2^-10 (one unit in the last place), plus an atol of
1e-3 for results near zero, where relative error means nothing (and gelu's
tanh comes from the GPU's tanh.approx, absolute error about 5e-4).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import DEVICES, random, tf32_bound
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import cutlax
from cutlax.cli import tuning
from cutlax.library import builtin_library
from cutlax.ops import gemm as gemm_module

# The op behind cutlax.gemm, called directly (docs/gemm.md, "The op").
GEMM_OP, GEMM_AUX_OP = builtin_library().gemm, builtin_library().gemm_aux
DTYPES = [jnp.bfloat16, jnp.float16]
RTOL = {jnp.dtype(jnp.bfloat16): 2.0**-7, jnp.dtype(jnp.float16): 2.0**-10}
ACTIVATIONS = {None: lambda z: z, "relu": jax.nn.relu, "gelu": jax.nn.gelu}


def reference(a, b, bias=None, activation=None):
    z = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32), precision="highest")
    if bias is not None:
        z = z + bias.astype(jnp.float32)
    return ACTIVATIONS[activation](z)


def check(out, a, b, bias=None, activation=None):
    ref = reference(a, b, bias, activation)
    assert out.shape == ref.shape and out.dtype == a.dtype
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(ref), rtol=RTOL[a.dtype], atol=1e-3)


def operands(rng, m, n, k, dtype):
    # Scaled so that the products stay O(1) at any K.
    return (random(rng, (m, k), dtype, scale=max(k, 1) ** -0.5), random(rng, (k, n), dtype),
            random(rng, (n,), dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize(
    "m,n,k",
    # Whole tiles; partial tiles in M and N; N and K off the 8-element TMA
    # alignment (padded); one row; K = 1.
    [(128, 256, 64), (300, 136, 72), (7, 13, 5), (1, 128, 1000), (129, 7, 1), (33, 1, 128)],
)
def test_matches_float32_reference(device, rng, m, n, k, dtype, activation):
    a, b, bias = operands(rng, m, n, k, dtype)
    check(jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation))(a, b, bias),
          a, b, bias, activation)
    check(cutlax.gemm(a, b, activation=activation), a, b, None, activation)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_every_configuration_of_the_dtype_agrees(device, rng, dtype):
    a, b, bias = operands(rng, 200, 264, 96, dtype)
    for impl in gemm_module.configs(dtype):
        check(cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl), a, b, bias, "relu")


@pytest.mark.parametrize("kernel", sorted(gemm_module.KERNELS), ids="-".join)
def test_every_built_kernel_matches_the_reference(device, rng, kernel):
    # Each line of src/ops/gemm_kernels.def through the op itself, with a
    # partial tile in every dimension (M, N past 128 and 256, K past the
    # 128-byte K tile), bias and relu. float32 is TF32: the twin's bound.
    dtype, form, config = jnp.dtype(kernel[0]), kernel[1], gemm_module.CONFIGS.index(kernel[2])
    m, n, k = 136, 264, 72
    a, b, bias = operands(rng, m, n, k, dtype)
    stored_a, stored_b = (a.T if form == "a" else a), (b.T if form == "b" else b)
    transpose = ("none", "b", "a").index(form)
    c = GEMM_OP(stored_a, stored_b, bias, activation=1, config=config, transpose=transpose)
    if dtype == jnp.float32:
        assert bool(jnp.all(jnp.abs(c - reference(a, b, bias, "relu")) <= tf32_bound(a, b)))
    else:
        check(c, a, b, bias, "relu")


@pytest.mark.skipif(not tuning.available(), reason="needs a tuning build (CUTLAX_GEMM_TUNING=ON)")
def test_every_tile_order_gives_the_same_product(device, rng):
    # The persistent scheduler's walk over the tiles (swizzle, raster), which
    # a tuning build lets bench/gemm_tune.py set: on the GPU each order
    # covers every tile once; the CPU twin ignores it.
    a, b, bias = operands(rng, 300, 520, 72, jnp.bfloat16)
    for swizzle, raster in ((1, 0), (2, 1), (4, 2), (8, 0), (8, 1)):
        with tuning.tile_order(swizzle, raster):
            check(cutlax.gemm(a, b, bias=bias, activation="relu"), a, b, bias, "relu")
    with pytest.raises(ValueError, match=r"swizzle must be 0 \(the heuristic's\), 1, 2, 4 or 8, got 3"):
        tuning.set_tile_order(3, 0)
    with pytest.raises(ValueError, match=r"raster must be 0 \(heuristic\), 1 \(along M\) or 2 \(along N\), got 5"):
        tuning.set_tile_order(1, 5)


@pytest.mark.skipif(tuning.available(), reason="a tuning build has the knobs")
def test_a_default_build_has_no_tuning_state():
    # The tile order and promotion interval are the heuristic's in every
    # call: nothing in a default build can change them for the process.
    with pytest.raises(RuntimeError, match="CUTLAX_GEMM_TUNING=ON"):
        tuning.set_tile_order(8, 0)
    with pytest.raises(RuntimeError, match="CUTLAX_GEMM_TUNING=ON"):
        tuning.set_promotion_interval(8)


def test_configurations_without_a_kernel_are_refused(rng):
    # The promoted kernel is float32's alone.
    assert ("float32", "b", gemm_module.PROMOTED) in gemm_module.KERNELS
    a, b, _ = operands(rng, 8, 8, 8, jnp.float16)
    with pytest.raises(ValueError, match=r"impl='cooperative_128x128_1x1_promoted' has no float16 kernel for a @ b; "
                                         r"float16 has \('auto', 'cooperative_128x256_2x1', 'pingpong_128x128_1x1'\)"):
        cutlax.gemm(a, b, impl=gemm_module.PROMOTED)


def test_a_configuration_built_only_for_the_backward_is_refused_for_the_forward(rng):
    # The 64x128 kernel reads a transposed (the weight gradient a.T @ g):
    # auto picks it there, impl= cannot force it on a @ b.
    assert ("bfloat16", "a", "pingpong_64x128_1x1") in gemm_module.KERNELS
    assert "pingpong_64x128_1x1" not in gemm_module.configs(jnp.bfloat16)
    a, b, _ = operands(rng, 8, 8, 8, jnp.bfloat16)
    with pytest.raises(ValueError, match=r"impl='pingpong_64x128_1x1' has no bfloat16 kernel for a @ b; bfloat16 has "
                                         r"\('auto', 'cooperative_128x256_2x1', 'pingpong_128x128_1x1'\)"):
        cutlax.gemm(a, b, impl="pingpong_64x128_1x1")


def test_k_zero_is_the_activation_of_the_bias(device, rng):
    a, b, bias = operands(rng, 5, 8, 0, jnp.bfloat16)
    out = cutlax.gemm(a, b, bias=bias, activation="relu")
    np.testing.assert_array_equal(np.asarray(out, np.float32),
                                  np.broadcast_to(np.asarray(jax.nn.relu(bias), np.float32), (5, 8)))


def test_empty_rows(device, rng):
    a, b, bias = operands(rng, 0, 16, 8, jnp.float16)
    assert cutlax.gemm(a, b, bias=bias, activation="gelu").shape == (0, 16)


@pytest.mark.parametrize("activation", [None, "relu"])
def test_nan_and_inf_reach_the_result(device, rng, activation):
    # relu and no activation are one clamp in the kernel's epilogue (at 0 or
    # at -infinity): -infinity must come through the latter as it is.
    a, b, bias = operands(rng, 4, 8, 8, jnp.bfloat16)
    a = a.at[1, 2].set(jnp.nan).at[2, 0].set(jnp.inf).at[3, 1].set(-jnp.inf)
    out = np.asarray(cutlax.gemm(a, b, bias=bias, activation=activation), np.float32)
    ref = np.asarray(reference(a, b, bias, activation))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    infinite = np.isinf(ref)
    assert (ref == -np.inf).any() == (activation is None)
    np.testing.assert_array_equal(np.isinf(out), infinite)
    np.testing.assert_array_equal(out[infinite], ref[infinite])  # the signs too


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("m,n,k", [(64, 40, 24), (33, 13, 7)])
def test_grad_matches_the_float32_reference(device, rng, m, n, k, activation):
    a, b, bias = operands(rng, m, n, k, jnp.bfloat16)
    weights = random(rng, (m, n))

    def loss(fn):
        return lambda a, b, bias: (fn(a, b, bias).astype(jnp.float32) * weights).sum()

    got = jax.grad(loss(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation)),
                   argnums=(0, 1, 2))(a, b, bias)
    f32 = [x.astype(jnp.float32) for x in (a, b, bias)]
    want = jax.grad(loss(lambda a, b, bias: reference(a, b, bias, activation)), argnums=(0, 1, 2))(*f32)
    for name, g, w in zip("a b bias".split(), got, want):
        assert g.dtype == jnp.bfloat16, name
        # dz is rounded to bf16 before the backward products: a few units of
        # bf16 relative to the largest entry.
        scale = float(jnp.max(jnp.abs(w)))
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=2**-6, atol=2**-6 * scale, err_msg=name)


@pytest.mark.parametrize("dtype,transpose", [(jnp.bfloat16, 1), (jnp.bfloat16, 2), (jnp.float16, 1),
                                             (jnp.float16, 2), (jnp.float32, 1)], ids=str)
@pytest.mark.parametrize("m,n,k", [(136, 264, 72), (8, 16, 24), (33, 8, 5)])
def test_transposed_operand_forms(device, rng, dtype, transpose, m, n, k):
    # transpose=1: c = a @ b.T with b (N, K); 2: c = a.T @ b with a (K, M).
    # Shapes whose rows are whole 16-byte units, as the handler takes them.
    if transpose == 2 and m % 8:
        m += 8 - m % 8
    if k % 8:
        k += 8 - k % 8
    a, b, bias = operands(rng, m, n, k, dtype)
    stored_a, stored_b = (a.T if transpose == 2 else a), (b.T if transpose == 1 else b)
    c = GEMM_OP(stored_a, stored_b, bias, activation=1, config=0, transpose=transpose)
    if dtype == jnp.float32:  # TF32
        ref = reference(a, b, bias, "relu")
        assert bool(jnp.all(jnp.abs(c - ref) <= tf32_bound(a, b)))
    else:
        check(c, a, b, bias, "relu")


def test_grad_runs_the_backward_on_cutlax_kernels(rng):
    a, b, bias = operands(rng, 64, 64, 64, jnp.bfloat16)
    grad = jax.jit(jax.grad(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu")
                            .astype(jnp.float32).sum(), argnums=(0, 1, 2)))
    text = grad.lower(a, b, bias).as_text()
    assert text.count("cutlax_gemm_v1") == 3  # forward, da, db
    assert "cutlax_bias_relu_backward_v1" in text  # the mask and dbias in one sweep
    assert "dot_general" not in text
    assert "transpose" not in text.replace("transpose = ", "")  # the kernels read the arrays as stored


def test_gelu_writes_the_pre_activation_for_its_backward(rng):
    a, b, bias = operands(rng, 16, 16, 16, jnp.bfloat16)
    forward = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu"))
    assert "cutlax_gemm_aux_v1" in forward.lower(a, b, bias).as_text()
    z, c = GEMM_AUX_OP(a, b, bias, activation=2, config=0, transpose=0)[::-1]
    check(z, a, b, bias, None)
    check(c, a, b, bias, "gelu")


def test_no_bias_is_an_empty_operand_that_the_kernel_reads_as_zeros(device, rng):
    # Without a bias the op gets a bias of length 0, so no N zeros are
    # written first (a kernel the GEMM would wait for), forward and backward.
    a, b, _ = operands(rng, 24, 16, 40, jnp.bfloat16)
    loss = lambda a, b: cutlax.gemm(a, b, activation="relu").astype(jnp.float32).sum()  # noqa: E731
    text = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(a, b).as_text()
    calls = [line for line in text.splitlines() if "custom_call @cutlax_gemm_v1" in line]
    assert len(calls) == 3 and all("tensor<0xbf16>) ->" in line for line in calls), calls
    assert "cutlax_relu_backward_v1" in text and "cutlax_bias_relu_backward_v1" not in text  # no dbias to sum
    c = GEMM_OP(a, b, jnp.zeros((0,), a.dtype), activation=1, config=0, transpose=0)
    check(c, a, b, None, "relu")


def test_an_empty_bias_is_refused_from_users_and_a_wrong_length_from_the_op(rng):
    a, b, _ = operands(rng, 8, 16, 8, jnp.bfloat16)
    with pytest.raises(ValueError, match=r"cutlax.gemm: bias has shape \(0,\); expected \(16,\), N$"):
        cutlax.gemm(a, b, bias=jnp.zeros((0,), a.dtype))
    with pytest.raises(ValueError, match=r"bias has shape \(5,\); expected \(16,\), N, or \(0,\) for none"):
        GEMM_OP(a, b, jnp.zeros((5,), a.dtype), activation=0, config=0, transpose=0)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.platform)
def test_the_handler_rejects_a_bias_of_the_wrong_length(rng, dev):
    # The C++ check behind the Python one: an ffi::Error, raised as an exception.
    a, b, _ = (jax.device_put(x, dev) for x in operands(rng, 8, 16, 8, jnp.bfloat16))
    call = jax.ffi.ffi_call("cutlax_gemm_v1", jax.ShapeDtypeStruct((8, 16), a.dtype))
    with pytest.raises(Exception, match=r"bias has shape \(5,\); expected dimension 0 to be 16 "
                                        r"\(b's N \(or 0: no bias\)\)"):
        jax.block_until_ready(call(a, b, jnp.zeros((5,), a.dtype), activation=0, config=0, transpose=0))


@pytest.mark.parametrize("batched", [(True, False, False), (False, True, False), (True, True, False),
                                     (False, False, True)], ids=str)
def test_vmap(device, rng, batched):
    a, b, bias = operands(rng, 24, 16, 40, jnp.float16)
    args = [jnp.stack([x, 0.5 * x, -x]) if on else x for x, on in zip((a, b, bias), batched)]
    axes = tuple(0 if on else None for on in batched)
    out = jax.vmap(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu"), in_axes=axes)(*args)
    want = jax.vmap(lambda a, b, bias: reference(a, b, bias, "gelu"), in_axes=axes)(*args)
    np.testing.assert_allclose(np.asarray(out, np.float32), want, rtol=RTOL[jnp.dtype(jnp.float16)], atol=1e-3)


def test_vmap_of_grad(device, rng):
    # The backward's transposed products under vmap: a batch of a alone.
    a, b, bias = operands(rng, 24, 16, 40, jnp.bfloat16)
    batch = jnp.stack([a, 0.5 * a, -a])

    def loss(gemm):
        return lambda a, b, bias: gemm(a, b, bias).astype(jnp.float32).sum()

    ours = jax.vmap(jax.grad(loss(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu")),
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


@pytest.mark.parametrize("a_spec,b_spec", [(("x", None), (None, "y")), (("x", "y"), (None, None)),
                                           ((None, None), ("x", "y"))], ids=str)
def test_sharded_rows_and_columns_without_gathering_the_result(mesh, rng, a_spec, b_spec):
    a, b, bias = operands(rng, 32, 48, 64, jnp.bfloat16)
    a = jax.device_put(a, NamedSharding(mesh, P(*a_spec)))
    b = jax.device_put(b, NamedSharding(mesh, P(*b_spec)))
    fn = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu"))
    check(fn(a, b, bias), a, b, bias, "relu")
    # Without a bias: the op's bias of length 0 is made inside the shards.
    no_bias = jax.jit(lambda a, b: cutlax.gemm(a, b, activation="relu"))
    check(no_bias(a, b), a, b, None, "relu")


def test_an_empty_bias_never_crosses_into_the_partitioned_call(mesh, rng):
    # As an operand of the partitioned call (custom_partitioning's, or
    # shard_map's manual computation), the bias of length 0 crashed jaxlib
    # 0.11.2's CPU compiler; the shards make it themselves.
    a, b, _ = operands(rng, 32, 48, 64, jnp.bfloat16)
    a = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    b = jax.device_put(b, NamedSharding(mesh, P(None, "y")))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, activation="relu")).lower(a, b).as_text()
    boundary = [line for line in text.splitlines() if "CustomSPMDPartitioning" in line or "manual_computation" in line]
    assert boundary and not any("tensor<0x" in line for line in boundary), boundary


def test_sharded_grad(mesh, rng):
    # The backward's transposed products split by their own rules.
    a, b, bias = operands(rng, 32, 48, 64, jnp.bfloat16)
    f32 = [x.astype(jnp.float32) for x in (a, b, bias)]
    want = jax.grad(lambda a, b, bias: reference(a, b, bias, "relu").sum(), argnums=(0, 1, 2))(*f32)
    a = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    b = jax.device_put(b, NamedSharding(mesh, P(None, "y")))
    loss = lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu").astype(jnp.float32).sum()  # noqa: E731
    with jax.set_mesh(mesh):
        ours = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(a, b, bias)
    for name, g, w in zip("a b bias".split(), ours, want):
        scale = float(jnp.max(jnp.abs(w)))
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=2**-6, atol=2**-6 * scale, err_msg=name)


def test_exports_with_a_symbolic_batch_of_rows(rng):
    m, = jax.export.symbolic_shape("m")
    specs = [jax.ShapeDtypeStruct((m, 24), jnp.bfloat16), jax.ShapeDtypeStruct((24, 40), jnp.bfloat16),
             jax.ShapeDtypeStruct((40,), jnp.bfloat16)]
    fn = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu"))
    platforms = ["cpu", "cuda"] if len(DEVICES) > 1 else ["cpu"]
    exported = cutlax.export.export(fn, *specs, platforms=platforms)
    restored = jax.export.deserialize(exported.serialize())
    for rows in (3, 130):
        a, b, bias = operands(rng, rows, 40, 24, jnp.bfloat16)
        check(restored.call(a, b, bias), a, b, bias, "gelu")


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_composes_with_vmap_sharding_and_export(mesh, rng, precision):
    # float32's 3xTF32: its per-row and per-column scales (norms over K) and
    # its two GEMMs under vmap (a batch of a), sharded rows of a and columns
    # of b, and an export with a symbolic M, each within FP32's tolerance.
    a, b = random(rng, (32, 24)), random(rng, (24, 48))
    ref = jnp.matmul(a, b, precision="highest")

    def gemm(a, b):
        return cutlax.gemm(a, b, precision=precision)

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


# Bad input: trace-time errors from Python, ffi::Errors from the handler.

def test_bias_must_have_the_inputs_dtype(rng):
    a, b, _ = operands(rng, 8, 8, 8, jnp.bfloat16)
    with pytest.raises(TypeError, match="cutlax.gemm: bias has dtype float32; expected one of: bfloat16"):
        cutlax.gemm(a, b, bias=jnp.zeros(8, jnp.float32))


def test_operands_must_share_a_dtype(rng):
    a, b, _ = operands(rng, 8, 8, 8, jnp.bfloat16)
    with pytest.raises(TypeError, match="cutlax.gemm: b has dtype float16; expected one of: bfloat16"):
        cutlax.gemm(a, b.astype(jnp.float16))


def test_impl_names_match_the_dtype(rng):
    a, b, _ = operands(rng, 8, 8, 8, jnp.bfloat16)
    with pytest.raises(TypeError, match="impl='tiled' takes float32, got bfloat16"):
        cutlax.gemm(a, b, impl="tiled")


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.platform)
def test_the_handler_rejects_what_the_kernel_cannot_take(rng, dev):
    a, b, bias = (jax.device_put(x, dev) for x in operands(rng, 8, 12, 8, jnp.bfloat16))
    with pytest.raises(Exception, match=r"b must have rows that are multiples of 16 bytes \(8 elements"):
        jax.block_until_ready(GEMM_OP(a, b, bias, activation=0, config=0, transpose=0))
    a, b, bias = (jax.device_put(x, dev) for x in operands(rng, 8, 8, 8, jnp.bfloat16))
    with pytest.raises(Exception, match=r"activation must be 0 \(none\), 1 \(relu\) or 2 \(gelu\), got 7"):
        jax.block_until_ready(GEMM_OP(a, b, bias, activation=7, config=0, transpose=0))
    with pytest.raises(Exception, match=r"config must be in \[0, 5\), got 9"):
        jax.block_until_ready(GEMM_OP(a, b, bias, activation=0, config=9, transpose=0))
    with pytest.raises(Exception, match=r"transpose must be 0 \(none\), 1 \(b\) or 2 \(a\), got 3"):
        jax.block_until_ready(GEMM_OP(a, b, bias, activation=0, config=0, transpose=3))
    with pytest.raises(Exception, match="config must be auto or one of pingpong_128x128_1x1 for transpose b in "
                                        "bfloat16, got cooperative_128x256_2x1"):
        jax.block_until_ready(GEMM_OP(a, b, bias, activation=0, config=1, transpose=1))
    f32 = [x.astype(jnp.float32) for x in (a, b, bias)]
    with pytest.raises(Exception, match=r"transpose must be one of none, b for float32 \(the kernels built: "
                                        r"cutlax.ops.gemm.KERNELS\), got a"):
        jax.block_until_ready(GEMM_OP(*f32, activation=0, config=0, transpose=2))


# Sizes a CPU run would take minutes for.

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("m,n,k", [(8192, 8192, 8192), (4096, 4096, 1024), (1000, 4096, 7), (1, 8192, 4096),
                                   (8192, 7, 1000), (4096, 128, 8192), (7, 1000, 128)])
def test_large_shapes_on_the_gpu(rng, m, n, k, dtype):
    with jax.default_device(jax.devices("gpu")[0]):
        a, b, bias = operands(rng, m, n, k, dtype)
        for impl in gemm_module.configs(dtype):
            check(cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl), a, b, bias, "relu")
