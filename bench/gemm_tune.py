"""Tuning measurements for the Hopper GEMM (docs/gemm.md's heuristic comes
from these): every built configuration and tile order per shape against
XLA in the same process, float32's TF32 forms and 3xTF32 per configuration
(speed and float64 error), and where a bf16 MLP
training step spends its time, kernel by kernel, against XLA's.

    python3 bench/gemm_tune.py [--sections tiles,f32,highest,mlp,dbias,epilogue] [--out DIR]

Prints one line per measurement (TFLOP/s and XLA time / cutlax time) and
writes them to DIR/gemm_tune.json. The MLP section traces five steps of each
with jax.profiler and sums the GPU time per kernel name.

The tiles and highest sections set the tile order and the promotion
interval, which only a tuning build of cutlax has (cutlax.cli.tuning;
scripts/gpu_check.sh's tune step builds one). bench/RESULTS.md records the
runs.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import subprocess
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax.cli import tuning
from cutlax.cli.bench import mlp_train
from cutlax.cli.timing import median_seconds_each
from cutlax.library import builtin_library
from cutlax.ops import gemm as gemm_module

# (swizzle, raster): raster 0 heuristic, 1 along M, 2 along N.
TILE_ORDERS = [(1, 0), (2, 0), (4, 0), (8, 0), (2, 1), (2, 2), (4, 1), (4, 2), (8, 1), (8, 2)]
# (M, N, K, a transposed): the benchmark's shapes and the MLP's products
# (forward 4096x1024x1024, weight gradient a.T @ g: 1024x1024x4096).
# 8192x8192x4096 and 4096x4096x8192 sit on either side of the heuristic's
# 16-bit cooperative threshold (src/ops/gemm_configs.hpp): many tiles with
# K below kCooperativeMinK16, and long K with fewer tiles than four waves.
SHAPES_16 = [(8192, 8192, 8192, False), (8192, 8192, 4096, False), (4096, 4096, 8192, False),
             (4096, 4096, 4096, False), (4096, 4096, 1024, False), (4096, 1024, 1024, False),
             (1024, 1024, 4096, True)]
# As --shapes names them.
SHAPE_NAMES_16 = [f"{m}x{n}x{k}{'t' if a_t else ''}" for m, n, k, a_t in SHAPES_16]
F32_SIZES = (4096, 8192)
RELU = gemm_module.ACTIVATIONS.index("relu")

records = []

# The Hopper GEMM's op as the extension declares it (docs/gemm.md, "The op"):
# gemm(a, b, bias) runs the configuration asked for on the arrays as stored,
# `transpose` naming the operand given transposed; rows must be multiples of
# 16 bytes (every shape here is) and a bias of length 0 is none.
GEMM_OP = builtin_library().gemm
TRANSPOSES = gemm_module.TRANSPOSES


def kernel_product(a, b, bias=None, activation=0, config="auto", transpose="none"):
    """act(a @ b + bias) on exactly that configuration and operand form."""
    bias = jnp.zeros((0,), a.dtype) if bias is None else bias
    return GEMM_OP(a, b, bias, activation=activation, config=gemm_module.CONFIGS.index(config),
                   transpose=TRANSPOSES.index(transpose))


def report(**fields):
    records.append(fields)
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()), flush=True)


def _operands16(m, n, k, dtype, a_t=False, data="normal"):
    """a (M, K), or (K, M) where a_t, scaled so that a @ b is about N(0, 1);
    b (K, N); a bias (N,): the same arrays for every section. data="ones":
    a and b all ones (and the same bias)."""
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    a_shape = (k, m) if a_t else (m, k)
    bias = jax.random.normal(keys[2], (n,)).astype(dtype)
    if data == "ones":
        return jnp.ones(a_shape, dtype), jnp.ones((k, n), dtype), bias
    a = (jax.random.normal(keys[0], a_shape) / np.sqrt(k)).astype(dtype)
    return a, jax.random.normal(keys[1], (k, n)).astype(dtype), bias


def tiles_section(dtype, shapes=None, data=("normal",)):
    """Every configuration of the form x tile order, plain and with bias+relu,
    at SHAPES_16 (or those of them named, as MxNxK with a trailing "t" where
    a is transposed), on each kind of operands in `data` (OPERAND_DATA's:
    all ones draw far less power, so the card keeps its full clock and a
    kernel's limit shows apart from the power cap)."""
    for shape, (m, n, k, a_t) in zip(SHAPE_NAMES_16, SHAPES_16):
        if shapes and shape not in shapes:
            continue
        form = "a" if a_t else "none"
        configs = [c for d, f, c in gemm_module.KERNELS if d == jnp.dtype(dtype).name and f == form]
        xla_a = (lambda a: a.T) if a_t else (lambda a: a)
        xla = {"plain": jax.jit(lambda a, b, bias, t=xla_a: t(a) @ b),
               "relu": jax.jit(lambda a, b, bias, t=xla_a: jax.nn.relu(t(a) @ b + bias))}
        ours = {}
        for config in sorted(configs):
            for variant, act in (("plain", 0), ("relu", RELU)):
                ours[config, variant] = jax.jit(  # plain: no bias, as XLA's
                    lambda a, b, bias, config=config, act=act, form=form: kernel_product(
                        a, b, bias if act else None, act, config, form))
        for kind in data:
            a, b, bias = _operands16(m, n, k, dtype, a_t, kind)
            for (config, variant), fn in ours.items():  # wrong answers would make the timings moot
                want = np.asarray(xla[variant](a, b, bias), np.float32)
                error = float(np.abs(np.asarray(fn(a, b, bias), np.float32) - want).max() / np.abs(want).max())
                report(section="tiles check", shape=shape, data=kind, config=config, variant=variant,
                       max_rel_error=error)
            flops = 2.0 * m * n * k
            for swizzle, raster in TILE_ORDERS:
                fns = list(ours.values()) + list(xla.values())
                with tuning.tile_order(swizzle, raster):
                    times = median_seconds_each(fns, a, b, bias, calls=10, batches=5)
                t_xla = dict(zip(xla, times[len(ours):]))
                for (config, variant), t in zip(ours, times):
                    report(section="tiles", dtype=jnp.dtype(dtype).name, shape=shape, data=kind, form=form,
                           config=config, variant=variant, swizzle=swizzle, raster=raster,
                           tflops=flops / t / 1e12, xla_tflops=flops / t_xla[variant] / 1e12,
                           ratio=t_xla[variant] / t)


def f32_section():
    """TF32 and 3xTF32 per built float32 kernel: "tf32 <config>" as
    cutlax.gemm(impl=config) runs it (the 128x256 kernel reads b as JAX
    stores it, the promoted one takes b as (N, K), a copy of XLA's), and
    "tf32 b <config>" with that copy for every kernel."""
    for size in F32_SIZES:
        ka, kb = jax.random.split(jax.random.PRNGKey(0))
        a = jax.random.normal(ka, (size, size), jnp.float32)
        b = jax.random.normal(kb, (size, size), jnp.float32)
        fns = {"xla default": jax.jit(lambda a, b: a @ b),
               "xla highest": jax.jit(lambda a, b: jnp.matmul(a, b, precision="highest")),
               "tiled": jax.jit(lambda a, b: cutlax.gemm(a, b, impl="tiled"))}
        for config in gemm_module.configs(jnp.float32)[1:]:
            fns[f"tf32 {config}"] = jax.jit(lambda a, b, c=config: cutlax.gemm(a, b, impl=c))
            fns[f"tf32 b {config}"] = jax.jit(
                lambda a, b, c=config: kernel_product(a, b.T, config=c, transpose="b"))
            fns[f"3xtf32 {config}"] = jax.jit(lambda a, b, c=config: cutlax.gemm(a, b, impl=c, precision="high"))
        times = dict(zip(fns, median_seconds_each(list(fns.values()), a, b, calls=5, batches=5)))
        flops = 2.0 * size**3
        exact = np.asarray(a[:64], np.float64) @ np.asarray(b, np.float64)
        for name, t in times.items():
            xla = "xla default" if name.startswith("tf32") else "xla highest"
            report(section="f32", size=size, kernel=name, tflops=flops / t / 1e12, ratio=times[xla] / t,
                   error=float(np.abs(np.asarray(fns[name](a, b)[:64], np.float64) - exact).max()))
        # Kernel against kernel, without b's copy: both given b as (N, K),
        # the TF32 kernels' K-major B and cuBLAS's "TN" form.
        bt = jax.block_until_ready(b.T)
        stored = {"xla default": jax.jit(lambda a, bt: a @ bt.T),
                  "tf32 b cooperative_128x256_2x1": jax.jit(lambda a, bt: kernel_product(
                      a, bt, config="cooperative_128x256_2x1", transpose="b"))}
        t_xla, t_ours = median_seconds_each(list(stored.values()), a, bt, calls=5, batches=5)
        report(section="f32 b stored (N, K)", size=size, tflops=flops / t_ours / 1e12,
               xla_tflops=flops / t_xla / 1e12, ratio=t_xla / t_ours)
        # What runs, kernel by kernel: XLA's, and TF32 on each kernel that auto may pick.
        for name in [n for n in fns if n.startswith(("xla", "tf32")) and gemm_module.PROMOTED not in n]:
            for kernel, us, launches in kernel_times(lambda p, fn=fns[name]: (p[0], p[1], fn(p[0], p[1])), (a, b, a)):
                report(section="f32 kernels", size=size, impl=name, kernel=kernel, us=us, launches=launches)


HIGHEST_ERROR_SHAPES = ((64, 48, 1000), (256, 256, 8192), (1000, 1000, 128))


def highest_section():
    """precision="highest" per promotion interval against XLA's "highest":
    speed at F32_SIZES, and the float64 error there (first 64 rows) and at
    HIGHEST_ERROR_SHAPES (whole). cutlax's "highest" runs a_big b_big on the
    promoted kernel and the cross products in float16 ("3xtf32 highest").
    ("high", which the interval does not touch, is the f32 section's 3xtf32
    row of the heuristic's kernel.)"""
    fns = {"xla highest": jax.jit(lambda a, b: jnp.matmul(a, b, precision="highest")),
           "3xtf32 highest": jax.jit(lambda a, b: cutlax.gemm(a, b, precision="highest", impl="cutlax"))}
    for interval in (4, 8, 16):
        tuning.set_promotion_interval(interval)
        for m, n, k in HIGHEST_ERROR_SHAPES:
            ka, kb = jax.random.split(jax.random.PRNGKey(m + k))
            a = jax.random.normal(ka, (m, k), jnp.float32)
            b = jax.random.normal(kb, (k, n), jnp.float32)
            exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
            for name, fn in fns.items():
                report(section="highest error", shape=f"{m}x{n}x{k}", interval=interval, kernel=name,
                       error=float(np.abs(np.asarray(fn(a, b), np.float64) - exact).max()))
        for size in F32_SIZES:
            ka, kb = jax.random.split(jax.random.PRNGKey(0))
            a = jax.random.normal(ka, (size, size), jnp.float32)
            b = jax.random.normal(kb, (size, size), jnp.float32)
            times = dict(zip(fns, median_seconds_each(list(fns.values()), a, b, calls=5, batches=5)))
            exact = np.asarray(a[:64], np.float64) @ np.asarray(b, np.float64)
            for name, t in times.items():
                report(section="highest", size=size, interval=interval, kernel=name,
                       tflops=2.0 * size**3 / t / 1e12, ratio=times["xla highest"] / t,
                       error=float(np.abs(np.asarray(fns[name](a, b)[:64], np.float64) - exact).max()))
    tuning.set_promotion_interval(0)


def _kernel_label(name: str) -> str:
    """A short label that tells the SM90 GEMM kernels apart (they differ only
    deep in their mangled template arguments): schedule, CTA tile M x N and
    the WGMMA atom with its operands' majors (K or MN); else the name's
    start."""
    schedule = re.search(r"KernelTmaWarpSpecialized(Pingpong|Cooperative)", name)
    if "GemmUniversal" not in name or not schedule:
        return name[:150]
    tile = re.findall(r"ILi(\d+)EE", name[schedule.end():])[:2]
    atom = re.search(r"MMA_(\d+x\d+x\d+)_\w+?_(SS|RS)ILNS\w+?MajorE(\d)ELS\w+?_(\d)E", name)
    major = {"0": "K", "1": "MN"}
    return " ".join(["cutlass gemm", schedule.group(1), "x".join(tile)] + (
        [f"wgmma {atom.group(1)} {atom.group(2)} A {major[atom.group(3)]}-major B {major[atom.group(4)]}-major"]
        if atom else []))


def kernel_times(step, params, steps=5):
    """GPU microseconds and launches per step by kernel, from a jax.profiler
    trace."""
    jax.block_until_ready(step(params))
    with tempfile.TemporaryDirectory() as log_dir:
        with jax.profiler.trace(log_dir, create_perfetto_trace=True):
            for _ in range(steps):
                params = step(params)
            jax.block_until_ready(params)
        (path,) = glob.glob(os.path.join(log_dir, "**", "perfetto_trace.json.gz"), recursive=True)
        with gzip.open(path) as f:
            trace = json.load(f)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    kernels = [e for e in trace["traceEvents"]
               if e.get("ph") == "X" and "Stream" in threads.get((e["pid"], e["tid"]), "")]
    us, launches = collections.Counter(), collections.Counter()
    for e in kernels:
        us[_kernel_label(e["name"])] += e["dur"] / steps
        launches[_kernel_label(e["name"])] += 1 / steps
    return [(label, t, launches[label]) for label, t in us.most_common()]


def mlp_section():
    options = dict(layers=3, dtype=jnp.bfloat16)
    for name, layer in (("cutlax", lambda h, w, b: cutlax.gemm(h, w, bias=b, activation="relu", impl="cutlax")),
                        ("xla", lambda h, w, b: jax.nn.relu(h @ w + b))):
        _, step, params = mlp_train(layer, 4096, 1024, 2, **options)
        (t,) = median_seconds_each([step], params, calls=20, batches=5)
        report(section="mlp", impl=name, step_us=t * 1e6)
        for kernel, us, launches in kernel_times(step, params):
            report(section="mlp kernels", impl=name, kernel=kernel, us=us, launches=launches)


def dbias_section():
    """bias_relu_backward's row chunks (ops/bias_relu_backward.py aims at
    _TARGET_BLOCKS thread blocks): its kernels' GPU time at the MLP's
    4096x1024 bf16, and the MLP step's time, per target."""
    y, g = (jax.random.normal(key, (4096, 1024), jnp.bfloat16) for key in jax.random.split(jax.random.PRNGKey(0)))
    layer = lambda h, w, b: cutlax.gemm(h, w, bias=b, activation="relu", impl="cutlax")  # noqa: E731
    for target in (2048, 1024, 512, 264, 132):
        with tuning.dbias_blocks(target) as row_chunks:  # read when a call is traced: each jit below traces anew
            backward = jax.jit(lambda y, g: cutlax.bias_relu_backward(y, g))  # a new function: a new trace
            chunks = row_chunks(y.shape, y.dtype)
            for kernel, us, launches in kernel_times(lambda p, fn=backward: (p[0], fn(p[0], p[1])[0]), (y, g)):
                report(section="dbias kernels", target_blocks=target, chunks=chunks, kernel=kernel, us=us,
                       launches=launches)
            _, step, params = mlp_train(layer, 4096, 1024, 2, layers=3, dtype=jnp.bfloat16)
            (t,) = median_seconds_each([step], params, calls=20, batches=5)
            report(section="dbias mlp", target_blocks=target, chunks=chunks, step_us=t * 1e6)


def _sustained(fn, args, per_call, seconds=2.0):
    """Seconds per call over about `seconds` of back-to-back calls (sized by
    `per_call`, the timing group's figure), and the mean SM clock (MHz) and
    board power (W) that nvidia-smi sampled every 50 ms meanwhile (None
    without nvidia-smi): whether a variant's speed follows the clock that
    its power draw leaves it."""
    calls = max(1, int(seconds / per_call))
    try:
        sampler = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
                                    "--format=csv,noheader,nounits", "-lms", "50"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except FileNotFoundError:
        sampler = None
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    elapsed = time.perf_counter() - start
    samples = []
    if sampler is not None:
        sampler.terminate()
        samples = [[float(v) for v in line.split(",")] for line in sampler.communicate()[0].splitlines()
                   if re.fullmatch(r"\s*[\d.]+\s*,\s*[\d.]+\s*", line)]
    mhz, watts = np.mean(samples, axis=0).tolist() if samples else (None, None)
    return elapsed / calls, mhz, watts


# The benchmark's operands (a @ b about N(0, 1)), and all ones: the same
# instructions on operands whose products draw far less power.
OPERAND_DATA = ("normal", "ones")


def epilogue_section(shapes=None):
    """Whether the epilogue's speed depends on the activation, on the bias
    (none, a null pointer, against zeros) or on the results' values (on
    normal operands relu with a bias of -8 makes every result 0, +8 none),
    at each shape named (default 4096x4096x1024): one kernel and XLA's a @ b
    in one timing group, then each variant alone for two seconds with the SM
    clock and power that nvidia-smi saw, on normal and on all-ones operands.
    bench/RESULTS.md ("the epilogue") has what it found. The biases are
    arguments: one made inside the jitted function would cost a kernel of
    XLA's before the GEMM."""
    variants = {"plain": (None, None), "no activation, bias 0": (0.0, None), "relu, no bias": (None, "relu"),
                "relu, bias 0": (0.0, "relu"), "relu, bias -8": (-8.0, "relu"),
                "relu, bias +8": (8.0, "relu")}
    for shape in shapes or ["4096x4096x1024"]:
        if not re.fullmatch(r"\d+x\d+x\d+", shape):
            raise SystemExit(f"gemm_tune.py: the epilogue section takes shapes as MxNxK, got {shape!r}")
        m, n, k = (int(d) for d in shape.split("x"))
        biases = {name: jnp.full((n,), v, jnp.bfloat16) for name, (v, _) in variants.items() if v is not None}
        fns = {name: jax.jit(lambda a, b, biases, name=name, act=act: cutlax.gemm(
            a, b, bias=biases.get(name), activation=act, impl="cutlax")) for name, (_, act) in variants.items()}
        fns["XLA's a @ b"] = jax.jit(lambda a, b, biases: a @ b)  # the reference, in the same group
        for data in OPERAND_DATA:
            a, b, _ = _operands16(m, n, k, jnp.bfloat16, data=data)
            flops = 2.0 * m * n * k
            times = median_seconds_each(list(fns.values()), a, b, biases, calls=20, batches=7)
            for name, t in zip(fns, times):
                report(section="epilogue", shape=shape, data=data, variant=name, tflops=flops / t / 1e12)
            for (name, fn), per_call in zip(fns.items(), times):
                t, mhz, watts = _sustained(fn, (a, b, biases), per_call)
                report(section="epilogue sustained", shape=shape, data=data, variant=name,
                       tflops=flops / t / 1e12, sm_mhz=mhz, watts=watts)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="tiles,f32,mlp")
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--shapes", help="the tiles section's shapes, e.g. 1024x1024x4096t (default: all), "
                                         "and the epilogue's, MxNxK (default 4096x4096x1024)")
    parser.add_argument("--data", default="normal",
                        help=f"the tiles section's operands, of {','.join(OPERAND_DATA)} (default normal)")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    print(jax.devices()[0].device_kind, flush=True)
    shapes = args.shapes.split(",") if args.shapes else None
    sections = args.sections.split(",")
    if "tiles" in sections and shapes and not set(shapes) <= set(SHAPE_NAMES_16):
        # Before any section runs: a typo would spend a device call on nothing.
        raise SystemExit(f"gemm_tune.py: the tiles section takes --shapes of {','.join(SHAPE_NAMES_16)}, "
                         f"got {args.shapes!r}")
    data = args.data.split(",")
    if not set(data) <= set(OPERAND_DATA):
        raise SystemExit(f"gemm_tune.py: --data takes {','.join(OPERAND_DATA)}, got {args.data!r}")
    run = {"tiles": lambda: [tiles_section(jnp.dtype(d), shapes, data) for d in args.dtypes.split(",")],
           "f32": f32_section, "highest": highest_section, "mlp": mlp_section, "dbias": dbias_section,
           "epilogue": lambda: epilogue_section(shapes)}
    if not set(sections) <= set(run):
        raise SystemExit(f"gemm_tune.py: --sections takes {','.join(run)}, got {args.sections!r}")
    if {"tiles", "highest"} & set(sections) and not tuning.available():
        raise SystemExit("gemm_tune.py: the tiles and highest sections set the GEMM's tile order and "
                         "promotion interval, which need a tuning build: pip install . -C "
                         "cmake.define.CUTLAX_GEMM_TUNING=ON (scripts/gpu_check.sh's tune step builds one)")
    for section in sections:  # in the order given
        run[section]()
    with open(os.path.join(args.out, "gemm_tune.json"), "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
