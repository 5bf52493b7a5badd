"""cutlax.gemm_plan, the one place that decides what cutlax.gemm runs: the
route rule (impl="auto" takes XLA's product where cutlax's kernels measured
slower; docs/gemm.md, "Routes"), the kernel, configuration and operand form
on cutlax's route, and that cutlax.gemm's program is the plan's."""

import jax
import jax.numpy as jnp
import pytest
from gemm_reference import GEMM_AUX_OP, TF32_TF32_F32, check, gemm_calls, operands

import cutlax
from cutlax.ops import gemm as gemm_module

S = jax.ShapeDtypeStruct
RULE = gemm_module.ROUTE


def plan(m, n, k, dtype=jnp.bfloat16, platform="cuda", **kw):
    return cutlax.gemm_plan(S((m, k), dtype), S((k, n), dtype), platform=platform, **kw)


# The benchmark table (bf16 and f16; M x N x K) and the route auto
# takes: XLA where cutlax measured slower, cutlax on the large squares and
# the MLP projections.
TABLE = {
    (8192, 8192, 8192): ("cutlax", "measured"),
    (4096, 4096, 4096): ("cutlax", "measured"),
    (4096, 4096, 1024): ("xla", "short_k"),
    (8192, 8192, 1024): ("xla", "short_k"),
    (2048, 2048, 2048): ("xla", "small"),
    (8192, 16384, 4096): ("cutlax", "measured"),
    (8192, 4096, 16384): ("cutlax", "measured"),
    (128, 4096, 4096): ("xla", "decode"),
    (64, 8192, 8192): ("xla", "decode"),
    (4000, 4000, 4000): ("xla", "partial_tiles"),
    (4096, 4104, 4096): ("xla", "partial_tiles"),
    (4096, 4096, 4100): ("xla", "unaligned"),
    (16384, 2048, 2048): ("cutlax", "measured"),  # the MLP step's 16384x2048 layers
}


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("shape", list(TABLE), ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_auto_routes_the_benchmark_table(shape, activation, dtype, platform):
    # One rule for every platform, so a CPU test sees the GPU's choice.
    p = plan(*shape, dtype, platform, activation=activation, bias=S((shape[1],), dtype))
    assert (p.route, p.rule) == TABLE[shape]
    if p.route == "cutlax":
        assert p.kernel == ("gemm_aux" if activation == "gelu" else "gemm")
        assert (p.config, p.form, p.copies, p.padding) == ("auto", "none", (), (0, 0, 0))
    else:
        assert p.kernel == "dot_general" and p.config is None


@pytest.mark.parametrize("m", [1, 16, 32, 64, 128, 256])
@pytest.mark.parametrize("n,k", [(4096, 4096), (8192, 8192), (16384, 4096)])
def test_decode_shapes_go_to_xla(m, n, k):
    for dtype, precision in ((jnp.bfloat16, None), (jnp.float16, None), (jnp.float32, None), (jnp.float32, "high"),
                             (jnp.float32, "highest")):
        p = plan(m, n, k, dtype, precision=precision, activation="gelu")
        assert (p.route, p.rule, p.kernel) == ("xla", "decode", "dot_general")


def test_the_thresholds_are_the_rule():
    # Each threshold moves its rule's boundary, one step either side.
    big = 8192
    assert RULE["max_decode_rows"] == 256 and plan(256, big, big).rule == "decode"
    assert plan(384, 2 * big, 2 * big).rule == "measured"
    assert plan(big, big, RULE["max_short_k"]).rule == "short_k"
    assert plan(big, big, RULE["max_short_k"] + 64).rule == "measured"
    # A product just below the volume: 4096 x 4096 x 2048.
    assert plan(4096, 4096, 2048).rule == "small" and 4096 * 4096 * 2048 < RULE["min_volume"]
    assert plan(4096, 4096, 4096).rule == "measured"
    assert plan(big + 8, big, big).rule == "partial_tiles" and plan(big, big + 8, big).rule == "partial_tiles"
    assert plan(0, big, big).rule == "empty" and plan(big, big, 0).rule == "empty"
    assert list(gemm_module.RULES) == ["forced", "empty", "symbolic", "decode", "unaligned", "partial_tiles",
                                       "short_k", "small", "measured"]


def test_float32_3xtf32_runs_on_cutlax_beyond_decode():
    # 3xTF32 measured 2.2-2.8x XLA's "highest": only the decode rule applies.
    for precision in ("high", "highest", jax.lax.DotAlgorithmPreset.TF32_TF32_F32_X3):
        p = plan(1024, 520, 1000, jnp.float32, precision=precision)
        assert (p.route, p.rule) == ("cutlax", "measured")
    p = plan(1024, 520, 1000, jnp.float32)  # TF32: the one-pass rules
    assert (p.route, p.rule) == ("xla", "partial_tiles")
    p = plan(4096, 4096, 4096, jnp.float32, precision="highest")
    assert (p.config, p.form, p.kernel) == (gemm_module.PROMOTED, "b", "gemm")
    p = plan(4096, 4096, 4096, jnp.float32)
    assert (p.arithmetic, p.config, p.form) == ("tf32", "auto", "none")
    assert plan(4096, 4096, 4096, jnp.float32, platform="cpu").kernel == "gemm_tiled"


def test_symbolic_shapes_go_to_xla():
    m, = jax.export.symbolic_shape("m")
    p = cutlax.gemm_plan(S((m, 4096), jnp.bfloat16), S((4096, 4096), jnp.bfloat16))
    assert (p.route, p.rule) == ("xla", "symbolic")


@pytest.mark.parametrize("impl", ["xla", "cutlax", "tiled", "cooperative_128x256_2x1"])
def test_impl_forces_the_route(impl):
    for shape in ((1, 8, 8), (8192, 8192, 8192)):
        p = plan(*shape, jnp.float32, impl=impl)
        assert p.rule == "forced" and p.route == ("xla" if impl == "xla" else "cutlax")
    assert plan(8, 8, 8, jnp.float32, impl="tiled").kernel == "gemm_tiled"
    if impl.startswith("cooperative"):
        assert plan(8, 8, 8, jnp.float32, impl=impl).config == impl


def test_the_plan_pads_and_copies():
    p = plan(100, 13, 7, impl="cutlax")
    assert p.padding == (0, 3, 1) and p.form == "none" and p.copies == ()
    p = plan(8, 8, 8, jnp.float32, impl=gemm_module.PROMOTED)
    assert (p.form, p.config) == ("b", gemm_module.PROMOTED) and p.copies == ("b",)


@pytest.mark.parametrize("shape", [(8, 16, 24), (512, 512, 2048), (300, 256, 1100)], ids=str)
@pytest.mark.parametrize("precision", [None, "highest"])
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_gemm_runs_the_plan(shape, precision, platform):
    # The exported program for the platform holds the plan's kernel and
    # nothing of the other route.
    m, n, k = shape
    a, b = S((m, k), jnp.float32), S((k, n), jnp.float32)
    p = cutlax.gemm_plan(a, b, precision=precision, platform=platform)
    text = cutlax.export.export(jax.jit(lambda a, b: cutlax.gemm(a, b, precision=precision)), a, b,
                                platforms=[platform]).mlir_module()
    if p.route == "xla":
        assert "cutlax_gemm" not in text and "dot_general" in text
    else:
        assert f"cutlax_{p.kernel}_v1" in text


def test_tf32_reads_b_as_jax_stores_it():
    # TF32 WGMMA reads K-major operands only; the float32 kernel computes
    # c^T = b^T a^T instead (src/ops/gemm_sm90.cuh), so b (K, N) reaches it
    # as stored: one call in the plain form, no copy. The promoted kernel
    # takes b as (N, K): impl= forcing it copies b.
    a, b = jnp.ones((64, 32)), jnp.ones((32, 48))
    for precision in (TF32_TF32_F32, None):
        fn = jax.jit(lambda a, b, p=precision: cutlax.gemm(a, b, activation="relu", impl="cutlax", precision=p))
        text = cutlax.export.export(fn, a, b, platforms=["cuda"]).mlir_module()
        assert gemm_calls(text) == [("0", "0", "tensor<64x32xf32>", "tensor<32x48xf32>")]
        assert "stablehlo.transpose" not in text
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, impl=gemm_module.PROMOTED, precision=TF32_TF32_F32)
                   ).lower(a, b).as_text()
    promoted = str(gemm_module.CONFIGS.index(gemm_module.PROMOTED))
    assert gemm_calls(text) == [(promoted, "1", "tensor<64x32xf32>", "tensor<48x32xf32>")]


@pytest.mark.parametrize("precision", ["high", "highest"])
def test_3xtf32_is_big_times_big_in_tf32_and_the_cross_products_in_float16(precision):
    # Two GEMMs (docs/gemm.md): a_big b_big in float32 with b's big part as
    # (N, K) (transpose 1), on the promoted kernel for "highest"; the cross
    # products as one float16 GEMM over 2K, [a_big | a_small] @ [b_small;
    # b_big], on the heuristic's kernel.
    a, b = jnp.ones((64, 32)), jnp.ones((32, 48))
    text = jax.jit(lambda a, b: cutlax.gemm(a, b, precision=precision, impl="cutlax")).lower(a, b).as_text()
    calls = gemm_calls(text)
    big_config = gemm_module.CONFIGS.index(gemm_module.PROMOTED) if precision == "highest" else 0
    assert sorted(calls) == sorted([(str(big_config), "1", "tensor<64x32xf32>", "tensor<48x32xf32>"),
                                    ("0", "0", "tensor<64x64xf16>", "tensor<64x48xf16>")]), calls


def test_grad_runs_the_backward_on_cutlax_kernels(rng):
    a, b, bias = operands(rng, 64, 64, 64, jnp.bfloat16)
    grad = jax.jit(jax.grad(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu", impl="cutlax")
                            .astype(jnp.float32).sum(), argnums=(0, 1, 2)))
    text = grad.lower(a, b, bias).as_text()
    assert text.count("cutlax_gemm_v1") == 3  # forward, da, db
    assert "cutlax_bias_relu_backward_v1" in text  # the mask and dbias in one sweep
    assert "dot_general" not in text
    assert "transpose" not in text.replace("transpose = ", "")  # the kernels read the arrays as stored


def test_grad_on_the_xla_route_is_xlas(rng):
    a, b, bias = operands(rng, 64, 64, 64, jnp.bfloat16)
    text = jax.jit(jax.grad(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="relu")
                            .astype(jnp.float32).sum(), argnums=(0, 1, 2))).lower(a, b, bias).as_text()
    assert "cutlax_" not in text and text.count("dot_general") == 3


def test_gelu_writes_the_pre_activation_for_its_backward(rng):
    a, b, bias = operands(rng, 16, 16, 16, jnp.bfloat16)
    forward = jax.jit(lambda a, b, bias: cutlax.gemm(a, b, bias=bias, activation="gelu", impl="cutlax"))
    assert "cutlax_gemm_aux_v1" in forward.lower(a, b, bias).as_text()
    z, c = GEMM_AUX_OP(a, b, bias, activation=2, config=0, transpose=0)[::-1]
    check(z, a, b, bias, None)
    check(c, a, b, bias, "gelu")


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


def test_the_facts_come_from_the_extension():
    # Configuration names, the promoted one, forms, activations and the row
    # rule are the C++ side's (build_info), not repeated here.
    info = cutlax._cutlax.build_info()
    assert gemm_module.CONFIGS == tuple(info["gemm_configs"]) and gemm_module.PROMOTED == info["gemm_promoted_config"]
    assert gemm_module.TRANSPOSES == tuple(info["gemm_transposes"])
    assert gemm_module.ACTIVATIONS == (None, "relu", "gelu") and info["gemm_activations"][0] == "none"
    assert gemm_module.facts.ROW_BYTES == info["gemm_row_bytes"] == 16


def test_plan_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"cutlax.gemm_plan: platform must be 'cpu', 'cuda' or 'gpu', got 'tpu'"):
        plan(8, 8, 8, platform="tpu")
    with pytest.raises(TypeError, match=r"cutlax.gemm: b has dtype float16; expected one of: bfloat16"):
        cutlax.gemm_plan(S((8, 8), jnp.bfloat16), S((8, 8), jnp.float16))
