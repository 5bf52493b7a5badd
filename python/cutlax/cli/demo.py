"""``python -m cutlax demo``: the classic kernel sequence, one point per step.

Each step runs a cutlax op inside jax.jit, checks it against jax.numpy, and
times it next to the XLA expression that computes the same thing (median of
batches, see timing.py). On a machine without a GPU the same steps run the
C++ CPU twins, with smaller sizes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax.cli import jit_examples
from cutlax.cli.timing import median_seconds

_start = time.perf_counter()
STEPS = 8

# Run in a fresh interpreter: the exported artifact, with nothing but jax,
# numpy and cutlax imported, at two sizes; and the same function re-traced
# with jax.jit, for the time to a first result.
_FRESH_ARTIFACT = """
import time
import sys, jax, jax.numpy as jnp, numpy as np, cutlax
imported = time.perf_counter()
exp = jax.export.deserialize(open(sys.argv[1], "rb").read())
for rows in (8, 4096):
    x = jnp.asarray(np.random.default_rng(rows).standard_normal((rows, 256)), jnp.float32)
    b = jnp.linspace(-1, 1, 256, dtype=jnp.float32)
    out = exp.call(x, b).block_until_ready()
    if rows == 8: first = time.perf_counter() - imported
    ref = jax.nn.sigmoid(jax.nn.relu(3 * x + b))
    print(f"rows={rows}: shape {tuple(out.shape)}, max error {float(jnp.abs(out - ref).max()):.1e}")
print(f"first={first:.3f}")
"""
_FRESH_JIT = """
import time
import jax, jax.numpy as jnp, cutlax
imported = time.perf_counter()
f = jax.jit(lambda x, b: jax.nn.sigmoid(cutlax.bias_relu(cutlax.saxpy(2.0, x, x), b)))
f(jnp.ones((8, 256)), jnp.ones(256)).block_until_ready()
print(f"first={time.perf_counter() - imported:.3f}")
"""


_FRESH_JIT_KERNEL = """
import time, numpy as np, cutlax
from cutlax.cli import jit_examples
start = time.perf_counter()
jit_examples.relu(np.float32).compiled()
print(f"disk={time.perf_counter() - start:.4f} {cutlax.jit.cache_info()['disk_hits']}")
"""


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _jit_step(x, xm, bias) -> None:
    """Step 8: ReLU and bias+ReLU as runtime-compiled kernels, with the
    compile times of each cache level."""
    # A fresh cache directory, so the first compile is a real one.
    with tempfile.TemporaryDirectory() as cache:
        saved = os.environ.get("CUTLAX_CACHE_DIR")
        os.environ["CUTLAX_CACHE_DIR"] = cache
        try:
            cutlax.jit.clear_cache(disk=False)
            relu, bias_relu = jit_examples.relu(x.dtype), jit_examples.bias_relu(xm.dtype, xm.shape[1])
            cold = _seconds(relu.compiled)
            later = _seconds(bias_relu.compiled)
            again = cutlax.jit.kernel(jit_examples.SOURCE, relu.entry, grid=relu.grid, block=relu.block)
            memory = _seconds(again.compiled)  # a new kernel object, same source and entry
            disk, hits = _fresh(_FRESH_JIT_KERNEL).split()
            disk = float(disk.split("=")[1])
        finally:
            if saved is None:
                del os.environ["CUTLAX_CACHE_DIR"]
            else:
                os.environ["CUTLAX_CACHE_DIR"] = saved
    lines = jit_examples.SOURCE.strip().count("\n") + 1
    say(f"      source: cutlax/cli/jit_examples.py, {lines} lines of CUDA C++ for both kernels")
    say(f"      compile (NVRTC {cutlax.jit.nvrtc_version().split()[0]}, {cutlax.jit.arch()}): "
        f"first kernel {cold:.2f} s, a second kernel {later:.2f} s, in-memory hit {memory * 1e3:.2f} ms, "
        f"new process from disk {disk * 1e3:.0f} ms ({hits} disk hit)")
    ours, xla = jax.jit(relu), jax.jit(jax.nn.relu)
    report("jit relu(x)", ours(x), xla(x), median_seconds(ours, x), median_seconds(xla, x),
           nbytes=2 * x.nbytes)
    ours, xla = jax.jit(bias_relu), jax.jit(lambda x, b: jax.nn.relu(x + b))
    report("jit bias_relu(x, b)", ours(xm, bias), xla(xm, bias), median_seconds(ours, xm, bias),
           median_seconds(xla, xm, bias), nbytes=2 * xm.nbytes)


def _fresh(code: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"demo: the fresh process failed:\n{out.stderr[-2000:]}")
    return out.stdout


def say(text: str = "") -> None:
    print(text, flush=True)


def step(number: int, title: str, *lines: str) -> None:
    say(f"\n[{number}/{STEPS} +{time.perf_counter() - _start:5.1f}s] {title}")
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
    # Eight virtual CPU devices for the multi-device step; this has to happen
    # before JAX starts its backends, and leaves a GPU the default device.
    jax.config.update("jax_num_cpu_devices", 8)
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
         "each element's flat index comes from the 3-D layout; only the last block, the one",
         "that crosses the true end, checks it, element by element, up to the true size.")
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

    step(6, "export: compile once, ship, run later without the defining code",
         "sigmoid(bias_relu(saxpy(2, x, x), b)) is exported with symbolic shapes (rows, 256), (256,)",
         "for CPU and CUDA at once, written to a file, and run in a fresh Python process that",
         "imports only jax, numpy and cutlax (importing cutlax registers the handlers).")
    symbolic = jax.export.symbolic_shape("rows, 256")
    exp = cutlax.export.export(
        lambda x, b: jax.nn.sigmoid(cutlax.bias_relu(cutlax.saxpy(2.0, x, x), b)),
        jax.ShapeDtypeStruct(symbolic, f32), jax.ShapeDtypeStruct((256,), f32),
        platforms=("cpu", "cuda"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "composed.jax_export")
        with open(path, "wb") as f:
            f.write(exp.serialize())
        say(f"      artifact: {os.path.getsize(path)} bytes, platforms {exp.platforms}, "
            f"inputs {[str(a) for a in exp.in_avals]}")
        lines = _fresh(_FRESH_ARTIFACT, path).splitlines()
    for line in lines[:-1]:
        say(f"      fresh process, {line}")
        if float(line.rsplit(" ", 1)[1]) > 1e-6:
            raise SystemExit("demo: the exported artifact disagrees with jax.numpy")
    first_artifact = float(lines[-1].split("=")[1])
    first_jit = float(_fresh(_FRESH_JIT).split("=")[1])
    say(f"      new process, after the imports, to a first result: artifact {first_artifact * 1e3:.0f} ms "
        f"(deserialize + compile), re-tracing with jit {first_jit * 1e3:.0f} ms (trace + compile)")

    devices = jax.devices()
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    shard = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    step(7, f"many devices: vector_add under jax.shard_map over {len(devices)} {devices[0].platform} device(s)",
         "Each device runs the same kernel on its own shard; JAX moves the data. The result",
         "stays sharded, one block per device, and varies over the mesh axis as its inputs do.")
    xs, ys = jax.device_put(x, shard), jax.device_put(y, shard)
    mapped = jax.jit(jax.shard_map(cutlax.vector_add, mesh=mesh, in_specs=(shard.spec, shard.spec),
                                   out_specs=shard.spec))
    out = mapped(xs, ys)
    say(f"      result sharding {out.sharding.spec}, {len(out.addressable_shards)} shards of "
        f"{out.addressable_shards[0].data.shape[0]} elements")
    xla = jax.jit(lambda a, b: a + b)
    report("shard_map(vector_add)", out, xla(xs, ys), median_seconds(mapped, xs, ys),
           median_seconds(xla, xs, ys), nbytes=3 * 4 * n)

    step(8, "cutlax.jit: the same kernels from a Python string, compiled at run time",
         "NVRTC compiles the CUDA C++ source when the op is first traced; the kernel is a",
         "cutlax.Op like the built-ins (shape, grad, vmap, sharding, export), and the CUBIN",
         "is cached in the process and on disk. On CPU the kernel's cpu= version runs.")
    if cutlax.jit.nvrtc_version() == "not found":
        say("      skipped: NVRTC is not installed (pip install nvidia-cuda-nvrtc, or the CUDA toolkit)")
    else:
        _jit_step(x, xm, bias)

    say(f"\ndone in {time.perf_counter() - _start:.1f}s: every step matched jax.numpy.")
    return 0
