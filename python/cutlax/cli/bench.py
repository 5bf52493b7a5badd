"""``python -m cutlax bench``: every op against the equivalent XLA expression.

Both sides are measured in the same run with the same method (timing.py),
over sizes from launch-bound to several times the L2, and reported as time,
achieved bandwidth (elementwise) or FLOP/s (GEMM), and the ratio XLA time /
cutlax time (> 1: cutlax is faster). Also measured: XLA's own copy of each
array (the practical bandwidth limit), a chain of dependent small calls
(launch overhead, command buffers), and a small MLP trained with cutlax ops
and with jax.numpy. bench/README.md describes the method; bench/RESULTS.md
records the runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax.cli import jit_examples
from cutlax.cli.timing import median_seconds, median_seconds_each


@dataclasses.dataclass
class Row:
    op: str
    dtype: str
    elements: int
    metric: str  # "GB/s", "TFLOP/s" or "us/op"
    cutlax_s: float
    xla_s: float
    cutlax_rate: float
    xla_rate: float
    xla_expr: str
    copy_rate: float | None = None  # XLA's copy of an array of this size, GB/s

    @property
    def ratio(self) -> float:
        return self.xla_s / self.cutlax_s

    @property
    def size(self) -> str:
        n = self.elements
        return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def _inputs(n, dtype, count, seed=0):
    keys = jax.random.split(jax.random.PRNGKey(seed), count)
    return [jax.random.normal(k, (n,), jnp.float32).astype(dtype) for k in keys]


BIAS_WIDTH = 4096


def _two(n, dtype):
    return tuple(_inputs(n, dtype, 2))


def _one(n, dtype):
    return tuple(_inputs(n, dtype, 1))


def _rows(n, dtype, count):
    width = min(BIAS_WIDTH, n)
    return [x.reshape(n // width, width) for x in _inputs(n, dtype, count)], width


def _rows_and_bias(n, dtype):
    (x,), width = _rows(n, dtype, 1)
    return x, _inputs(width, dtype, 1, seed=1)[0]


def _relu_rows_and_cotangent(n, dtype):
    (x, g), _ = _rows(n, dtype, 2)
    return jax.nn.relu(x), g


def _xla_bias_relu_backward(y, g):
    dx = jnp.where(y > 0, g, jnp.zeros_like(g))
    return dx, dx.astype(jnp.float32).sum(axis=0).astype(dx.dtype)


@dataclasses.dataclass(frozen=True)
class Elementwise:
    ours: Callable
    xla: Callable
    xla_expr: str
    inputs: Callable  # (n, dtype) -> args
    arrays_moved: int  # full-size arrays read or written


ELEMENTWISE = {
    "vector_add": Elementwise(cutlax.vector_add, lambda a, b: a + b, "a + b", _two, 3),
    "saxpy": Elementwise(lambda x, y: cutlax.saxpy(2.5, x, y), lambda x, y: 2.5 * x + y,
                         "2.5 * x + y", _two, 3),
    "relu": Elementwise(cutlax.relu, jax.nn.relu, "jax.nn.relu(x)", _one, 2),
    "jit_relu": Elementwise(lambda x: jit_examples.relu(x.dtype)(x), jax.nn.relu, "jax.nn.relu(x)", _one, 2),
    "bias_relu": Elementwise(cutlax.bias_relu, lambda x, b: jax.nn.relu(x + b),
                             f"jax.nn.relu(x + bias), width {BIAS_WIDTH}", _rows_and_bias, 2),
    "jit_bias_relu": Elementwise(lambda x, b: jit_examples.bias_relu(x.dtype, x.shape[1])(x, b),
                                 lambda x, b: jax.nn.relu(x + b), f"jax.nn.relu(x + bias), width {BIAS_WIDTH}",
                                 _rows_and_bias, 2),
    "bias_relu_backward": Elementwise(
        cutlax.bias_relu_backward, _xla_bias_relu_backward,
        f"where(y > 0, g, 0) and its column sums, width {BIAS_WIDTH}", _relu_rows_and_cotangent, 3),
}
OPS = list(ELEMENTWISE) + ["gemm", "gemm16", "chain", "mlp", "mlp16"]


def _close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x, np.float32), np.asarray(y, np.float32),
                                   rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(np.asarray(y, np.float32)).max())))


def copy_rate(n, dtype, calls, batches):
    (x,) = _inputs(n, dtype, 1)
    copy = jax.jit(jnp.copy)
    return 2 * n * jnp.dtype(dtype).itemsize / median_seconds(copy, x, calls=calls, batches=batches) / 1e9


def bench_elementwise(op, n, dtype, calls, batches, copy_gbs):
    spec = ELEMENTWISE[op]
    args = spec.inputs(n, dtype)
    ours, xla = jax.jit(spec.ours), jax.jit(spec.xla)
    _close(ours(*args), xla(*args))
    nbytes = spec.arrays_moved * n * jnp.dtype(dtype).itemsize
    t_ours, t_xla = median_seconds_each([ours, xla], *args, calls=calls, batches=batches)
    return Row(op, jnp.dtype(dtype).name, n, "GB/s", t_ours, t_xla, nbytes / t_ours / 1e9,
               nbytes / t_xla / 1e9, spec.xla_expr, copy_gbs)


def bench_gemm(size, calls, batches):
    """float32 GEMMs: 3xTF32 ("highest" on the promoted kernel, "high" on the
    heuristic's) and the tiled SGEMM against XLA's "highest", TF32 against
    XLA's default (TF32 too); the float64 error of each FP32-class product
    on the first 64 rows."""
    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.normal(ka, (size, size), jnp.float32)
    b = jax.random.normal(kb, (size, size), jnp.float32)
    flops = 2.0 * size**3
    fns = {name: jax.jit(fn) for name, fn in {
        "tiled": lambda a, b: cutlax.gemm(a, b, impl="tiled"),
        "tf32": lambda a, b: cutlax.gemm(a, b),
        "3xtf32 highest": lambda a, b: cutlax.gemm(a, b, precision="highest"),
        "3xtf32 high": lambda a, b: cutlax.gemm(a, b, precision="high"),
        "xla highest": lambda a, b: jnp.matmul(a, b, precision="highest"),
        "xla default": lambda a, b: jnp.matmul(a, b)}.items()}
    times = dict(zip(fns, median_seconds_each(list(fns.values()), a, b, calls=calls, batches=batches)))
    exact = np.asarray(a[:64], np.float64) @ np.asarray(b, np.float64)
    error = {name: float(np.abs(np.asarray(fns[name](a, b)[:64], np.float64) - exact).max())
             for name in ("tiled", "3xtf32 highest", "3xtf32 high", "xla highest")}
    pairs = [(ours, "xla highest", f"jnp.matmul precision=highest; max |error| vs float64: {error[ours]:.2e} vs "
              f"{error['xla highest']:.2e}") for ours in ("3xtf32 highest", "3xtf32 high", "tiled")]
    pairs.append(("tf32", "xla default", "jnp.matmul precision=default (TF32)"))
    return [Row(f"gemm {ours}", "float32", size**3, "TFLOP/s", times[ours], times[xla], flops / times[ours] / 1e12,
                flops / times[xla] / 1e12, note) for ours, xla, note in pairs]


# The Hopper GEMM's shapes (M, N, K) on a GPU: squares, short K, 2048-scale,
# the MLP projections, decode (few rows), not tile multiples (issue 44's
# table; cutlax.gemm_plan says which route auto takes on each).
GEMM16_SHAPES = ",".join([
    "8192x8192x8192", "4096x4096x4096", "4096x4096x1024", "8192x8192x1024", "2048x2048x2048",
    "8192x16384x4096", "8192x4096x16384", "128x4096x4096", "64x8192x8192", "32x4096x4096", "16x4096x4096",
    "1x4096x4096", "4000x4000x4000", "4096x4104x4096"])


def _gemm16_variants(dtype):
    """(label, cutlax, XLA, XLA's expression): the plain product and the two
    fused epilogues as impl="auto" runs them (its route: cutlax.gemm_plan)
    and on cutlax's kernels (impl="cutlax"), and bias+relu on each
    configuration the dtype has."""
    from cutlax.ops.gemm import configs

    xla_relu = lambda a, b, bias: jax.nn.relu(a @ b + bias)  # noqa: E731
    xla_gelu = lambda a, b, bias: jax.nn.gelu(a @ b + bias)  # noqa: E731
    variants = []
    for impl in ("auto", "cutlax"):
        suffix = "" if impl == "auto" else " cutlax"
        variants += [
            (f"gemm{suffix}", lambda a, b, bias, i=impl: cutlax.gemm(a, b, impl=i), lambda a, b, bias: a @ b,
             "a @ b (cuBLAS)"),
            (f"gemm+bias+relu{suffix}", lambda a, b, bias, i=impl: cutlax.gemm(a, b, bias=bias, activation="relu",
                                                                               impl=i), xla_relu, "relu(a @ b + bias)"),
            (f"gemm+bias+gelu{suffix}", lambda a, b, bias, i=impl: cutlax.gemm(a, b, bias=bias, activation="gelu",
                                                                               impl=i), xla_gelu, "gelu(a @ b + bias)"),
        ]
    for config in configs(dtype)[1:]:
        variants.append((f"gemm+bias+relu {config}",
                         lambda a, b, bias, c=config: cutlax.gemm(a, b, bias=bias, activation="relu", impl=c),
                         xla_relu, "relu(a @ b + bias)"))
    return variants


def bench_gemm16(shapes, dtypes, calls, batches):
    """The Hopper GEMM against XLA (cuBLAS, with XLA's own epilogue fusion),
    every variant of one shape timed together, interleaved."""
    rows = []
    for dtype in dtypes:
        for m, n, k in shapes:
            keys = jax.random.split(jax.random.PRNGKey(1), 3)
            a = (jax.random.normal(keys[0], (m, k)) / np.sqrt(k)).astype(dtype)
            b, bias = (jax.random.normal(key, shape).astype(dtype) for key, shape in zip(keys[1:], ((k, n), (n,))))
            variants = _gemm16_variants(dtype)
            fns = []
            for _, ours, xla, _ in variants:
                ours, xla = jax.jit(ours), jax.jit(xla)
                _close(ours(a, b, bias), xla(a, b, bias))
                fns += [ours, xla]
            times = median_seconds_each(fns, a, b, bias, calls=calls, batches=batches)
            flops = 2.0 * m * n * k
            for (label, _, _, expr), t_ours, t_xla in zip(variants, times[::2], times[1::2]):
                rows.append(Row(f"{label} {m}x{n}x{k}", jnp.dtype(dtype).name, m * n * k, "TFLOP/s", t_ours,
                                t_xla, flops / t_ours / 1e12, flops / t_xla / 1e12, expr))
    return rows


CHAIN_ELEMENTS = 1024


def bench_chain(length, calls, batches):
    """``length`` dependent relu calls on 1024 floats in one jitted function:
    per-op time is launch overhead. On GPU XLA captures the custom calls
    into a command buffer (CUDA graph). XLA's own relus are kept apart by
    optimization barriers, or XLA would fuse the whole chain into one kernel."""

    def chain(step):
        def run(x):
            for _ in range(length):
                x = step(x)
            return x

        return jax.jit(run)

    (x,) = _inputs(CHAIN_ELEMENTS, jnp.float32, 1)
    ours = chain(cutlax.relu)
    xla = chain(lambda x: jax.lax.optimization_barrier(jax.nn.relu(x)))
    _close(ours(x), xla(x))
    t_ours, t_xla = (t / length for t in median_seconds_each([ours, xla], x, calls=calls, batches=batches))
    return Row(f"chain of {length}", "float32", CHAIN_ELEMENTS, "us/op", t_ours, t_xla,
               t_ours * 1e6, t_xla * 1e6, "jax.nn.relu with optimization_barrier between calls")


def mlp_train(layer, batch, width, steps, lr=0.05, layers=2, dtype=jnp.float32):
    """SGD on an MLP of `layers` layers (`layer` = gemm + bias + relu) from a
    fixed start; returns the losses, the jitted step and the final parameters.
    tests/python/transforms/test_autodiff.py trains the same model."""
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((batch, width)), dtype)
    y = jnp.asarray(rng.standard_normal((batch, width)), dtype)
    params = [jnp.asarray(rng.standard_normal(s) / np.sqrt(width), dtype)
              for _ in range(layers) for s in [(width, width), (width,)]]

    def loss(params):
        h = x
        for w, b in zip(params[::2], params[1::2]):
            h = layer(h, w, b)
        return jnp.mean((h.astype(jnp.float32) - y.astype(jnp.float32)) ** 2)

    step = jax.jit(lambda p: [(q - lr * g).astype(q.dtype) for q, g in zip(p, jax.grad(loss)(p))])
    losses = []
    for _ in range(steps):
        losses.append(float(loss(params)))
        params = step(params)
    return losses, step, params


def mlp_run(layer, batch, width, steps, **options):
    """The losses of mlp_train and the seconds per SGD step."""
    losses, step, params = mlp_train(layer, batch, width, steps, **options)
    return losses, median_seconds(step, params)


def bench_mlp16(batch, width, steps, layers=3, dtype=jnp.bfloat16):
    """A bf16 training step (gemm + bias + relu per layer, jax.grad, SGD):
    the fused Hopper GEMM against XLA's matmul with its own fusions."""
    options = dict(layers=layers, dtype=dtype)
    ours, t_ours = mlp_run(lambda h, w, b: cutlax.gemm(h, w, bias=b, activation="relu"), batch, width, steps,
                           **options)
    ref, t_ref = mlp_run(lambda h, w, b: jax.nn.relu(h @ w + b), batch, width, steps, **options)
    flops = layers * 3 * 2.0 * batch * width * width  # forward + two backward products per layer
    return Row(f"mlp{layers} {batch}x{width}", jnp.dtype(dtype).name, batch * width, "TFLOP/s", t_ours, t_ref,
               flops / t_ours / 1e12, flops / t_ref / 1e12, "relu(h @ w + b); jax.grad"), {
        "cutlax": ours, "jax.numpy": ref}


def bench_mlp(batch, width, steps):
    ours, t_ours = mlp_run(lambda h, w, b: cutlax.bias_relu(cutlax.gemm(h, w, impl="tiled"), b), batch, width,
                           steps)
    ref, t_ref = mlp_run(lambda h, w, b: jax.nn.relu(jnp.matmul(h, w, precision="highest") + b),
                         batch, width, steps)
    flops = 3 * 2 * (2.0 * batch * width * width)  # two layers, forward + two backward products
    row = Row(f"mlp {batch}x{width}", "float32", batch * width, "TFLOP/s", t_ours, t_ref,
              flops / t_ours / 1e12, flops / t_ref / 1e12, "jnp.matmul(highest) + bias, relu; jax.grad")
    return row, {"cutlax": ours, "jax.numpy": ref,
                 "max_rel_diff": float(np.max(np.abs(np.array(ours) - ref) / np.abs(ref)))}


def _progress():
    try:
        from rich.progress import Progress
    except ImportError:
        return None
    return Progress(transient=True)


@contextlib.contextmanager
def _reporter(total):
    """Calls back with a description before each measurement: a rich
    progress bar when rich is installed, else a line on stderr."""
    progress = _progress()
    if progress is None:
        yield lambda text: print(f"{text} ...", file=sys.stderr, flush=True)
        return
    with progress:
        task = progress.add_task("bench", total=total)

        def advance(text):
            progress.update(task, description=text, advance=1)

        yield advance


def print_table(rows):
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        header = f"{'op':<20}{'dtype':<10}{'size':<9}{'cutlax':>11}{'XLA':>11}  {'unit':<8}{'ratio':>7}  XLA expression"
        print(header + "\n" + "-" * len(header))
        for r in rows:
            print(f"{r.op:<20}{r.dtype:<10}{r.size:<9}{r.cutlax_rate:>11.2f}{r.xla_rate:>11.2f}  "
                  f"{r.metric:<8}{r.ratio:>7.3f}  {r.xla_expr}")
        return
    table = Table(title="cutlax vs XLA (ratio = XLA time / cutlax time)")
    for name, justify in [("op", "left"), ("dtype", "left"), ("size", "right"), ("cutlax", "right"),
                          ("XLA", "right"), ("copy", "right"), ("unit", "left"), ("ratio", "right"),
                          ("XLA expression", "left")]:
        table.add_column(name, justify=justify)
    for r in rows:
        colour = "green" if r.ratio >= 0.98 else "yellow" if r.ratio >= 0.8 else "red"
        table.add_row(r.op, r.dtype, r.size, f"{r.cutlax_rate:.2f}", f"{r.xla_rate:.2f}",
                      "" if r.copy_rate is None else f"{r.copy_rate:.0f}", r.metric,
                      f"[{colour}]{r.ratio:.3f}[/{colour}]", r.xla_expr)
    Console(width=160).print(table)


def plot(record, path):
    """Achieved bandwidth against size, one panel per elementwise op and
    dtype: cutlax, XLA, and XLA's copy of the same array."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in record["rows"] if r["metric"] == "GB/s"]
    panels = sorted({(r["op"], r["dtype"]) for r in rows}, key=lambda p: (OPS.index(p[0]), p[1]))
    if not panels:
        plot_gemm(record, os.path.splitext(path)[0] + "-gemm.png")
        return
    ops = sorted({p[0] for p in panels}, key=OPS.index)
    dtypes = sorted({p[1] for p in panels})
    fig, axes = plt.subplots(len(ops), len(dtypes), figsize=(4.2 * len(dtypes), 3.2 * len(ops)),
                             squeeze=False, sharex=True)
    for (op, dtype) in panels:
        ax = axes[ops.index(op)][dtypes.index(dtype)]
        series = sorted((r for r in rows if r["op"] == op and r["dtype"] == dtype), key=lambda r: r["elements"])
        n = [r["elements"] for r in series]
        ax.plot(n, [r["cutlax_rate"] for r in series], "o-", label="cutlax")
        ax.plot(n, [r["xla_rate"] for r in series], "s--", label="XLA")
        ax.plot(n, [r["copy_rate"] for r in series], ":", color="grey", label="XLA copy (limit)")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{op} {dtype}", fontsize=9)
        ax.set_ylabel("GB/s")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("elements")
    fig.suptitle(f"{record['device']}, JAX {record['jax']}, {record['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plot_gemm(record, os.path.splitext(path)[0] + "-gemm.png")


def plot_gemm(record, path):
    """TFLOP/s of every GEMM and MLP row, cutlax next to XLA (bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in record["rows"] if r["metric"] == "TFLOP/s"]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(rows)), 4.5))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["cutlax_rate"] for r in rows], 0.4, label="cutlax")
    ax.bar(x + 0.2, [r["xla_rate"] for r in rows], 0.4, label="XLA")
    ax.set_xticks(x, [f"{r['op']} {r['dtype']}" for r in rows], rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("TFLOP/s")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{record['device']}, JAX {record['jax']}, {record['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _commit():
    """The checkout's commit, with "-dirty" when the tree has changes a
    commit does not hold."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv=None) -> int:
    on_gpu = jax.default_backend() == "gpu"
    p = argparse.ArgumentParser(prog="python -m cutlax bench", description=__doc__.splitlines()[0])
    p.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, from: {', '.join(OPS)}")
    p.add_argument("--log2-sizes", default="16,20,24,28" if on_gpu else "16,20,24",
                   help="elementwise sizes, as powers of two (default 16,20,24,28 on GPU, 16,20,24 on CPU)")
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--gemm-size", type=int, default=4096 if on_gpu else 512)
    p.add_argument("--gemm16-shapes", default=GEMM16_SHAPES if on_gpu else "256x256x256",
                   help="MxNxK,... for the bf16/f16 GEMM rows")
    p.add_argument("--chain", type=int, default=200, help="length of the dependent-call chain")
    p.add_argument("--mlp", default="4096,1024,10" if on_gpu else "256,128,10",
                   help="batch,width,steps of the MLP training run")
    p.add_argument("--mlp16", default="4096,1024,10" if on_gpu else "64,64,3",
                   help="batch,width,steps of the 3-layer bf16 MLP training run")
    p.add_argument("--calls", type=int, default=10,
                   help="fewest calls per timed batch (a batch also lasts at least 50 ms)")
    p.add_argument("--batches", type=int, default=5, help="timed batches (the median is reported)")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--png", help="plot bandwidth against size to this file (needs matplotlib)")
    args = p.parse_args(argv)

    ops = args.ops.split(",")
    for op in ops:
        if op not in OPS:
            p.error(f"unknown op {op!r}; choose from {', '.join(OPS)}")
    if cutlax.jit.nvrtc_version() == "not found" and any(op.startswith("jit_") for op in ops):
        print("cutlax.jit: NVRTC is not installed; the jit_* rows are skipped", file=sys.stderr)
        ops = [op for op in ops if not op.startswith("jit_")]
    sizes = [2**int(s) for s in args.log2_sizes.split(",")]
    dtypes = [jnp.dtype(d) for d in args.dtypes.split(",")]
    elementwise = [op for op in ops if op in ELEMENTWISE]
    total = len(elementwise) * len(sizes) * len(dtypes) + len(sizes) * len(dtypes) + 5
    rows, extra = [], {}
    with _reporter(total) as report:
        copies = {}
        for dtype in dtypes:
            for n in sizes:
                if elementwise:
                    report(f"copy {dtype.name} 2^{n.bit_length() - 1}")
                    copies[(n, dtype)] = copy_rate(n, dtype, args.calls, args.batches)
        for op in elementwise:
            for dtype in dtypes:
                for n in sizes:
                    report(f"{op} {dtype.name} 2^{n.bit_length() - 1}")
                    rows.append(bench_elementwise(op, n, dtype, args.calls, args.batches, copies[(n, dtype)]))
        if "gemm" in ops:
            report(f"gemm {args.gemm_size}^3")
            rows += bench_gemm(args.gemm_size, args.calls, args.batches)
        if "gemm16" in ops:
            report("gemm bf16/f16")
            shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.gemm16_shapes.split(",")]
            rows += bench_gemm16(shapes, [d for d in dtypes if d != jnp.float32], args.calls, args.batches)
        if "chain" in ops:
            report(f"chain of {args.chain}")
            rows.append(bench_chain(args.chain, args.calls, args.batches))
        if "mlp" in ops:
            batch, width, steps = (int(v) for v in args.mlp.split(","))
            report(f"mlp {batch}x{width}, {steps} steps")
            row, extra["mlp_losses"] = bench_mlp(batch, width, steps)
            rows.append(row)
        if "mlp16" in ops:
            batch, width, steps = (int(v) for v in args.mlp16.split(","))
            report(f"mlp16 {batch}x{width}, {steps} steps")
            row, extra["mlp16_losses"] = bench_mlp16(batch, width, steps)
            rows.append(row)
    print_table(rows)
    if "mlp_losses" in extra:
        losses = extra["mlp_losses"]
        print(f"MLP loss, cutlax:    {' '.join(f'{v:.5f}' for v in losses['cutlax'])}")
        print(f"MLP loss, jax.numpy: {' '.join(f'{v:.5f}' for v in losses['jax.numpy'])}")
        print(f"largest relative difference: {losses['max_rel_diff']:.2e}")
    dev = jax.devices()[0]
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": dev.device_kind, "platform": dev.platform, "jax": jax.__version__,
        "python": platform.python_version(), "commit": _commit(), "calls": args.calls,
        "batches": args.batches, "rows": [dict(dataclasses.asdict(r), ratio=r.ratio) for r in rows], **extra,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    if args.png:
        plot(record, args.png)
    return 0
