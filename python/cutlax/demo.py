"""``python -m cutlax demo``: the classic kernel sequence, one point per step.

Each step runs a cutlax op inside jax.jit, checks it against jax.numpy, and
times it next to the XLA expression that computes the same thing (median of
batches, see _timing.py). On a machine without a GPU the same steps run the
C++ CPU twins, with smaller sizes.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax._timing import median_seconds

_start = time.perf_counter()


def say(text: str = "") -> None:
    print(text, flush=True)


def step(number: int, title: str, *lines: str) -> None:
    say(f"\n[{number}/5 +{time.perf_counter() - _start:5.1f}s] {title}")
    for line in lines:
        say(f"      {line}")


def report(name, ours, ref, t_ours, t_xla, nbytes=None, flops=None):
    ours32, ref32 = np.asarray(ours, np.float32), np.asarray(ref, np.float32)
    denom = max(float(np.linalg.norm(ref32)), 1e-30)
    err = float(np.linalg.norm(ours32 - ref32)) / denom
    rate = ""
    if nbytes:
        rate = f"   {nbytes / t_ours / 1e9:8.1f} GB/s vs XLA {nbytes / t_xla / 1e9:8.1f} GB/s"
    if flops:
        rate = f"   {flops / t_ours / 1e12:8.2f} TFLOP/s vs XLA {flops / t_xla / 1e12:8.2f} TFLOP/s"
    say(f"      {name:<22} rel. error {err:.1e}   {t_ours * 1e3:8.3f} ms vs XLA {t_xla * 1e3:8.3f} ms{rate}")
    if not err <= 1e-5:
        raise SystemExit(f"demo: {name} disagrees with jax.numpy (relative error {err:.2e})")


def main(argv=None) -> int:
    on_gpu = jax.default_backend() == "gpu"
    p = argparse.ArgumentParser(prog="python -m cutlax demo", description=__doc__.splitlines()[0])
    p.add_argument("--log2-size", type=int, default=26 if on_gpu else 20)
    p.add_argument("--gemm-size", type=int, default=2048 if on_gpu else 256)
    args = p.parse_args(argv)
    n = 2**args.log2_size
    f32 = jnp.float32
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    x, y = (jax.random.normal(k, (n,), f32) for k in keys[:2])
    say(f"cutlax {cutlax.__version__} demo on {jax.devices()[0].device_kind} "
        f"({jax.default_backend()}), jax {jax.__version__}; arrays of 2^{args.log2_size} float32")

    step(1, "vector_add: a 1-D array seen as a 3-D CuTe tensor",
         "(elements_per_thread, threads_per_block, num_blocks): each thread copies its run of",
         "A and B into registers (128-bit loads), adds, and copies the run out; the last block",
         "is predicated, so sizes that are not whole blocks need no padding copy.")
    ours, xla = jax.jit(cutlax.vector_add), jax.jit(lambda a, b: a + b)
    report("vector_add(a, b)", ours(x, y), xla(x, y), median_seconds(ours, x, y),
           median_seconds(xla, x, y), nbytes=3 * 4 * n)

    step(2, "saxpy: a static scalar, then a dynamic one",
         "A Python-number alpha is an FFI attribute, baked into the compiled program: a new",
         "value compiles a new program. A JAX-array alpha is an operand: traced values work,",
         "and one program serves every value.")
    static = jax.jit(lambda x, y, alpha: cutlax.saxpy(alpha, x, y), static_argnums=2)
    dynamic = jax.jit(lambda x, y, alpha: cutlax.saxpy(alpha, x, y))
    for alpha in (2.5, -1.0):
        static(x, y, alpha)
        dynamic(x, y, alpha)
    say(f"      static alpha: {static._cache_size()} compiled programs for 2 values; "
        f"dynamic alpha: {dynamic._cache_size()}")
    xla = jax.jit(lambda x, y: 2.5 * x + y)
    report("saxpy(2.5, x, y)", static(x, y, 2.5), xla(x, y), median_seconds(static, x, y, 2.5),
           median_seconds(xla, x, y), nbytes=3 * 4 * n)
    report("saxpy(traced, x, y)", dynamic(x, y, 2.5), xla(x, y), median_seconds(dynamic, x, y, 2.5),
           median_seconds(xla, x, y), nbytes=3 * 4 * n)

    step(3, "relu: flat indexing with a bounds check",
         "global index = block * block_dim + thread; a thread whose run passes the end takes",
         "the scalar path, element by element, up to the true size.")
    ours, xla = jax.jit(cutlax.relu), jax.jit(jax.nn.relu)
    report("relu(x)", ours(x), xla(x), median_seconds(ours, x), median_seconds(xla, x), nbytes=2 * 4 * n)

    width = 1024
    rows = n // width
    xm = x.reshape(rows, width)
    bias = jax.random.normal(keys[2], (width,), f32)
    step(4, f"bias_relu: fusion (x of {rows} x {width}, bias over the last axis)",
         "One kernel loads x, adds bias[col], takes the max and stores once: 2 passes over",
         "the array. Unfused (x + bias, then relu) writes and re-reads an intermediate: 4.")
    fused = jax.jit(cutlax.bias_relu)
    unfused = jax.jit(lambda x, b: cutlax.relu(cutlax.vector_add(x, jnp.broadcast_to(b, x.shape))))
    xla = jax.jit(lambda x, b: jax.nn.relu(x + b))
    ref = xla(xm, bias)
    t_xla = median_seconds(xla, xm, bias)
    say(f"      bytes moved: fused {2 * 4 * n / 1e6:.0f} MB, unfused {5 * 4 * n / 1e6:.0f} MB "
        "(the broadcast bias is materialised too)")
    report("bias_relu (fused)", fused(xm, bias), ref, median_seconds(fused, xm, bias), t_xla, nbytes=2 * 4 * n)
    report("add, relu (unfused)", unfused(xm, bias), ref, median_seconds(unfused, xm, bias), t_xla,
           nbytes=5 * 4 * n)

    s = args.gemm_size
    a = jax.random.normal(keys[3], (s, s), f32)
    b = jax.random.normal(keys[0], (s, s), f32)
    step(5, f"tiled GEMM: a 2-D launch ({s} x {s} x {s}, float32)",
         "Each block owns a 128 x 128 tile of C; tiles of A and B go through shared memory two",
         "stages deep, each thread accumulates 8 x 8 outputs in registers. True FP32,",
         "so it is compared with jnp.matmul(precision='highest').")
    ours = jax.jit(lambda a, b: cutlax.gemm(a, b, impl="tiled"))
    xla = jax.jit(lambda a, b: jnp.matmul(a, b, precision="highest"))
    report("gemm(a, b)", ours(a, b), xla(a, b), median_seconds(ours, a, b), median_seconds(xla, a, b),
           flops=2.0 * s**3)

    say(f"\ndone in {time.perf_counter() - _start:.1f}s: every step matched jax.numpy.")
    return 0
