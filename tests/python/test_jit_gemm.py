"""The jit GEMM example (examples/jit_gemm): a Hopper TMA + WGMMA GEMM with
user epilogues, as a cutlax.jit kernel.

Without a GPU: argument errors (named), the CPU path (the epilogue's
jax.numpy reference) against an independent f32 computation, grad, vmap,
shard_map and a symbolic-M export run on CPU, and that every schedule's
kernel compiles for sm_90a through NVRTC (when NVRTC is there). With a
Hopper GPU: each epilogue and schedule against an f32-accumulated reference
over sizes that are and are not multiples of the tiles (tiny ones, and
ones with many tiles per CTA), f16, grad, vmap, and a symbolic export run
at two sizes in a fresh process.

Tolerances (GPU): the relative error by norm, ||c - ref|| / ||ref||, at most
1e-2 for bf16 and 2e-3 for f16 outputs (one rounding of the output is about
2^-9 and 2^-12 of each element), and no element off by more than 2^-6
(bf16) or 2^-9 (f16) of the largest |ref|; the reference is the f32 product
and epilogue before rounding. Compiles dominate the time (one NVRTC compile
per epilogue, dtype and schedule, ~10-25 s each on a busy 2-core machine),
so the CPU tests share a few kernels.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "jit_gemm"
sys.path.insert(0, str(EXAMPLE))
import jit_gemm  # noqa: E402

from conftest import HAVE_NVRTC, needs_nvrtc  # noqa: E402


def _hopper() -> bool:
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        return False
    return bool(gpus) and str(getattr(gpus[0], "compute_capability", "9.0")).startswith("9")


HAVE_HOPPER = _hopper()
needs_hopper = pytest.mark.skipif(not (HAVE_HOPPER and HAVE_NVRTC),
                                  reason="needs a Hopper GPU (sm_90a) and NVRTC")

PLAIN, SWIGLU, DEQUANT = jit_gemm.PLAIN, jit_gemm.SWIGLU, jit_gemm.DEQUANT_RESIDUAL


def operands(rng, m, n, k, dtype=jnp.bfloat16, epilogue=PLAIN, extra_dtype=None):
    """a (M, K) scaled so that a @ b is about N(0, 1), b (K, N), and the
    epilogue's extras (col (N,), row (M,), matrix (M, N)), fresh each call."""
    a = jnp.asarray(rng.standard_normal((m, k)) / np.sqrt(max(k, 1)), dtype)
    b = jnp.asarray(rng.standard_normal((k, n)), dtype)
    shapes = {"col": (n,), "row": (m,), "matrix": (m, n)}
    extras = [jnp.asarray(rng.standard_normal(shapes[kind]), extra_dtype or dtype) for _, kind in epilogue.operands]
    return a, b, extras


def reference_f32(epilogue, a, b, extras):
    """The f32 product (numpy, f32 accumulation) and the epilogue in f32 on
    the CPU, before any rounding: independent of the op's own cpu= path."""
    acc = np.asarray(a, np.float32) @ np.asarray(b, np.float32)
    with jax.default_device(jax.devices("cpu")[0]):
        ex = [jnp.asarray(np.asarray(x, np.float32)) for x in extras]
        return np.asarray(epilogue.apply(jnp.asarray(acc), ex), np.float32)


def assert_close(got, want, dtype):
    got = np.asarray(got, np.float32)
    assert got.shape == want.shape
    assert np.isfinite(got).all(), "non-finite results (unwritten output?)"
    norm_tol, max_tol = (1e-2, 2.0**-6) if jnp.dtype(dtype) == jnp.bfloat16 else (2e-3, 2.0**-9)
    scale = max(float(np.abs(want).max()), 1e-6)
    rel = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
    worst = float(np.abs(got - want).max()) / scale
    assert rel <= norm_tol and worst <= max_tol, f"relative error by norm {rel:.3g}, worst element {worst:.3g} of max"


def call(epilogue, a, b, extras, schedule="auto"):
    return jax.jit(lambda a, b, *ex: jit_gemm.matmul(a, b, *ex, epilogue=epilogue, schedule=schedule))(a, b, *extras)


# Errors: named, at trace time, before anything compiles ----------------------


def spec(shape, dtype=jnp.bfloat16):
    return jax.ShapeDtypeStruct(shape, dtype)


@pytest.mark.parametrize("args, kind, pattern", [
    ((spec((16, 64), jnp.float32), spec((64, 32), jnp.float32)), TypeError, r"a has dtype float32"),
    ((spec((16, 64)), spec((64, 32), jnp.float16)), TypeError, r"a and b must have one dtype"),
    ((spec((2, 16, 64)), spec((64, 32))), ValueError, r"a must have rank 2"),
    ((spec((16, 64)), spec((64,))), ValueError, r"b must have rank 2"),
    ((spec((16, 64)), spec((72, 32))), ValueError, r"a's columns \(K = 64\) must equal b's rows \(72\)"),
    ((spec((16, 60)), spec((60, 32))), ValueError, r"K = 60 .* multiple of 8"),
    ((spec((16, 64)), spec((64, 30))), ValueError, r"N = 30 .* multiple of 8"),
])
def test_bad_operands_are_named(args, kind, pattern):
    with pytest.raises(kind, match=pattern):
        jax.eval_shape(jit_gemm.matmul, *args)


def test_bad_extras_are_named():
    a, b = spec((16, 64)), spec((64, 32))
    with pytest.raises(TypeError, match=r"epilogue silu_gate takes 2 extra operands \(bias, gate\), got 1"):
        jax.eval_shape(lambda a, b, x: jit_gemm.matmul(a, b, x, epilogue=SWIGLU), a, b, spec((32,)))
    with pytest.raises(ValueError, match=r"gate \(a matrix operand of epilogue silu_gate\) must have shape "
                                         r"\(16, 32\), got \(32, 16\)"):
        jax.eval_shape(lambda *x: jit_gemm.matmul(*x, epilogue=SWIGLU), a, b, spec((32,)), spec((32, 16)))
    with pytest.raises(ValueError, match=r"row_scale \(a row operand .*\) must have shape \(16,\), got \(32,\)"):
        jax.eval_shape(lambda *x: jit_gemm.matmul(*x, epilogue=DEQUANT), a, b, spec((32,)), spec((32,)),
                       spec((16, 32)))
    with pytest.raises(TypeError, match=r"bias has dtype int32"):
        jax.eval_shape(lambda *x: jit_gemm.matmul(*x, epilogue=SWIGLU), a, b, spec((32,), jnp.int32),
                       spec((16, 32)))
    with pytest.raises(TypeError, match=r"extra operands"):
        jax.eval_shape(lambda a, b, x: jit_gemm.matmul(a, b, x), a, b, spec((32,)))
    with pytest.raises(ValueError, match=r"schedule must be 'auto' or one of cooperative, pingpong"):
        jax.eval_shape(lambda a, b: jit_gemm.matmul(a, b, schedule="fast"), a, b)


def test_bad_epilogues_are_refused():
    with pytest.raises(ValueError, match=r"name must be a C\+\+ identifier"):
        jit_gemm.Epilogue("my epilogue", "return acc;")
    with pytest.raises(ValueError, match=r"kind 'column'; kinds are col, row, matrix"):
        jit_gemm.Epilogue("e", "return acc;", (("bias", "column"),))
    with pytest.raises(ValueError, match=r"operand name 'acc' must be a new C\+\+ identifier"):
        jit_gemm.Epilogue("e", "return acc;", (("acc", "col"),))
    with pytest.raises(ValueError, match=r"cpp must be the body"):
        jit_gemm.Epilogue("e", "  ")


def test_generated_source_declares_the_operands():
    source = SWIGLU.source()
    assert "CUTE_DEVICE float silu_gate(float acc, int64_t m, int64_t n, float bias, float gate)" in source
    assert "jit_gemm::col_pair(bias, n)" in source and "jit_gemm::matrix_pair(gate, m, n)" in source
    entry = SWIGLU.entry(jnp.bfloat16, ("float32", "bfloat16"), jit_gemm.SCHEDULES["pingpong"])
    assert entry == "gemm_silu_gate<cutlass::bfloat16_t, 128, 6, 0, 198656, float, cutlass::bfloat16_t>"


def test_schedule_heuristic():
    assert jit_gemm.choose_schedule(8192, 8192, 8192) == "cooperative"
    assert jit_gemm.choose_schedule(4096, 4096, 4096) == "pingpong"
    assert jit_gemm.choose_schedule(4096, 4096, 1024) == "pingpong"
    assert jit_gemm.choose_schedule(128, 4096, 8192) == "pingpong"  # 16 tiles: too few for 132 SMs
    assert jit_gemm.choose_schedule(jax.export.symbolic_shape("m")[0], 4096, 8192) == "cooperative"


def test_empty_products_need_no_kernel():
    a, b = jnp.ones((0, 64), jnp.bfloat16), jnp.ones((64, 32), jnp.bfloat16)
    assert jit_gemm.matmul(a, b).shape == (0, 32)
    a, b = jnp.ones((5, 0), jnp.bfloat16), jnp.ones((0, 32), jnp.bfloat16)
    bias, gate = jnp.ones((32,), jnp.bfloat16), jnp.ones((5, 32), jnp.bfloat16)
    out = jit_gemm.matmul(a, b, bias, gate, epilogue=SWIGLU)  # K = 0: the epilogue of zeros
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(jax.nn.silu(1.0), np.float32), rtol=1e-2)


def test_layout_facts_on_the_host(tmp_path):
    """examples/jit_gemm/layout_check.cpp, CuTe on the CPU: accumulator pairs
    and coverage, and the shared-memory layouts against TMA's 128-byte
    swizzle (what the kernel's stores and TMA boxes rely on)."""
    import shutil
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    cuda = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    if not (cuda / "vector_types.h").exists():
        pytest.skip("needs CUDA's headers")
    try:
        includes = list(cutlax.jit.include_dirs()) + [str(cuda), str(cuda / "cccl")]
    except RuntimeError as e:  # no CUTLASS headers
        pytest.skip(str(e))
    exe = tmp_path / "layout_check"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", *(f"-I{d}" for d in includes),
                            str(EXAMPLE / "layout_check.cpp"), "-o", str(exe)], capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stdout


# On CPU: the jax.numpy version, through the op (tracing compiles the kernel) --


@needs_nvrtc
@pytest.mark.parametrize("epilogue", [PLAIN, SWIGLU, DEQUANT], ids=lambda e: e.name)
def test_cpu_path_matches_f32(rng, epilogue):
    with jax.default_device(jax.devices("cpu")[0]):
        a, b, extras = operands(rng, 37, 72, 200, epilogue=epilogue)
        got = call(epilogue, a, b, extras)
        assert got.dtype == jnp.bfloat16 and got.shape == (37, 72)
        assert_close(got, reference_f32(epilogue, a, b, extras), jnp.bfloat16)


@needs_nvrtc
def test_every_schedule_compiles_for_sm90a():
    """NVRTC builds the kernels a GPU would run (sm_90a CUBINs), without one:
    both schedules, f16, and extras of another dtype than the product's."""
    if not cutlax.jit.arch().startswith("sm_90"):
        pytest.skip(f"the kernels need sm_90a; cutlax.jit.arch() is {cutlax.jit.arch()}")
    for epilogue, dtype, extras, schedule in [
            (PLAIN, "bfloat16", (), "pingpong"), (PLAIN, "bfloat16", (), "cooperative"),
            (SWIGLU, "float16", ("float32", "float16"), "pingpong"),
            (DEQUANT, "bfloat16", ("float32", "float32", "bfloat16"), "cooperative")]:
        cubin, lowered = jit_gemm.kernel(epilogue, dtype, extras, schedule).compiled()
        assert len(cubin) > 1000 and lowered.startswith(f"_Z{len('gemm_' + epilogue.name)}gemm_{epilogue.name}")


@needs_nvrtc
def test_a_compile_error_in_an_epilogue_names_its_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLAX_CACHE_DIR", str(tmp_path))
    bad = jit_gemm.Epilogue("typo", "float z = acc;\nreturn sigmoid(z) * undeclared;", (),
                            lambda acc: acc)
    with pytest.raises(cutlax.jit.CompileError) as info:
        jit_gemm.kernel(bad, "bfloat16", (), "pingpong").compiled()
    assert "epilogue typo(2)" in info.value.log and "undeclared" in info.value.log


@needs_nvrtc
def test_a_user_epilogue_on_cpu(rng):
    scaled_relu = jit_gemm.Epilogue("scaled_relu", "return relu(acc) * scale;", (("scale", "row"),),
                                    lambda acc, scale: jax.nn.relu(acc) * scale)
    with jax.default_device(jax.devices("cpu")[0]):
        a, b, extras = operands(rng, 20, 16, 24, epilogue=scaled_relu, extra_dtype=jnp.float32)
        got = call(scaled_relu, a, b, extras)
        assert_close(got, reference_f32(scaled_relu, a, b, extras), jnp.bfloat16)


def _loss(epilogue):
    def loss(a, b, *extras):
        return (jit_gemm.matmul(a, b, *extras, epilogue=epilogue).astype(jnp.float32) ** 2).sum()
    return loss


def _reference_loss(epilogue):
    def loss(a, b, *extras):
        acc = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32))
        return (epilogue.apply(acc, extras) ** 2).sum()
    return loss


def check_grad(rng, epilogue, m, n, k):
    a, b, extras = operands(rng, m, n, k, epilogue=epilogue)
    args = (a, b, *extras)
    argnums = tuple(range(len(args)))
    got = jax.jit(jax.grad(_loss(epilogue), argnums=argnums))(*args)
    want = jax.grad(_reference_loss(epilogue), argnums=argnums)(*[x.astype(jnp.float32) for x in args])
    for g, w, x in zip(got, want, args):
        assert g.shape == x.shape and g.dtype == x.dtype
        g, w = np.asarray(g, np.float32), np.asarray(w, np.float32)
        assert np.linalg.norm(g - w) <= 3e-2 * np.linalg.norm(w), (epilogue.name, x.shape)


@needs_nvrtc
@pytest.mark.parametrize("epilogue", [PLAIN, SWIGLU], ids=lambda e: e.name)
def test_grad_on_cpu(rng, epilogue):
    with jax.default_device(jax.devices("cpu")[0]):
        check_grad(rng, epilogue, 24, 40, 32)


@needs_nvrtc
def test_vmap_on_cpu(rng):
    with jax.default_device(jax.devices("cpu")[0]):
        a, b, (bias, _) = operands(rng, 20, 16, 24, epilogue=SWIGLU)
        a3 = jnp.stack([a, 2 * a, -a])
        gates = jnp.asarray(rng.standard_normal((3, 20, 16)), jnp.bfloat16)
        # a and the matrix operand batched: folded into M, one call
        got = jax.jit(jax.vmap(lambda a, g: jit_gemm.matmul(a, b, bias, g, epilogue=SWIGLU)))(a3, gates)
        for i in range(3):
            assert_close(got[i], reference_f32(SWIGLU, a3[i], b, [bias, gates[i]]), jnp.bfloat16)
        # b batched: one call per element
        b3 = jnp.stack([b, -b])
        got = jax.jit(jax.vmap(lambda b: jit_gemm.matmul(a, b)))(b3)
        for i in range(2):
            assert_close(got[i], reference_f32(PLAIN, a, b3[i], []), jnp.bfloat16)


@needs_nvrtc
def test_shard_map_on_cpu(rng):
    """a's rows (and the gate's) split over the CPU devices, b and bias whole."""
    devices = jax.devices("cpu")
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    P = jax.sharding.PartitionSpec
    m = 8 * len(devices)
    with jax.default_device(devices[0]):
        a, b, (bias, gate) = operands(rng, m, 24, 16, epilogue=SWIGLU)
    fn = jax.jit(jax.shard_map(lambda a, b, bias, gate: jit_gemm.matmul(a, b, bias, gate, epilogue=SWIGLU),
                               mesh=mesh, in_specs=(P("d"), P(), P(), P("d")), out_specs=P("d")))
    assert_close(fn(a, b, bias, gate), reference_f32(SWIGLU, a, b, [bias, gate]), jnp.bfloat16)


def _export_dequant(platforms):
    m = jax.export.symbolic_shape("m")[0]
    f32, bf16 = jnp.float32, jnp.bfloat16
    specs = [spec((m, 64)), spec((64, 48)), spec((m,), f32), spec((48,), f32), spec((m, 48), bf16)]
    return cutlax.export.export(lambda *x: jit_gemm.matmul(*x, epilogue=DEQUANT), *specs, platforms=platforms)


@needs_nvrtc
def test_symbolic_export_runs_on_cpu(rng):
    exp = jax.export.deserialize(_export_dequant(("cpu", "cuda")).serialize())
    with jax.default_device(jax.devices("cpu")[0]):
        for m in (3, 130):
            a, b, _ = operands(rng, m, 48, 64)
            extras = [jnp.asarray(rng.standard_normal(s), d) for s, d in
                      (((m,), jnp.float32), ((48,), jnp.float32), ((m, 48), jnp.bfloat16))]
            assert_close(exp.call(a, b, *extras), reference_f32(DEQUANT, a, b, extras), jnp.bfloat16)


# On a Hopper GPU ---------------------------------------------------------------

# (M, N, K): tiny, not multiples of the 128 x 128 / 128 x 256 tiles or of K's
# 64, a K shorter than one K tile, and shapes with many tiles per CTA (the
# persistent loop, the ping-pong alternation and the stage ring's wraps).
SHAPES = [(1, 8, 8), (7, 72, 1000), (64, 1000, 72), (128, 136, 4104), (200, 4104, 1000), (256, 256, 64),
          (1000, 8, 4104), (2048, 2048, 512), (3000, 4104, 1000)]


def poison(m, n, dtype):
    """A NaN-filled (M, N) buffer, freed: XLA's allocator tends to hand it to
    the next result of that size, so unwritten outputs show (best effort)."""
    jax.block_until_ready(jnp.full((m, n), jnp.nan, dtype))


@needs_hopper
@pytest.mark.parametrize("schedule", ["pingpong", "cooperative"])
@pytest.mark.parametrize("epilogue", [PLAIN, SWIGLU, DEQUANT], ids=lambda e: e.name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gpu_matches_f32_reference(rng, shape, epilogue, schedule):
    m, n, k = shape
    a, b, extras = operands(rng, m, n, k, epilogue=epilogue)
    poison(m, n, jnp.bfloat16)
    got = call(epilogue, a, b, extras, schedule)
    assert_close(got, reference_f32(epilogue, a, b, extras), jnp.bfloat16)


@needs_hopper
@pytest.mark.parametrize("epilogue, schedule", [(PLAIN, "pingpong"), (DEQUANT, "cooperative")],
                         ids=["plain-pingpong", "dequant_residual-cooperative"])
@pytest.mark.parametrize("shape", [(7, 72, 1000), (300, 1000, 4104), (2048, 2048, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gpu_float16_and_float32_extras(rng, shape, epilogue, schedule):
    m, n, k = shape
    a, b, extras = operands(rng, m, n, k, jnp.float16, epilogue=epilogue, extra_dtype=jnp.float32)
    poison(m, n, jnp.float16)
    got = call(epilogue, a, b, extras, schedule)
    assert got.dtype == jnp.float16
    assert_close(got, reference_f32(epilogue, a, b, extras), jnp.float16)


@needs_hopper
def test_gpu_each_call_sees_its_own_data(rng):
    """Two products in one program and a call after another: no state
    carried between launches (barriers, the persistent loop)."""
    a, b, _ = operands(rng, 1000, 520, 264)
    a2, b2, _ = operands(rng, 1000, 520, 264)
    f = jax.jit(lambda a, b, a2, b2: (jit_gemm.matmul(a, b), jit_gemm.matmul(a2, b2)))
    for _ in range(2):
        c, c2 = f(a, b, a2, b2)
        assert_close(c, reference_f32(PLAIN, a, b, []), jnp.bfloat16)
        assert_close(c2, reference_f32(PLAIN, a2, b2, []), jnp.bfloat16)


@needs_hopper
@pytest.mark.parametrize("epilogue", [PLAIN, SWIGLU], ids=lambda e: e.name)
def test_gpu_grad(rng, epilogue):
    check_grad(rng, epilogue, 136, 200, 264)


@needs_hopper
def test_gpu_vmap(rng):
    a, b, (rs, cs, res) = operands(rng, 100, 64, 72, epilogue=DEQUANT)
    a3, res3 = jnp.stack([a, -a, 2 * a]), jnp.stack([res, res, -res])
    got = jax.jit(jax.vmap(lambda a, r: jit_gemm.matmul(a, b, rs, cs, r, epilogue=DEQUANT)))(a3, res3)
    for i in range(3):
        assert_close(got[i], reference_f32(DEQUANT, a3[i], b, [rs, cs, res3[i]]), jnp.bfloat16)


@needs_hopper
def test_gpu_symbolic_export_in_a_fresh_process(tmp_path):
    """The artifact carries the CUBIN; a process that imports only cutlax (no
    example module, an empty cache) runs it at two sizes of M."""
    artifact = tmp_path / "dequant.jax_export"
    artifact.write_bytes(_export_dequant(("cuda",)).serialize())
    code = f"""
        import jax, jax.numpy as jnp, numpy as np, cutlax
        f = jax.export.deserialize(open({str(artifact)!r}, "rb").read())
        rng = np.random.default_rng(1)
        for m in (5, 1000):
            a = (rng.standard_normal((m, 64)) / 8).astype(np.float32)
            b = rng.standard_normal((64, 48)).astype(np.float32)
            rs, cs = rng.standard_normal(m).astype(np.float32), rng.standard_normal(48).astype(np.float32)
            res = rng.standard_normal((m, 48)).astype(np.float32)
            bf = lambda x: jnp.asarray(x, jnp.bfloat16)
            got = np.asarray(f.call(bf(a), bf(b), jnp.asarray(rs), jnp.asarray(cs), bf(res)), np.float32)
            a32, b32, r32 = (np.asarray(bf(x), np.float32) for x in (a, b, res))
            want = (a32 @ b32) * rs[:, None] * cs + r32
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-2, (m, err)
        print("ok", jax.devices()[0].platform, cutlax.jit.cache_info()["misses"])
        """
    env = {**os.environ, "CUTLAX_CACHE_DIR": str(tmp_path / "empty")}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "gpu", "0"]
