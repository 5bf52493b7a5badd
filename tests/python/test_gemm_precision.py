"""precision= as JAX spells it, per backend (docs/gemm.md, "Precision"):
float32 at the default precision is TF32 on a GPU and FP32 on the CPU (as
XLA's), "high" 3xTF32, "highest" 3xTF32 with FP32's accuracy; presets where
cutlax has a kernel; the CPU twin keeps TF32 for TF32_TF32_F32."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import DEVICES, random, tf32_bound
from jax.test_util import check_grads
from gemm_reference import TF32_TF32_F32, check_f32, float64_error, gemm_calls, normalized_error

import cutlax
from cutlax.cli import tuning
from cutlax.ops import gemm as gemm_module
from cutlax.ops.gemm import precision as precisions

Preset, Precision = jax.lax.DotAlgorithmPreset, jax.lax.Precision

# The documented table (docs/gemm.md): float32 precision -> arithmetic on (CPU, GPU).
TABLE = {
    None: ("fp32", "tf32"),
    "default": ("fp32", "tf32"),
    Precision.DEFAULT: ("fp32", "tf32"),
    Preset.DEFAULT: ("fp32", "tf32"),
    "high": ("3xtf32", "3xtf32"),
    Precision.HIGH: ("3xtf32", "3xtf32"),
    "highest": ("3xtf32_promoted", "3xtf32_promoted"),
    Precision.HIGHEST: ("3xtf32_promoted", "3xtf32_promoted"),
    ("default", "highest"): ("3xtf32_promoted", "3xtf32_promoted"),
    Preset.TF32_TF32_F32: ("tf32", "tf32"),
    Preset.TF32_TF32_F32_X3: ("3xtf32", "3xtf32"),
    Preset.F32_F32_F32: ("fp32", "3xtf32_promoted"),
}


@pytest.mark.parametrize("precision", list(TABLE), ids=str)
def test_the_precision_table(precision):
    a = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    for platform, arithmetic in zip(("cpu", "cuda"), TABLE[precision]):
        assert cutlax.gemm_plan(a, a, precision=precision, platform=platform).arithmetic == arithmetic
    # 16-bit operands: one arithmetic whatever the name.
    h = jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16)
    if not isinstance(precision, Preset) or precision == Preset.DEFAULT:
        assert cutlax.gemm_plan(h, h, precision=precision).arithmetic == "16-bit"


@pytest.mark.parametrize("impl", ["auto", "cutlax", "xla", "tiled"])
@pytest.mark.parametrize("m,n,k", [(33, 20, 12), (300, 256, 1100)])
def test_float32_default_on_the_cpu_is_a_at_b(rng, impl, m, n, k):
    # XLA:CPU's default is FP32, and so is cutlax.gemm's there, on every route.
    a, b = random(rng, (m, k)), random(rng, (k, n))
    with jax.default_device(jax.devices("cpu")[0]):
        out = cutlax.gemm(a, b, impl=impl)
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5 * np.sqrt(k))
        check_f32(out, a, b)


@pytest.mark.parametrize("impl", ["auto", "cutlax"])
def test_float32_default_check_grads_on_the_cpu(rng, impl):
    a, b, bias = random(rng, (9, 7)), random(rng, (7, 5)), random(rng, (5,))
    with jax.default_device(jax.devices("cpu")[0]):
        check_grads(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu", impl=impl),
                                  (a, b, bias), order=1, modes=["rev"], atol=1e-2, rtol=1e-2)


def test_an_export_for_both_platforms_keeps_each_ones_default(rng):
    # One lowering per platform (jax.lax.platform_dependent): TF32 on the
    # Hopper op for cuda, the FP32 SGEMM for cpu; run here, the cpu branch.
    a, b = random(rng, (8, 16)), random(rng, (16, 24))
    exported = cutlax.export.export(jax.jit(lambda a, b: cutlax.gemm(a, b, impl="cutlax")),
                                    jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, b.dtype),
                                    platforms=["cpu", "cuda"])
    text = exported.mlir_module()
    assert "cutlax_gemm_tiled_v1" in text and "cutlax_gemm_v1" in text
    out = jax.export.deserialize(exported.serialize()).call(a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    cuda = cutlax.export.export(jax.jit(lambda a, b: cutlax.gemm(a, b, impl="cutlax")),
                                jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, b.dtype),
                                platforms=["cuda"]).mlir_module()
    assert gemm_calls(cuda) == [("0", "0", "tensor<8x16xf32>", "tensor<16x24xf32>")]
    assert "cutlax_gemm_tiled_v1" not in cuda


@pytest.mark.parametrize(
    "m,n,k",
    # (100, 40, 700): partial row tiles and panels, a partial column tile, and
    # K over several of the CPU twin's depth blocks.
    [(128, 64, 128), (257, 129, 65), (1, 1, 1), (1024, 1024, 1024), (3, 5, 7), (130, 260, 12),
     (100, 40, 700)],
)
@pytest.mark.parametrize("impl,precision", [("tiled", None), ("tiled", "highest"), ("auto", "highest"),
                                            (gemm_module.PROMOTED, "highest"), ("cutlax", "highest"),
                                            ("cutlax", Preset.F32_F32_F32)], ids=str)
def test_matches_matmul_highest(device, rng, m, n, k, impl, precision):
    # FP32 accuracy: the tiled SGEMM (impl="tiled", any precision), or
    # precision="highest", 3xTF32 on the kernel that promotes its partial
    # sums (or XLA's "highest" where auto's route is XLA's).
    a, b = random(rng, (m, k)), random(rng, (k, n))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, impl=impl, precision=precision)).lower(a, b).as_text()
    plan = cutlax.gemm_plan(a, b, impl=impl, precision=precision, platform=device.platform)
    if plan.kernel == "gemm_tiled":
        assert "cutlax_gemm_tiled_v1" in text
    elif plan.route == "cutlax":
        assert f"config = {gemm_module.CONFIGS.index(gemm_module.PROMOTED)} : i64" in text
        assert "cutlax_gemm_tiled_v1" not in text
    else:
        assert "cutlax_gemm" not in text and "HIGHEST" in text
    check_f32(cutlax.gemm(a, b, impl=impl, precision=precision), a, b)


@pytest.mark.parametrize("impl", ["auto", "cutlax"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("m,n,k", [(128, 64, 128), (257, 129, 65), (1, 1, 1), (3, 5, 7), (100, 40, 700)])
def test_default_precision_is_tf32(device, rng, m, n, k, activation, impl):
    # TF32: the default on a GPU, TF32_TF32_F32 on both platforms.
    a, b, bias = random(rng, (m, k)), random(rng, (k, n)), random(rng, (n,))
    precision = TF32_TF32_F32 if device.platform == "cpu" else None
    out = cutlax.gemm(a, b, bias=bias, activation=activation, precision=precision, impl=impl)
    ref = jnp.matmul(a, b, precision="highest") + bias
    ref = {None: ref, "relu": jax.nn.relu(ref), "gelu": jax.nn.gelu(ref)}[activation]
    # gelu's slope is under 1.13.
    assert bool(jnp.all(jnp.abs(out - ref) <= 1.13 * tf32_bound(a, b))), float(jnp.max(jnp.abs(out - ref)))


@pytest.mark.parametrize("impl", ["auto", "cutlax"])
def test_default_precision_drops_mantissa_bits(device, rng, impl):
    # 1 + 2^-12 has a bit TF32 does not keep: TF32 sees 1; "high",
    # "highest" and FP32 keep it. float32's default is TF32 on the GPU only.
    a = jnp.full((4, 8), 1 + 2.0**-12, jnp.float32)
    b = jnp.ones((8, 8), jnp.float32)
    tf32_default = device.platform != "cpu"
    np.testing.assert_array_equal(cutlax.gemm(a, b, precision=TF32_TF32_F32, impl=impl), jnp.full((4, 8), 8.0))
    kept = jnp.full((4, 8), 8 * (1 + 2.0**-12))
    np.testing.assert_array_equal(cutlax.gemm(a, b, impl=impl), jnp.full((4, 8), 8.0) if tf32_default else kept)
    for precision in ("high", "highest", Preset.TF32_TF32_F32_X3, Preset.F32_F32_F32):
        np.testing.assert_array_equal(cutlax.gemm(a, b, precision=precision, impl=impl), kept)


@pytest.mark.parametrize("impl", ("cutlax",) + gemm_module.configs(jnp.float32))
@pytest.mark.parametrize("m,n,k", [(64, 48, 1000), (130, 7, 4096)])
def test_high_is_within_float32_accumulation_bound(device, rng, m, n, k, impl):
    # 3xTF32 leaves out only small x small (under 2^-20 of each product) and
    # rounds the cross products' sum to float16 (under 2^-22 of sum |a||b|);
    # the rest is float32 accumulation over K and 2K terms, at most 3K 2^-24
    # of sum |a||b| (the serial-summation bound). That bound is loose enough for
    # plain TF32 too at these K, so the split must also beat TF32 itself: by
    # 10x where the partial sums are promoted (and on the CPU twin); by 4x on
    # the GPU's other kernels, whose tensor cores accumulate all of K with
    # truncation (bench/RESULTS.md).
    a, b = random(rng, (m, k)), random(rng, (k, n))
    bound = (3 * k * 2.0**-24 + 2.0**-20) * (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))
    high = float64_error(cutlax.gemm(a, b, impl=impl, precision="high"), a, b)
    assert np.all(high <= bound)
    gain = 10 if impl == gemm_module.PROMOTED or device.platform == "cpu" else 4
    tf32 = float64_error(cutlax.gemm(a, b, impl=impl, precision=TF32_TF32_F32), a, b)
    assert high.max() < tf32.max() / gain


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(64, 48, 1000), (1024, 1024, 4096)])
def test_precisions_order_by_error_on_the_gpu(rng, m, n, k):
    # The largest error against float64 on cutlax's kernels. "high" (3xTF32
    # on the heuristic's kernel) keeps the tensor cores' truncating
    # accumulation over all of K; "highest" (3xTF32, big x big on the
    # promoted kernel) must be no worse than the tiled SGEMM (FFMA, K summed
    # serially) and within 2x of XLA's "highest" (cuBLAS FFMA;
    # bench/RESULTS.md has the measured errors).
    with jax.default_device(jax.devices("gpu")[0]):
        a, b = random(rng, (m, k)), random(rng, (k, n))
        error = {p: float64_error(cutlax.gemm(a, b, precision=p, impl="cutlax"), a, b).max()
                 for p in ("default", "high", "highest")}
        error["tiled"] = float64_error(cutlax.gemm(a, b, impl="tiled"), a, b).max()
        error["xla highest"] = float64_error(jnp.matmul(a, b, precision="highest"), a, b).max()
    assert error["high"] < error["default"] / 4 and error["highest"] < error["high"] / 10, error
    assert error["highest"] <= error["tiled"] and error["highest"] <= 2 * error["xla highest"], error


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_keeps_rows_and_columns_of_any_magnitude(device, rng, precision):
    # The cross products run in float16, each row of a and column of b scaled
    # by a power of two from its norm (cutlax.ops.gemm.tf32.cross_products). Rows
    # and columns from 2^-60 to 2^60 (products from 2^-120 to 2^120) keep
    # 3xTF32's accuracy: unscaled, the small parts of the tiny ones would
    # flush to 0 in float16 and the huge ones overflow, an error of 2^-11 of
    # the product or an infinity. Plain TF32 reads about 2^-12 here; 3xTF32
    # about 2^-22 on the CPU twin, and K/8 truncations of 2^-23 on the GPU's
    # unpromoted kernel ("high").
    m, n, k = 24, 40, 300
    a = np.ldexp(rng.standard_normal((m, k)), rng.integers(-60, 61, (m, 1))).astype(np.float32)
    b = np.ldexp(rng.standard_normal((k, n)), rng.integers(-60, 61, (1, n))).astype(np.float32)
    error = normalized_error(cutlax.gemm(jnp.asarray(a), jnp.asarray(b), precision=precision, impl="cutlax"), a, b)
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
    out = cutlax.gemm(a, b, precision=precision, impl="cutlax")
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
            check_f32(cutlax.gemm(a, b, precision="highest", impl="cutlax"), a, b)
    for bad in (3, -4):
        with pytest.raises(ValueError, match=rf"interval must be 0 \(the default, \d+\) or a positive multiple "
                                             rf"of 4, got {bad}"):
            tuning.set_promotion_interval(bad)


@pytest.mark.parametrize("dtype,preset", [(jnp.bfloat16, Preset.BF16_BF16_F32), (jnp.float16, Preset.F16_F16_F32)],
                         ids=str)
def test_16_bit_presets_name_the_kernels_arithmetic(rng, dtype, preset):
    a = random(rng, (8, 8), dtype)
    np.testing.assert_array_equal(cutlax.gemm(a, a, precision=preset, impl="cutlax"), cutlax.gemm(a, a, impl="cutlax"))
    with pytest.raises(ValueError, match=rf"cutlax.gemm: precision must be .*; TF32_TF32_F32 has no cutlax kernel "
                                         rf"for {jnp.dtype(dtype).name}"):
        cutlax.gemm(a, a, precision=Preset.TF32_TF32_F32)


@pytest.mark.parametrize("preset", [Preset.BF16_BF16_F32_X3, Preset.F64_F64_F64, Preset.BF16_BF16_F32,
                                    Preset.ANY_F8_ANY_F8_F32], ids=str)
def test_presets_without_a_kernel_are_refused_naming_the_supported_ones(rng, preset):
    a = random(rng, (8, 8))
    with pytest.raises(ValueError, match=rf"cutlax.gemm: precision must be .*TF32_TF32_F32, TF32_TF32_F32_X3, "
                                         rf"F32_F32_F32\); {preset.name} has no cutlax kernel for float32"):
        jax.jit(lambda a: cutlax.gemm(a, a, precision=preset))(a)
    with pytest.raises(ValueError, match="precision must be"):
        cutlax.gemm_plan(a, a, precision=preset)


@pytest.mark.parametrize("bad", ["max", 3, ("high", Preset.F32_F32_F32), jnp.float32], ids=str)
def test_bad_precisions_raise_at_trace_time(rng, bad):
    a = random(rng, (8, 8))
    with pytest.raises(ValueError, match=r"^cutlax.gemm: precision must be None, a jax.lax.Precision"):
        jax.jit(lambda a: cutlax.gemm(a, a, precision=bad))(a)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.platform)
def test_the_xla_route_takes_tf32_presets_on_every_platform(rng, dev):
    # XLA:CPU has no TF32 presets: on XLA's route TF32_TF32_F32 reads the
    # operands cut to TF32 there (as the twin does), TF32_TF32_F32_X3 is FP32.
    a, b = random(rng, (16, 64)), random(rng, (64, 8))
    with jax.default_device(dev):
        twin = cutlax.gemm(a, b, precision=TF32_TF32_F32, impl="cutlax")
        xla = cutlax.gemm(a, b, precision=TF32_TF32_F32, impl="xla")
        assert bool(jnp.all(jnp.abs(xla - jnp.matmul(a, b, precision="highest")) <= tf32_bound(a, b)))
        if dev.platform == "cpu":
            np.testing.assert_allclose(xla, twin, rtol=1e-6, atol=1e-6)
        check_f32(cutlax.gemm(a, b, precision=Preset.TF32_TF32_F32_X3, impl="xla"), a, b)
    assert precisions.xla(jnp.float32, TF32_TF32_F32, "cuda") == (TF32_TF32_F32, False)
