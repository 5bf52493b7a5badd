"""cutlax.gemm's results per dtype and operand form: the Hopper kernel on the
GPU and its C++ twin on the CPU (impl="cutlax" or a configuration), the
tiled SGEMM, XLA's route, the op itself, edge shapes, non-finite values, and
bad input. The route rule is test_gemm_plan.py's, precision
test_gemm_precision.py's, grad/vmap/sharding/export transforms/test_gemm_transforms.py's.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import DEVICES, random, tf32_bound
from gemm_reference import (
    ACTIVATIONS,
    GEMM_OP,
    HALF_DTYPES,
    TF32_TF32_F32,
    check,
    check_f32,
    check_xla,
    operands,
    reference,
)

import cutlax
from cutlax.cli import tuning
from cutlax.ops import gemm as gemm_module


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize(
    "m,n,k",
    # Whole tiles; partial tiles in M and N; N and K off the 8-element TMA
    # alignment (padded); one row; K = 1.
    [(128, 256, 64), (300, 136, 72), (7, 13, 5), (1, 128, 1000), (129, 7, 1), (33, 1, 128)],
)
def test_matches_float32_reference(device, rng, m, n, k, dtype, activation):
    a, b, bias = operands(rng, m, n, k, dtype)
    check(jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation, impl="cutlax"))(a, b, bias),
          a, b, bias, activation)
    check(cutlax.gemm(a, b, activation=activation, impl="cutlax"), a, b, None, activation)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (7, 13, 5), (0, 8, 8), (5, 8, 0)])
def test_the_xla_route_matches_the_reference(device, rng, m, n, k, dtype, activation):
    # impl="xla": act(a @ b + bias) as jax.numpy, what a user writes.
    a, b, bias = operands(rng, m, n, k, dtype)
    fn = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation=activation, impl="xla"))
    check_xla(fn(a, b, bias), a, b, bias, activation)
    assert "cutlax_gemm" not in fn.lower(a, b, bias).as_text()


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.__name__)
def test_every_configuration_of_the_dtype_agrees(device, rng, dtype):
    a, b, bias = operands(rng, 200, 264, 96, dtype)
    for impl in ("cutlax",) + gemm_module.configs(dtype)[1:]:
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
    transpose = gemm_module.TRANSPOSES.index(form)
    c = GEMM_OP(stored_a, stored_b, bias, activation=1, config=config, transpose=transpose)
    if dtype == jnp.float32:
        assert bool(jnp.all(jnp.abs(c - reference(a, b, bias, "relu")) <= tf32_bound(a, b)))
    else:
        check(c, a, b, bias, "relu")


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


@pytest.mark.skipif(not tuning.available(), reason="needs a tuning build (CUTLAX_GEMM_TUNING=ON)")
def test_every_tile_order_gives_the_same_product(device, rng):
    # The persistent scheduler's walk over the tiles (swizzle, raster), which
    # a tuning build lets bench/gemm_tune.py set: on the GPU each order
    # covers every tile once; the CPU twin ignores it.
    a, b, bias = operands(rng, 300, 520, 72, jnp.bfloat16)
    for swizzle, raster in ((1, 0), (2, 1), (4, 2), (8, 0), (8, 1)):
        with tuning.tile_order(swizzle, raster):
            check(cutlax.gemm(a, b, bias=bias, activation="relu", impl="cutlax"), a, b, bias, "relu")
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


# float32: the tiled SGEMM and the kernels' 3xTF32, both FP32-accurate.

@pytest.mark.parametrize("impl", ["tiled", "auto", "cutlax"])
def test_bias_and_relu(device, rng, impl):
    a, b, bias = random(rng, (33, 17)), random(rng, (17, 40)), random(rng, (40,))
    ref = jnp.matmul(a, b, precision="highest") + bias
    gemm = functools.partial(cutlax.gemm, impl=impl, precision=None if impl == "tiled" else "high")
    np.testing.assert_allclose(gemm(a, b, bias=bias), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gemm(a, b, bias=bias, activation="relu"), jax.nn.relu(ref), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gemm(a, b, activation="relu"), jax.nn.relu(ref - bias), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("impl", ["auto", "cutlax"])
def test_float32_gelu(device, rng, impl):
    a, b, bias = random(rng, (9, 17)), random(rng, (17, 6)), random(rng, (6,))
    ref = jax.nn.gelu(jnp.matmul(a, b, precision="highest") + bias)
    np.testing.assert_allclose(cutlax.gemm(a, b, bias=bias, activation="gelu", precision="highest", impl=impl), ref,
                               rtol=1e-4, atol=1e-4)


def test_inside_jit_with_other_ops(device, rng):
    a, b = random(rng, (64, 48)), random(rng, (48, 32))
    for impl in ("auto", "cutlax"):
        f = jax.jit(lambda a, b, impl=impl: jnp.tanh(cutlax.gemm(a * 0.5, b, precision="high", impl=impl)).sum())
        np.testing.assert_allclose(f(a, b), jnp.tanh(jnp.matmul(a * 0.5, b, precision="highest")).sum(), rtol=1e-4)


# Edge shapes and values.

@pytest.mark.parametrize("impl", ["auto", "cutlax", "tiled"])
def test_k_zero_gives_zeros(device, rng, impl):
    a, b = random(rng, (5, 0)), random(rng, (0, 3))
    np.testing.assert_array_equal(cutlax.gemm(a, b, impl=impl), jnp.zeros((5, 3)))


@pytest.mark.parametrize("impl", ["auto", "cutlax"])
def test_k_zero_is_the_activation_of_the_bias(device, rng, impl):
    a, b, bias = operands(rng, 5, 8, 0, jnp.bfloat16)
    out = cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl)
    np.testing.assert_array_equal(np.asarray(out, np.float32),
                                  np.broadcast_to(np.asarray(jax.nn.relu(bias), np.float32), (5, 8)))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("impl", ["auto", "cutlax"])
def test_empty_rows(device, rng, dtype, impl):
    a, b, bias = operands(rng, 0, 16, 8, dtype)
    assert cutlax.gemm(a, b, bias=bias, activation="gelu", impl=impl).shape == (0, 16)


@pytest.mark.parametrize("impl", ["auto", "cutlax", "tiled"])
def test_nan_and_inf_propagate(device, rng, impl):
    a, b = random(rng, (4, 3)), random(rng, (3, 5))
    a = a.at[1, 2].set(np.nan).at[2, 0].set(np.inf)
    out, ref = cutlax.gemm(a, b, impl=impl), jnp.matmul(a, b, precision="highest")
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))


@pytest.mark.parametrize("activation", [None, "relu"])
def test_nan_and_inf_reach_the_result(device, rng, activation):
    # relu and no activation are one clamp in the kernel's epilogue (at 0 or
    # at -infinity): -infinity must come through the latter as it is.
    a, b, bias = operands(rng, 4, 8, 8, jnp.bfloat16)
    a = a.at[1, 2].set(jnp.nan).at[2, 0].set(jnp.inf).at[3, 1].set(-jnp.inf)
    out = np.asarray(cutlax.gemm(a, b, bias=bias, activation=activation, impl="cutlax"), np.float32)
    ref = np.asarray(reference(a, b, bias, activation))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    infinite = np.isinf(ref)
    assert (ref == -np.inf).any() == (activation is None)
    np.testing.assert_array_equal(np.isinf(out), infinite)
    np.testing.assert_array_equal(out[infinite], ref[infinite])  # the signs too


def test_no_bias_is_an_empty_operand_that_the_kernel_reads_as_zeros(device, rng):
    # Without a bias the op gets a bias of length 0, so no N zeros are
    # written first (a kernel the GEMM would wait for), forward and backward.
    a, b, _ = operands(rng, 24, 16, 40, jnp.bfloat16)
    loss = lambda a, b: cutlax.gemm(a, b, activation="relu", impl="cutlax").astype(jnp.float32).sum()  # noqa: E731
    text = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(a, b).as_text()
    calls = [line for line in text.splitlines() if "custom_call @cutlax_gemm_v1" in line]
    assert len(calls) == 3 and all("tensor<0xbf16>) ->" in line for line in calls), calls
    assert "cutlax_relu_backward_v1" in text and "cutlax_bias_relu_backward_v1" not in text  # no dbias to sum
    c = GEMM_OP(a, b, jnp.zeros((0,), a.dtype), activation=1, config=0, transpose=0)
    check(c, a, b, None, "relu")


# Bad input: trace-time errors from Python, ffi::Errors from the handler.

def test_mismatched_k(rng):
    with pytest.raises(ValueError, match=r"b has shape \(6, 4\); expected its K to be 5, a's, as a has shape \(3, 5\)"):
        cutlax.gemm(random(rng, (3, 5)), random(rng, (6, 4)))


@pytest.mark.parametrize("shapes", [((5,), (5, 4)), ((3, 5), (5,)), ((2, 3, 5), (5, 4))], ids=str)
def test_operands_must_be_matrices(rng, shapes):
    with pytest.raises(ValueError, match="must have rank 2"):
        cutlax.gemm(random(rng, shapes[0]), random(rng, shapes[1]))


def test_tiled_is_float32_only(rng):
    with pytest.raises(TypeError, match="impl='tiled' takes float32, got bfloat16"):
        cutlax.gemm(random(rng, (4, 4), jnp.bfloat16), random(rng, (4, 4), jnp.bfloat16), impl="tiled")
    with pytest.raises(TypeError, match="a has dtype int32; expected one of: float32, bfloat16, float16"):
        cutlax.gemm(jnp.ones((4, 4), jnp.int32), jnp.ones((4, 4), jnp.int32))


def test_unknown_impl_and_activation(rng):
    a = random(rng, (4, 4))
    with pytest.raises(ValueError, match=r"precision='highest' runs on impl='auto' "
                                         r"\('cooperative_128x128_1x1_promoted'\) or 'tiled' \(FP32 accuracy\), "
                                         r"not impl='cooperative_128x256_2x1'"):
        cutlax.gemm(a, a, impl="cooperative_128x256_2x1", precision="highest")
    with pytest.raises(ValueError, match=r"impl must be one of \('auto', 'cutlax', 'xla', 'tiled', "
                                         r"'cooperative_128x256_2x1', 'pingpong_128x128_1x1', "
                                         r"'pingpong_64x128_1x1', 'cooperative_128x128_1x1_promoted'\), got 'cublas'"):
        cutlax.gemm(a, a, impl="cublas")
    with pytest.raises(ValueError, match=r"activation must be one of \(None, 'relu', 'gelu'\), got 'swish'"):
        cutlax.gemm(a, a, activation="swish")
    with pytest.raises(ValueError, match=r"cutlax.gemm: precision must be None, a jax.lax.Precision or one of "
                                         r"\('default', 'high', 'highest'\).*got 'max'"):
        cutlax.gemm(a, a, precision="max")


def test_bias_shape_checked(rng):
    a = random(rng, (4, 4))
    with pytest.raises(ValueError, match=r"bias has shape \(3,\); expected \(4,\), N"):
        cutlax.gemm(a, a, bias=random(rng, (3,)))


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
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("m,n,k", [(8192, 8192, 8192), (4096, 4096, 1024), (1000, 4096, 7), (1, 8192, 4096),
                                   (8192, 7, 1000), (4096, 128, 8192), (7, 1000, 128)])
def test_large_shapes_on_the_gpu(rng, m, n, k, dtype):
    with jax.default_device(jax.devices("gpu")[0]):
        a, b, bias = operands(rng, m, n, k, dtype)
        for impl in ("cutlax",) + gemm_module.configs(dtype)[1:]:
            check(cutlax.gemm(a, b, bias=bias, activation="relu", impl=impl), a, b, bias, "relu")
        check_xla(cutlax.gemm(a, b, bias=bias, activation="relu"), a, b, bias, "relu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("m", [1, 7, 16, 64, 128, 256])
def test_decode_rows_on_the_gpu(rng, m, dtype):
    # Few rows, N and K off the tile: the kernels and auto's route.
    with jax.default_device(jax.devices("gpu")[0]):
        a, b, bias = operands(rng, m, 4104, 1000, dtype)
        check(cutlax.gemm(a, b, bias=bias, activation="gelu", impl="cutlax"), a, b, bias, "gelu")
        check_xla(cutlax.gemm(a, b, bias=bias, activation="gelu"), a, b, bias, "gelu")


def test_float32_defaults_to_tf32_only_when_asked_on_the_cpu(rng):
    # The twin's TF32 arithmetic stays reachable (TF32_TF32_F32), and
    # test_gemm_precision.py has the table.
    a, b = random(rng, (16, 32)), random(rng, (32, 8))
    with jax.default_device(jax.devices("cpu")[0]):
        check_f32(cutlax.gemm(a, b, impl="cutlax"), a, b)
        out = cutlax.gemm(a, b, impl="cutlax", precision=TF32_TF32_F32)
        assert bool(jnp.all(jnp.abs(out - jnp.matmul(a, b, precision="highest")) <= tf32_bound(a, b)))
