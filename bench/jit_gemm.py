"""The jit GEMM (examples/jit_gemm) against XLA, in one process, interleaved.

    python3 bench/jit_gemm.py OUT_DIR [--quick]

Rows (bf16, a (M, K) @ b (K, N) as JAX stores them):
- plain: jit_gemm.matmul (each schedule, and "auto") against XLA's a @ b
  (cuBLAS) at 8192^3, 4096^3 and 4096x4096x1024;
- the SwiGLU-style epilogue silu(a @ b + bias) * gate and the dequant+residual
  one (a @ b) * row_scale * col_scale + residual against XLA's own program
  for the same math, and each epilogue's cost over the plain jit product,
  at 4096^3, 4096x4096x1024 and 8192x16384x4096;
- the compile latency of the plain kernel: cold (empty cache directory) and
  a disk hit (the process forgot it, the directory has it).

Timing: every function runs inside one jitted lax.fori_loop of `reps`
products whose operands depend on the loop's carry through an
optimization_barrier (nothing is hoisted, dispatch is amortized), and
cutlax's median_seconds_each (cli/timing.py) times all functions of a shape together,
batches in turn. Each figure is a median per product. Results are checked
against XLA (relative error by norm) before they are timed. Writes
OUT_DIR/jit_gemm.json and OUT_DIR/jit_gemm.md; about 2-3 minutes on an
H100 (most of it NVRTC compiles and the 8192 shapes).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax.cli.timing import median_seconds_each

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "jit_gemm"))
import jit_gemm  # noqa: E402

PLAIN_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 4096, 1024)]
EPILOGUE_SHAPES = [(4096, 4096, 4096), (4096, 4096, 1024), (8192, 16384, 4096)]
LOOP_SECONDS = 0.03  # one timed call: a fori_loop of about this long

records: list[dict] = []


def report(**fields):
    records.append(fields)
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()), flush=True)


def looped(fn, reps: int):
    """fn(*args) `reps` times in one program, each product's operands tied
    to the previous result, so XLA can neither hoist nor drop them."""
    @jax.jit
    def run(*args):
        out0 = jax.eval_shape(fn, *args)

        def body(_, carry):
            tied, _ = jax.lax.optimization_barrier((args, carry))
            return fn(*tied)

        return jax.lax.fori_loop(0, reps, body, jnp.zeros(out0.shape, out0.dtype))
    return run


def reps_for(m, n, k) -> int:
    """About LOOP_SECONDS of products at ~600 TFLOP/s."""
    return max(2, min(400, round(LOOP_SECONDS * 600e12 / (2.0 * m * n * k))))


def operands(m, n, k, dtype=jnp.bfloat16):
    keys = jax.random.split(jax.random.PRNGKey(0), 7)
    a = (jax.random.normal(keys[0], (m, k)) / np.sqrt(k)).astype(dtype)
    b = jax.random.normal(keys[1], (k, n)).astype(dtype)
    return dict(
        a=a, b=b, bias=jax.random.normal(keys[2], (n,)).astype(dtype),
        gate=jax.random.normal(keys[3], (m, n)).astype(dtype),
        row_scale=(1 + 0.1 * jax.random.normal(keys[4], (m,))).astype(jnp.float32),
        col_scale=(1 + 0.1 * jax.random.normal(keys[5], (n,))).astype(jnp.float32),
        residual=jax.random.normal(keys[6], (m, n)).astype(dtype))


@jax.jit
def _rel_error(got, want):
    got, want = got.astype(jnp.float32), want.astype(jnp.float32)
    return jnp.linalg.norm(got - want) / jnp.linalg.norm(want)


def rel_error(got, want) -> float:
    return float(_rel_error(got, want))  # on the device: the 8192 x 16384 results are 256 MB each


def time_group(shape, fns: dict, args: tuple, xla_names: dict) -> dict:
    """Seconds per product of each function (interleaved), after checking
    each jit result against the XLA function named in xla_names."""
    m, n, k = shape
    for name, ref in xla_names.items():
        err = rel_error(jax.jit(fns[name])(*args), jax.jit(fns[ref])(*args))
        report(section="check", shape=f"{m}x{n}x{k}", fn=name, against=ref, rel_error=err)
    reps = reps_for(m, n, k)
    times = median_seconds_each([looped(f, reps) for f in fns.values()], *args, calls=5, batches=5)
    return {name: t / reps for name, t in zip(fns, times)}


def plain_section(shapes):
    out = {}
    for m, n, k in shapes:
        x = operands(m, n, k)
        fns = {"xla a @ b": lambda a, b: a @ b,
               "jit auto": lambda a, b: jit_gemm.matmul(a, b),
               "jit pingpong": lambda a, b: jit_gemm.matmul(a, b, schedule="pingpong"),
               "jit cooperative": lambda a, b: jit_gemm.matmul(a, b, schedule="cooperative")}
        t = time_group((m, n, k), fns, (x["a"], x["b"]), {name: "xla a @ b" for name in fns if name != "xla a @ b"})
        flops = 2.0 * m * n * k
        for name in fns:
            report(section="plain", shape=f"{m}x{n}x{k}", fn=name, us=t[name] * 1e6, tflops=flops / t[name] / 1e12,
                   ratio_vs_xla=t["xla a @ b"] / t[name])
        out[(m, n, k)] = t
    return out


def epilogue_section(shapes):
    swiglu = jit_gemm.SWIGLU
    dequant = jit_gemm.DEQUANT_RESIDUAL
    for m, n, k in shapes:
        x = operands(m, n, k)
        args = tuple(x[name] for name in ("a", "b", "bias", "gate", "row_scale", "col_scale", "residual"))
        fns = {
            "jit plain": lambda a, b, *_: jit_gemm.matmul(a, b),
            "xla a @ b": lambda a, b, *_: a @ b,
            "jit swiglu": lambda a, b, bias, gate, *_: jit_gemm.matmul(a, b, bias, gate, epilogue=swiglu),
            "xla swiglu": lambda a, b, bias, gate, *_: jax.nn.silu(a @ b + bias) * gate,
            "jit dequant": lambda a, b, bias, gate, rs, cs, res: jit_gemm.matmul(a, b, rs, cs, res,
                                                                                epilogue=dequant),
            "xla dequant": lambda a, b, bias, gate, rs, cs, res: (
                (a @ b).astype(jnp.float32) * rs[:, None] * cs + res.astype(jnp.float32)).astype(a.dtype),
        }
        t = time_group((m, n, k), fns, args, {"jit plain": "xla a @ b", "jit swiglu": "xla swiglu",
                                              "jit dequant": "xla dequant"})
        flops = 2.0 * m * n * k
        shape = f"{m}x{n}x{k}"
        report(section="epilogue", shape=shape, fn="plain", us=t["jit plain"] * 1e6,
               tflops=flops / t["jit plain"] / 1e12, ratio_vs_xla=t["xla a @ b"] / t["jit plain"])
        for ours, xla, label in (("jit swiglu", "xla swiglu", "silu(a @ b + bias) * gate"),
                                 ("jit dequant", "xla dequant", "a @ b * row_scale * col_scale + residual")):
            report(section="epilogue", shape=shape, fn=ours, xla=label, us=t[ours] * 1e6, xla_us=t[xla] * 1e6,
                   ratio_vs_xla=t[xla] / t[ours], cost_over_jit_plain=t[ours] / t["jit plain"] - 1.0)


def compile_section(repeats=3):
    """The plain kernel's compile: cold (an empty cache directory) and a disk
    hit (in-process cache cleared, the directory kept), each on a new Kernel
    object so nothing is remembered in Python."""
    def fresh():
        sched = jit_gemm.SCHEDULES["pingpong"]
        return cutlax.jit.kernel(jit_gemm.PLAIN.source(), jit_gemm.PLAIN.entry(jnp.bfloat16, (), sched),
                                 grid=1, block=384, shared_mem=sched.shared_mem)

    saved = os.environ.get("CUTLAX_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CUTLAX_CACHE_DIR"] = tmp
        try:
            cold, hit = [], []
            before = cutlax.jit.cache_info()
            for _ in range(repeats):
                cutlax.jit.clear_cache(disk=True)
                start = time.perf_counter()
                fresh().compiled()
                cold.append(time.perf_counter() - start)
                for _ in range(3):
                    cutlax.jit.clear_cache(disk=False)
                    start = time.perf_counter()
                    fresh().compiled()
                    hit.append(time.perf_counter() - start)
            after = cutlax.jit.cache_info()
            # each measurement must be what it claims: compiles cold, reads the disk when hit
            assert after["misses"] - before["misses"] == len(cold), (before, after)
            assert after["disk_hits"] - before["disk_hits"] == len(hit), (before, after)
        finally:
            cutlax.jit.clear_cache(disk=False)
            if saved is None:
                os.environ.pop("CUTLAX_CACHE_DIR", None)
            else:
                os.environ["CUTLAX_CACHE_DIR"] = saved
    report(section="compile", what="plain bf16 pingpong, cold (median)", ms=statistics.median(cold) * 1e3,
           all_ms=", ".join(f"{c * 1e3:.0f}" for c in cold))
    report(section="compile", what="plain bf16 pingpong, disk hit (median)", ms=statistics.median(hit) * 1e3,
           all_ms=", ".join(f"{h * 1e3:.1f}" for h in hit))


def markdown() -> str:
    device = jax.devices()[0].device_kind
    lines = [f"# jit GEMM benchmark ({device}, JAX {jax.__version__})", "",
             "Ratio = XLA time / jit time (> 1: the jit kernel is faster). bf16.", "",
             "## Plain a @ b", "", "| shape | fn | TFLOP/s | ratio vs XLA a @ b |", "| --- | --- | ---: | ---: |"]
    lines += [f"| {r['shape']} | {r['fn']} | {r['tflops']:.0f} | {r['ratio_vs_xla']:.3f} |"
              for r in records if r["section"] == "plain"]
    lines += ["", "## Fused epilogues", "",
              "| shape | fn | us | XLA us | ratio vs XLA's program | cost over the jit plain product |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in records:
        if r["section"] == "epilogue":
            if r["fn"] == "plain":
                lines.append(f"| {r['shape']} | jit plain ({r['tflops']:.0f} TFLOP/s) | {r['us']:.1f} | | "
                             f"{r['ratio_vs_xla']:.3f} (vs a @ b) | |")
            else:
                lines.append(f"| {r['shape']} | {r['fn']}: {r['xla']} | {r['us']:.1f} | {r['xla_us']:.1f} | "
                             f"{r['ratio_vs_xla']:.3f} | {100 * r['cost_over_jit_plain']:+.1f}% |")
    lines += ["", "## Compile latency", ""]
    lines += [f"- {r['what']}: {r['ms']:.1f} ms ({r['all_ms']})" for r in records if r["section"] == "compile"]
    lines += ["", "## Checks (relative error by norm against XLA)", ""]
    lines += [f"- {r['shape']} {r['fn']} vs {r['against']}: {r['rel_error']:.2e}"
              for r in records if r["section"] == "check"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="directory for jit_gemm.json and jit_gemm.md")
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke test, e.g. on CPU)")
    parser.add_argument("--sections", default="compile,plain,epilogue")
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    unknown = set(sections) - {"compile", "plain", "epilogue"}
    if unknown:
        raise SystemExit(f"jit_gemm.py: unknown --sections {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    # NVRTC compiles on the host: the compile section needs no GPU.
    if set(sections) - {"compile"} and jax.devices()[0].platform != "gpu" and not args.quick:
        raise SystemExit("jit_gemm.py: the plain and epilogue sections need a GPU (or --quick for a CPU smoke run)")
    plain = [(256, 256, 128)] if args.quick else PLAIN_SHAPES
    fused = [(256, 256, 128)] if args.quick else EPILOGUE_SHAPES
    print(jax.devices()[0].device_kind, flush=True)
    start = time.perf_counter()
    if "compile" in sections:
        compile_section(1 if args.quick else 2)
    if "plain" in sections:
        plain_section(plain)
    if "epilogue" in sections:
        epilogue_section(fused)
    report(section="total", seconds=time.perf_counter() - start)
    with open(os.path.join(args.out, "jit_gemm.json"), "w") as f:
        json.dump({"device": jax.devices()[0].device_kind, "jax": jax.__version__, "records": records}, f, indent=1)
    with open(os.path.join(args.out, "jit_gemm.md"), "w") as f:
        f.write(markdown())
    print(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
