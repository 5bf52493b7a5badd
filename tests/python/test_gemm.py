import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random, tf32_bound

import cutlax
from cutlax.cli import tuning
from cutlax.ops import gemm as gemm_module


def check_gemm(out, a, b):
    """Against true-FP32 jnp.matmul: relative Frobenius error under 1e-5 (FP32
    accumulation over K), and every element within 1e-4 * sqrt(K) of it."""
    ref = jnp.matmul(a, b, precision="highest")
    assert out.shape == ref.shape and out.dtype == jnp.float32
    err = float(jnp.linalg.norm(out - ref) / max(float(jnp.linalg.norm(ref)), 1e-30))
    assert err < 1e-5, err
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[1]))


@pytest.mark.parametrize(
    "m,n,k",
    # (100, 40, 700): partial row tiles and panels, a partial column tile, and
    # K over several of the CPU twin's depth blocks.
    [(128, 64, 128), (257, 129, 65), (1, 1, 1), (1024, 1024, 1024), (3, 5, 7), (130, 260, 12),
     (100, 40, 700)],
)
@pytest.mark.parametrize("impl,precision", [("tiled", None), ("tiled", "highest"), ("auto", "highest"),
                                            (gemm_module.PROMOTED, "highest")])
def test_matches_matmul_highest(device, rng, m, n, k, impl, precision):
    # FP32 accuracy: the tiled SGEMM (impl="tiled", any precision), or
    # precision="highest", 3xTF32 on the kernel that promotes its partial sums.
    a, b = random(rng, (m, k)), random(rng, (k, n))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, impl=impl, precision=precision)).lower(a, b).as_text()
    if impl == "tiled":
        assert "cutlax_gemm_tiled_v1" in text
    else:
        assert f"config = {gemm_module.CONFIGS.index(gemm_module.PROMOTED)} : i64" in text
        assert "cutlax_gemm_tiled_v1" not in text
    check_gemm(cutlax.gemm(a, b, impl=impl, precision=precision), a, b)


@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("m,n,k", [(128, 64, 128), (257, 129, 65), (1, 1, 1), (3, 5, 7), (100, 40, 700)])
def test_default_precision_is_tf32(device, rng, m, n, k, activation):
    a, b, bias = random(rng, (m, k)), random(rng, (k, n)), random(rng, (n,))
    out = cutlax.gemm(a, b, bias=bias, activation=activation)
    ref = jnp.matmul(a, b, precision="highest") + bias
    ref = {None: ref, "relu": jax.nn.relu(ref), "gelu": jax.nn.gelu(ref)}[activation]
    # gelu's slope is under 1.13.
    assert bool(jnp.all(jnp.abs(out - ref) <= 1.13 * tf32_bound(a, b))), float(jnp.max(jnp.abs(out - ref)))


def gemm_calls(text):
    """The lowered program's gemm calls: (config, transpose, a's type, b's type) each."""
    return re.findall(r"custom_call @cutlax_gemm_v1\(.*config = (\d+) : i64, transpose = (\d) : i64.*"
                      r": \((tensor<[^>]+>), (tensor<[^>]+>)", text)


def test_tf32_reads_b_as_jax_stores_it():
    # TF32 WGMMA reads K-major operands only; the float32 kernel computes
    # c^T = b^T a^T instead (src/ops/gemm_sm90.cuh), so b (K, N) reaches it
    # as stored: one call in the plain form, no copy. The promoted kernel
    # takes b as (N, K): impl= forcing it copies b.
    a, b = jnp.ones((64, 32)), jnp.ones((32, 48))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, activation="relu")).lower(a, b).as_text()
    assert gemm_calls(text) == [("0", "0", "tensor<64x32xf32>", "tensor<32x48xf32>")]
    assert "stablehlo.transpose" not in text
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, impl=gemm_module.PROMOTED)).lower(a, b).as_text()
    promoted = str(gemm_module.CONFIGS.index(gemm_module.PROMOTED))
    assert gemm_calls(text) == [(promoted, "1", "tensor<64x32xf32>", "tensor<48x32xf32>")]


def test_default_precision_drops_mantissa_bits(device, rng):
    # 1 + 2^-12 has a bit TF32 does not keep: the product sees 1; "highest"
    # keeps it.
    a = jnp.full((4, 8), 1 + 2.0**-12, jnp.float32)
    b = jnp.ones((8, 8), jnp.float32)
    np.testing.assert_array_equal(cutlax.gemm(a, b), jnp.full((4, 8), 8.0))
    for precision in ("high", "highest"):
        np.testing.assert_array_equal(cutlax.gemm(a, b, precision=precision), jnp.full((4, 8), 8 * (1 + 2.0**-12)))


def float64_error(out, a, b):
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    return np.abs(np.asarray(out, np.float64) - exact)


@pytest.mark.parametrize("impl", gemm_module.configs(jnp.float32))
@pytest.mark.parametrize("m,n,k", [(64, 48, 1000), (130, 7, 4096)])
def test_high_is_within_float32_accumulation_bound(device, rng, m, n, k, impl):
    # 3xTF32 leaves out only small x small (under 2^-20 of each product) and
    # rounds the cross products' sum to float16 (under 2^-22 of sum |a||b|);
    # the rest is float32 accumulation over K and 2K terms, at most 3K 2^-24
    # of sum |a||b| (the serial-summation bound). That bound is loose enough for
    # plain TF32 too at these K, so the split must also beat TF32 itself: by
    # 10x where the partial sums are promoted (and on the CPU twin); by 4x on
    # the GPU's other kernels, whose tensor cores accumulate all of K with
    # truncation (H200, 130x7x4096: 6.8x, with all three products in one
    # GEMM over 3K, before 8690d00).
    a, b = random(rng, (m, k)), random(rng, (k, n))
    bound = (3 * k * 2.0**-24 + 2.0**-20) * (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))
    high = float64_error(cutlax.gemm(a, b, impl=impl, precision="high"), a, b)
    assert np.all(high <= bound)
    gain = 10 if impl == gemm_module.PROMOTED or device.platform == "cpu" else 4
    assert high.max() < float64_error(cutlax.gemm(a, b, impl=impl, precision="default"), a, b).max() / gain


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(64, 48, 1000), (1024, 1024, 4096)])
def test_precisions_order_by_error_on_the_gpu(rng, m, n, k):
    # The largest error against float64. "high" (3xTF32 on the heuristic's
    # kernel) keeps the tensor cores' truncating accumulation over all of K
    # (H200, as one GEMM over 3K before 8690d00: 38x under default at K =
    # 1000, 6.1x at 4096); "highest" (3xTF32, big x big on the promoted
    # kernel) must be no worse than the tiled SGEMM (FFMA, K summed
    # serially) and within 2x of XLA's "highest" (cuBLAS FFMA;
    # bench/RESULTS.md has the measured errors).
    with jax.default_device(jax.devices("gpu")[0]):
        a, b = random(rng, (m, k)), random(rng, (k, n))
        error = {p: float64_error(cutlax.gemm(a, b, precision=p), a, b).max() for p in ("default", "high", "highest")}
        error["tiled"] = float64_error(cutlax.gemm(a, b, impl="tiled"), a, b).max()
        error["xla highest"] = float64_error(jnp.matmul(a, b, precision="highest"), a, b).max()
    assert error["high"] < error["default"] / 4 and error["highest"] < error["high"] / 10, error
    assert error["highest"] <= error["tiled"] and error["highest"] <= 2 * error["xla highest"], error


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_is_big_times_big_in_tf32_and_the_cross_products_in_float16(precision):
    # Two GEMMs (docs/gemm.md): a_big b_big in float32 with b's big part as
    # (N, K) (transpose 1), on the promoted kernel for "highest"; the cross
    # products as one float16 GEMM over 2K, [a_big | a_small] @ [b_small;
    # b_big], on the heuristic's kernel.
    a, b = jnp.ones((64, 32)), jnp.ones((32, 48))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, precision=precision)).lower(a, b).as_text()
    calls = gemm_calls(text)
    big_config = gemm_module.CONFIGS.index(gemm_module.PROMOTED) if precision == "highest" else 0
    assert sorted(calls) == sorted([(str(big_config), "1", "tensor<64x32xf32>", "tensor<48x32xf32>"),
                                    ("0", "0", "tensor<64x64xf16>", "tensor<64x48xf16>")]), calls


def normalized_error(out, a, b):
    """float64_error over |a| |b|, elementwise."""
    return float64_error(out, a, b) / (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_keeps_rows_and_columns_of_any_magnitude(device, rng, precision):
    # The cross products run in float16, each row of a and column of b scaled
    # by a power of two from its norm (cutlax.ops.gemm._cross_products). Rows
    # and columns from 2^-60 to 2^60 (products from 2^-120 to 2^120) keep
    # 3xTF32's accuracy: unscaled, the small parts of the tiny ones would
    # flush to 0 in float16 and the huge ones overflow, an error of 2^-11 of
    # the product or an infinity. Plain TF32 reads about 2^-12 here; 3xTF32
    # about 2^-22 on the CPU twin, and K/8 truncations of 2^-23 on the GPU's
    # unpromoted kernel ("high").
    m, n, k = 24, 40, 300
    a = np.ldexp(rng.standard_normal((m, k)), rng.integers(-60, 61, (m, 1))).astype(np.float32)
    b = np.ldexp(rng.standard_normal((k, n)), rng.integers(-60, 61, (1, n))).astype(np.float32)
    error = normalized_error(cutlax.gemm(jnp.asarray(a), jnp.asarray(b), precision=precision), a, b)
    assert error.max() < 2.0**-16, error.max()


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_cross_products_cannot_overflow(device, precision):
    # Every small part of 0.1 has the same sign, so nothing cancels: the
    # cross sum adds 2K like terms, each about 2^-12 of a product. Scaled by
    # each row's and column's norm, not its largest entry, that stays under
    # 2^14 for any K (docs/gemm.md); by the largest entry it would pass
    # float16's 65504 here. The bound is the serial-summation one (the CPU
    # twin sums K in order).
    k = 2**16
    a, b = jnp.full((4, k), 0.1, jnp.float32), jnp.full((k, 8), 0.1, jnp.float32)
    out = cutlax.gemm(a, b, precision=precision)
    assert bool(jnp.all(jnp.isfinite(out)))
    assert normalized_error(out, a, b).max() < 3 * k * 2.0**-24 + 2.0**-20


@pytest.mark.skipif(not tuning.available(), reason="needs a tuning build (CUTLAX_GEMM_TUNING=ON)")
def test_every_promotion_interval_gives_fp32_accuracy(device, rng):
    # How often the promoted kernel adds its partial sums, which a tuning
    # build lets bench/gemm_tune.py set (on the GPU every 4, 8 or 16 WGMMAs
    # of K 8; the CPU twin ignores it): "highest" keeps FP32's accuracy at each.
    a, b = random(rng, (130, 2000)), random(rng, (2000, 72))
    for interval in (4, 8, 16):
        with tuning.promotion_interval(interval):
            check_gemm(cutlax.gemm(a, b, precision="highest"), a, b)
    for bad in (3, -4):
        with pytest.raises(ValueError, match=rf"interval must be 0 \(the default, \d+\) or a positive multiple "
                                             rf"of 4, got {bad}"):
            tuning.set_promotion_interval(bad)


@pytest.mark.parametrize("precision", [None, "high", "highest"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_float32_grad(device, rng, precision, activation):
    a, b, bias, w = random(rng, (33, 20)), random(rng, (20, 12)), random(rng, (12,)), random(rng, (33, 12))
    act = {None: lambda z: z, "relu": jax.nn.relu, "gelu": jax.nn.gelu}[activation]
    ours = jax.grad(lambda a, b, bias: (cutlax.gemm(a, b, bias=bias, activation=activation, precision=precision)
                                        * w).sum(), argnums=(0, 1, 2))(a, b, bias)
    want = jax.grad(lambda a, b, bias: (act(jnp.matmul(a, b, precision="highest") + bias) * w).sum(),
                    argnums=(0, 1, 2))(a, b, bias)
    tol = 2e-2 if precision is None else 1e-5
    for name, g, r in zip("a b bias".split(), ours, want):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol, err_msg=name)


def test_k_zero_gives_zeros(device, rng):
    a, b = random(rng, (5, 0)), random(rng, (0, 3))
    np.testing.assert_array_equal(cutlax.gemm(a, b), jnp.zeros((5, 3)))


def test_empty_rows(device, rng):
    assert cutlax.gemm(random(rng, (0, 4)), random(rng, (4, 3))).shape == (0, 3)


def test_bias_and_relu(device, rng):
    a, b, bias = random(rng, (33, 17)), random(rng, (17, 40)), random(rng, (40,))
    ref = jnp.matmul(a, b, precision="highest") + bias
    for impl in ("tiled", "auto"):
        gemm = functools.partial(cutlax.gemm, impl=impl, precision="high" if impl == "auto" else None)
        np.testing.assert_allclose(gemm(a, b, bias=bias), ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gemm(a, b, bias=bias, activation="relu"), jax.nn.relu(ref), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gemm(a, b, activation="relu"), jax.nn.relu(ref - bias), rtol=1e-4, atol=1e-4)


def test_inside_jit_with_other_ops(device, rng):
    a, b = random(rng, (64, 48)), random(rng, (48, 32))
    f = jax.jit(lambda a, b: jnp.tanh(cutlax.gemm(a * 0.5, b, precision="high")).sum())
    np.testing.assert_allclose(f(a, b), jnp.tanh(jnp.matmul(a * 0.5, b, precision="highest")).sum(), rtol=1e-4)


def test_nan_and_inf_propagate(device, rng):
    a, b = random(rng, (4, 3)), random(rng, (3, 5))
    a = a.at[1, 2].set(np.nan).at[2, 0].set(np.inf)
    out, ref = cutlax.gemm(a, b), jnp.matmul(a, b, precision="highest")
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))


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
    with pytest.raises(ValueError, match=r"impl must be one of \('auto', 'tiled', 'cooperative_128x256_2x1', "
                                         r"'pingpong_128x128_1x1', 'pingpong_64x128_1x1', "
                                         r"'cooperative_128x128_1x1_promoted'\), got 'cublas'"):
        cutlax.gemm(a, a, impl="cublas")
    with pytest.raises(ValueError, match=r"activation must be one of \(None, 'relu', 'gelu'\), got 'swish'"):
        cutlax.gemm(a, a, activation="swish")
    with pytest.raises(ValueError, match=r"precision must be one of \(None, 'default', 'high', 'highest'\), got 'max'"):
        cutlax.gemm(a, a, precision="max")


def test_float32_gelu(device, rng):
    a, b, bias = random(rng, (9, 17)), random(rng, (17, 6)), random(rng, (6,))
    ref = jax.nn.gelu(jnp.matmul(a, b, precision="highest") + bias)
    np.testing.assert_allclose(cutlax.gemm(a, b, bias=bias, activation="gelu", precision="highest"), ref,
                               rtol=1e-4, atol=1e-4)


def test_bias_shape_checked(rng):
    a = random(rng, (4, 4))
    with pytest.raises(ValueError, match=r"bias has shape \(3,\); expected \(4,\), N"):
        cutlax.gemm(a, a, bias=random(rng, (3,)))
