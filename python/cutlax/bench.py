"""``python -m cutlax bench``: every op against the equivalent XLA expression.

Both sides are measured in the same run with the same method (_timing.py) and
reported as time, achieved bandwidth (elementwise) or FLOP/s (GEMM), and the
ratio cutlax / XLA (> 1 means cutlax is faster). bench/README.md describes the
method; bench/RESULTS.md records H200 runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax._timing import median_seconds


@dataclasses.dataclass
class Row:
    op: str
    dtype: str
    size: str
    metric: str  # "GB/s" or "TFLOP/s"
    cutlax_s: float
    xla_s: float
    cutlax_rate: float
    xla_rate: float
    xla_expr: str

    @property
    def ratio(self) -> float:
        return self.xla_s / self.cutlax_s


def _inputs(n, dtype, count, seed=0):
    keys = jax.random.split(jax.random.PRNGKey(seed), count)
    return [jax.random.normal(k, (n,), jnp.float32).astype(dtype) for k in keys]


BIAS_WIDTH = 4096


def _two(n, dtype):
    return tuple(_inputs(n, dtype, 2))


def _one(n, dtype):
    return tuple(_inputs(n, dtype, 1))


def _rows_and_bias(n, dtype):
    (x,) = _inputs(n, dtype, 1)
    return x.reshape(n // BIAS_WIDTH, BIAS_WIDTH), _inputs(BIAS_WIDTH, dtype, 1, seed=1)[0]


ELEMENTWISE = {
    # name: (cutlax fn, XLA fn, XLA expression, inputs(n, dtype), arrays of n moved)
    "vector_add": (cutlax.vector_add, lambda a, b: a + b, "a + b", _two, 3),
    "saxpy": (lambda x, y: cutlax.saxpy(2.5, x, y), lambda x, y: 2.5 * x + y, "2.5 * x + y", _two, 3),
    "relu": (cutlax.relu, jax.nn.relu, "jax.nn.relu(x)", _one, 2),
    "bias_relu": (cutlax.bias_relu, lambda x, b: jax.nn.relu(x + b), "jax.nn.relu(x + bias)",
                  _rows_and_bias, 2),
}


def bench_elementwise(op, n, dtype, calls, batches):
    name = jnp.dtype(dtype).name
    ours, theirs, expr, make_inputs, moved = ELEMENTWISE[op]
    args = make_inputs(n, dtype)
    ours_j, theirs_j = jax.jit(ours), jax.jit(theirs)
    np.testing.assert_allclose(
        np.asarray(ours_j(*args), np.float32), np.asarray(theirs_j(*args), np.float32), rtol=2e-2, atol=2e-2
    )
    nbytes = moved * n * jnp.dtype(dtype).itemsize
    t_ours = median_seconds(ours_j, *args, calls=calls, batches=batches)
    t_xla = median_seconds(theirs_j, *args, calls=calls, batches=batches)
    return Row(op, name, f"2^{int(np.log2(n))}" if n & (n - 1) == 0 else str(n), "GB/s",
               t_ours, t_xla, nbytes / t_ours / 1e9, nbytes / t_xla / 1e9, expr)


def bench_gemm(size, calls, batches):
    m = n = k = size
    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.normal(ka, (m, k), jnp.float32)
    b = jax.random.normal(kb, (k, n), jnp.float32)
    flops = 2.0 * m * n * k
    ours = jax.jit(lambda a, b: cutlax.gemm(a, b, impl="tiled"))
    t_ours = median_seconds(ours, a, b, calls=calls, batches=batches)
    rows = []
    for label, precision in (("highest", "highest"), ("default", None)):
        theirs = jax.jit(lambda a, b, p=precision: jnp.matmul(a, b, precision=p))
        t_xla = median_seconds(theirs, a, b, calls=calls, batches=batches)
        rows.append(Row("gemm tiled", "float32", f"{size}^3", "TFLOP/s", t_ours, t_xla,
                        flops / t_ours / 1e12, flops / t_xla / 1e12,
                        f"jnp.matmul precision={label}"))
    return rows


def print_table(rows):
    header = f"{'op':<12}{'dtype':<10}{'size':<9}{'cutlax':>12}{'XLA':>12}  {'unit':<8}{'ratio':>7}  XLA expression"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r.op:<12}{r.dtype:<10}{r.size:<9}{r.cutlax_rate:>12.1f}{r.xla_rate:>12.1f}  "
              f"{r.metric:<8}{r.ratio:>7.3f}  {r.xla_expr}")


def main(argv=None) -> int:
    on_gpu = jax.default_backend() == "gpu"
    p = argparse.ArgumentParser(prog="python -m cutlax bench", description=__doc__.splitlines()[0])
    p.add_argument("--ops", default="vector_add,saxpy,relu,bias_relu,gemm")
    p.add_argument("--log2-size", type=int, default=28 if on_gpu else 22,
                   help="elementwise size, 2**N elements (default 28 on GPU, 22 on CPU)")
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--gemm-size", type=int, default=4096 if on_gpu else 512)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args(argv)

    ops = args.ops.split(",")
    rows = []
    n = 2**args.log2_size
    for op in ops:
        if op == "gemm":
            print(f"gemm {args.gemm_size}^3 ...", file=sys.stderr, flush=True)
            rows += bench_gemm(args.gemm_size, args.calls, args.batches)
            continue
        if op not in ELEMENTWISE:
            p.error(f"unknown op {op!r}; choose from {', '.join(list(ELEMENTWISE) + ['gemm'])}")
        for dtype in args.dtypes.split(","):
            print(f"{op} {dtype} 2^{args.log2_size} ...", file=sys.stderr, flush=True)
            rows.append(bench_elementwise(op, n, jnp.dtype(dtype), args.calls, args.batches))
    print_table(rows)
    if args.json:
        dev = jax.devices()[0]
        record = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": dev.device_kind, "platform": dev.platform,
            "jax": jax.__version__, "python": platform.python_version(),
            "rows": [dict(dataclasses.asdict(r), ratio=r.ratio) for r in rows],
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    return 0
