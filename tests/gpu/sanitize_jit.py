"""cutlax.jit kernels at tail sizes, for compute-sanitizer (scripts/gpu_check.sh,
step sanitize): the part of cutlax that the handler table, and so
tests/gpu/sanitize_driver.cpp, does not reach. The runtime-compiled kernels
launch through the FFI target cutlax_jit_v2 (src/jit), which builds each
kernel's Tensor parameters byte for byte, encodes its TMA descriptors,
evaluates the launch expressions (clusters among them) and passes the dynamic
shared memory; a mistake there is an out-of-bounds access that memcheck sees.

    python3 tests/gpu/sanitize_jit.py                 # the cases, checked against NumPy
    python3 tests/gpu/sanitize_jit.py --compile-only  # NVRTC only: no GPU needed
    python3 tests/gpu/sanitize_jit.py --control       # a planted bad read (memcheck only)
    python3 tests/gpu/sanitize_jit.py --only transpose,cluster   # the kernels whose entry holds one

Under the sanitizer: every kernel here is in namespace cutlax_sanitize, so
``--kernel-name kns=cutlax_sanitize`` (a substring of the mangled name)
checks them and leaves XLA's own kernels alone; --compile-only asserts that
each lowered name holds the substring, and --control, run under memcheck,
must be reported, which proves the filter matched an NVRTC-loaded kernel.

The environment, set before JAX starts, keeps the sanitizer's view exact and
cheap: XLA_PYTHON_CLIENT_ALLOCATOR=platform gives every array its own
allocation of its exact size (no 75 % pool for initcheck to shadow, and a read
past an array's end leaves its allocation), and JAX_PLATFORMS=cuda fails
rather than run the kernels' CPU versions. Inputs come from the host
(device_put) and each jitted function is the kernel call alone: a kernel that
XLA runs uninstrumented under the filter would write memory initcheck then
believes uninitialised.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# --compile-only lowers for CUDA on any machine, with JAX's CPU backend.
os.environ.setdefault("JAX_PLATFORMS", "cpu" if "--compile-only" in sys.argv else "cuda")
os.environ.setdefault("CUTLAX_JIT_PCH", "0")  # no background compile thread

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import cutlax  # noqa: E402
from cutlax.cli import jit_examples  # noqa: E402

NAMESPACE = "cutlax_sanitize"  # the --kernel-name substring (scripts/gpu_check.sh)

# The kernels the demo and the benchmark run (python/cutlax/cli/jit_examples.py),
# then kernels for what those do not use: a 0-d scalar, a 2-D grid, dynamic
# shared memory with barriers, rank 3 and two results.
SOURCE = f"namespace {NAMESPACE} {{\n{jit_examples.SOURCE}\n" + r"""
__global__ void saxpy(Tensor<const float, 0> alpha, Tensor<const float, 1> x,
                      Tensor<const float, 1> y, Tensor<float, 1> out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) out(i) = alpha(0) * x(i) + y(i);
}

// c = a @ b, one thread per element of 16 x 16 tiles.
__global__ void matmul(Tensor<const float, 2> a, Tensor<const float, 2> b, Tensor<float, 2> c) {
  const int64_t row = int64_t(blockIdx.y) * 16 + threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * 16 + threadIdx.x;
  const int64_t m = cute::size<0>(a), k = cute::size<1>(a), n = cute::size<1>(b);
  if (row >= m || col >= n) return;
  float sum = 0;
  for (int64_t p = 0; p < k; ++p) sum += a(row, p) * b(p, col);
  c(row, col) = sum;
}

// One block per row: strided partial sums, then a tree in dynamic shared
// memory (blockDim.x floats, the launch's shared_mem).
__global__ void row_sums(Tensor<const float, 2> x, Tensor<float, 1> sums) {
  extern __shared__ float partial[];
  const int64_t row = blockIdx.x, cols = cute::size<1>(x);
  float sum = 0;
  for (int64_t col = threadIdx.x; col < cols; col += blockDim.x) sum += x(row, col);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums(row) = partial[0];
}

// Rank 3 in, two results out, indexed in memory order.
template <class T>
__global__ void min_max(Tensor<const T, 3> a, Tensor<const T, 3> b, Tensor<T, 3> lo, Tensor<T, 3> hi) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= cute::size(a)) return;
  const T x = cutlax::jit::flat(a)(i), y = cutlax::jit::flat(b)(i);
  cutlax::jit::flat(lo)(i) = x < y ? x : y;
  cutlax::jit::flat(hi)(i) = x < y ? y : x;
}

// The control: a read at address 16 + (x's address mod 16), which no
// allocation holds. Only ever run under memcheck: elsewhere it faults.
__global__ void oob_control(Tensor<const float, 1> x, Tensor<float, 1> y) {
  const unsigned long long bad =
      16 + (reinterpret_cast<unsigned long long>(cute::raw_pointer_cast(x.data())) & 15);
  if (threadIdx.x == 0) y(0) = *reinterpret_cast<const volatile float*>(bad);
}
}  // namespace cutlax_sanitize
"""

# The Hopper kernels: examples/jit_tma's transpose (two TMA descriptors) and
# a cluster launch. hopper.hpp comes first, so the example's own #include of
# it, inside the namespace, is a no-op.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "jit_tma"))
import transpose as tma_transpose  # noqa: E402

HOPPER_SOURCE = (f"#include <cutlax/jit/hopper.hpp>\nnamespace {NAMESPACE} {{\n{tma_transpose.SOURCE}\n" + r"""
// y[b] = the block's rank in its cluster.
__global__ void cluster_ranks(Tensor<const float, 1> x, Tensor<float, 1> y) {
  if (threadIdx.x == 0) y(blockIdx.x) = float(cute::block_rank_in_cluster());
}
}  // namespace cutlax_sanitize
""")

THREADS = jit_examples.THREADS
SIZES = (0, 1, 7, 255, 257, 1023, 1025, 4099, 65537)  # around the 16-byte run and the block
FLOAT_TYPES = (jnp.float32, jnp.float16, jnp.bfloat16)


def values(rng, shape, dtype):
    """Multiples of 1/64 in [-2, 2]: exact in every float type, and so are
    their sums and products in float32, so results compare exactly."""
    return (rng.integers(-128, 129, size=shape) / 64).astype(dtype)


def bias_relu_reference(x, b):
    return [np.maximum(x.astype(np.float32) + b.astype(np.float32), 0).astype(x.dtype)]


def kernel(entry, source=SOURCE, **launch):
    return cutlax.jit.kernel(source, f"{NAMESPACE}::{entry}", **launch)


class Case:
    def __init__(self, k, inputs, outputs, reference, what):
        self.kernel, self.inputs, self.outputs, self.reference, self.what = k, inputs, outputs, reference, what

    def function(self):
        """The kernel call alone, jitted; it returns a tuple of the results."""
        outs = tuple(jax.ShapeDtypeStruct(o.shape, o.dtype) for o in self.outputs)
        out = outs[0] if len(outs) == 1 else outs  # one result: an array, as users write it

        def call(*xs):
            results = self.kernel(*xs, out=out)
            return tuple(results) if isinstance(results, (tuple, list)) else (results,)

        return jax.jit(call)

    def lower(self):
        """The program for CUDA, without running it (no GPU needed)."""
        return self.function().trace(*self.inputs).lower(lowering_platforms=("cuda",))

    def run(self):
        """Runs the kernel on host-made inputs; results against the reference."""
        got = self.function()(*(jax.device_put(x) for x in self.inputs))
        for i, (g, want) in enumerate(zip(got, self.reference(*self.inputs))):
            g, want = np.asarray(g), np.asarray(want)
            assert g.dtype == want.dtype and g.shape == want.shape, f"result {i}: {g.dtype}{g.shape}"
            np.testing.assert_array_equal(g.astype(np.float32), want.astype(np.float32), err_msg=f"result {i}")


def cases(rng):
    """(name, Case) in order; a name groups cases of one compiled kernel."""
    out = []
    # The examples' kernels with the examples' launch geometry (elements per
    # thread: a 16-byte run, or one where a width is off the run).
    for dtype in FLOAT_TYPES:
        per_block = THREADS * jit_examples.elements_per_thread(dtype)
        relu = kernel(f"relu<{cutlax.jit.cpp_type(dtype)}>", block=THREADS,
                      grid=lambda x, per_block=per_block: cutlax.jit.cdiv(x.size, per_block))
        for n in SIZES:
            x = values(rng, (n,), dtype)
            out.append((relu.entry, Case(relu, [x], [x], lambda x: [np.maximum(x, 0)], f"({n},)")))
    for dtype, width in ((jnp.float32, 96), (jnp.float32, 7), (jnp.bfloat16, 96), (jnp.float16, 24)):
        per_block = THREADS * jit_examples.elements_per_thread(dtype, width)
        bias_relu = kernel(f"bias_relu<{cutlax.jit.cpp_type(dtype)}, {width}>", block=THREADS,
                           grid=lambda x, b, per_block=per_block: cutlax.jit.cdiv(x.size, per_block))
        for rows in (1, 3, 257):
            x, b = values(rng, (rows, width), dtype), values(rng, (width,), dtype)
            out.append((bias_relu.entry, Case(bias_relu, [x, b], [x], bias_relu_reference, f"({rows}, {width})")))
    saxpy = kernel("saxpy", block=128, grid=lambda a, x, y: cutlax.jit.cdiv(x.size, 128))
    for n in (1, 1000, 4099):
        for alpha in (2.5, -0.5):
            x, y = values(rng, (n,), np.float32), values(rng, (n,), np.float32)
            out.append((saxpy.entry, Case(saxpy, [np.float32(alpha), x, y], [x],
                                          lambda a, x, y: [a * x + y], f"({n},) alpha={alpha}")))
    matmul = kernel("matmul", block=(16, 16),
                    grid=lambda a, b: (cutlax.jit.cdiv(b.shape[1], 16), cutlax.jit.cdiv(a.shape[0], 16)))
    for m, k, n in ((1, 1, 1), (17, 5, 33), (100, 70, 33)):
        a, b = values(rng, (m, k), np.float32), values(rng, (k, n), np.float32)
        c = np.zeros((m, n), np.float32)
        out.append((matmul.entry, Case(matmul, [a, b], [c], lambda a, b: [a @ b], f"({m}, {k}) @ ({k}, {n})")))
    row_sums = kernel("row_sums", block=128, grid=lambda x: x.shape[0], shared_mem=128 * 4)
    for rows, cols in ((1, 1), (5, 127), (3, 129), (2, 1000)):
        x = values(rng, (rows, cols), np.float32)
        out.append((row_sums.entry, Case(row_sums, [x], [x[:, 0]], lambda x: [x.sum(axis=1)], f"({rows}, {cols})")))
    for dtype in (jnp.float32, jnp.bfloat16):
        min_max = kernel(f"min_max<{cutlax.jit.cpp_type(dtype)}>", block=THREADS,
                         grid=lambda a, b: cutlax.jit.cdiv(a.size, THREADS))
        for shape in ((1, 1, 1), (2, 3, 5), (4, 33, 65)):
            a, b = values(rng, shape, dtype), values(rng, shape, dtype)
            out.append((min_max.entry, Case(min_max, [a, b], [a, a],
                                            lambda a, b: [np.minimum(a, b), np.maximum(a, b)], str(shape))))
    for dtype in (jnp.float32, jnp.bfloat16):
        tile = 128 // np.dtype(dtype).itemsize
        transpose = kernel(
            f"transpose<{cutlax.jit.cpp_type(dtype)}>", HOPPER_SOURCE, block=tma_transpose.THREADS,
            grid=lambda x, tile=tile: (cutlax.jit.cdiv(x.shape[1], tile), cutlax.jit.cdiv(x.shape[0], tile)),
            tma=[cutlax.jit.tma(0, (tile, tile), swizzle=128), cutlax.jit.tma(1, (tile, tile), swizzle=128)])
        for shape in ((8, 8), (72, 40), (1000, 136)):
            x = values(rng, shape, dtype)
            out.append((transpose.entry, Case(transpose, [x], [x.T.copy()], lambda x: [x.T], str(shape))))
    ranks = kernel("cluster_ranks", HOPPER_SOURCE, block=32, grid=lambda x: x.size, cluster=2)
    for n in (2, 64):
        x = values(rng, (n,), np.float32)
        out.append((ranks.entry, Case(ranks, [x], [x], lambda x: [(np.arange(x.size) % 2).astype(np.float32)],
                                      f"({n},) cluster 2")))
    return out


def control():
    """Launches oob_control once; memcheck must report its read. Under
    --destroy-on-device-error kernel the kernel is cut short and the call
    returns; with the default (context) the call fails. Exits 3 either way."""
    k = kernel("oob_control", block=32, grid=1)
    x = np.ones(1024, np.float32)
    print("sanitize_jit: launching the control kernel (memcheck must report an invalid read)", flush=True)
    try:
        y = jax.jit(lambda x: k(x, out=jax.ShapeDtypeStruct((1,), np.float32)))(jax.device_put(x))
        jax.block_until_ready(y)
        print("sanitize_jit: the control call returned (its kernel cut short, or not under memcheck)", flush=True)
    except Exception as error:  # noqa: BLE001 - a broken context: any error ends the run
        print(f"sanitize_jit: the control call failed: {type(error).__name__}: {str(error)[:300]}", flush=True)
    os._exit(3)  # no teardown: the CUDA context may be unusable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--compile-only", action="store_true", help="compile every kernel with NVRTC; no GPU")
    mode.add_argument("--control", action="store_true", help="run the planted bad read (under memcheck only)")
    parser.add_argument("--only", default="", help="comma-separated substrings: the kernels whose entry holds one")
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]

    def selected(all_cases):
        return [(n, c) for n, c in all_cases if not wanted or any(w in n for w in wanted)]
    rng = np.random.default_rng(19)

    if args.compile_only:
        all_cases = selected(cases(rng))
        kernels = {c.kernel.entry: c.kernel for _, c in all_cases}
        kernels["oob_control"] = kernel("oob_control", block=32, grid=1)
        missing = []
        for entry, k in kernels.items():
            _, lowered = k.compiled()
            print(f"{entry}: {lowered}")
            if NAMESPACE not in lowered:
                missing.append(entry)
        for _, case in all_cases:
            case.lower()
        print(f"sanitize_jit: {len(kernels)} kernels compiled for {cutlax.jit.arch()}, {len(all_cases)} cases "
              f"lowered for CUDA, {len(missing)} kernels without '{NAMESPACE}' in the mangled name {missing or ''}")
        return 1 if missing else 0

    try:
        devices = jax.devices()
    except Exception as error:  # noqa: BLE001 - JAX_PLATFORMS=cuda without a CUDA backend
        print(f"sanitize_jit: needs JAX's CUDA backend (JAX_PLATFORMS={os.environ['JAX_PLATFORMS']}): "
              f"{type(error).__name__}: {error}")
        return 1
    if devices[0].platform != "gpu":
        print(f"sanitize_jit: needs a GPU, JAX has {devices}")
        return 1
    if args.control:
        control()

    start = time.time()
    failed, launches, per_kernel = 0, 0, {}
    for name, case in selected(cases(rng)):
        launches += np.size(case.outputs[0]) > 0  # an empty grid launches nothing
        tally = per_kernel.setdefault(name, [0, 0])
        tally[0] += 1
        try:
            case.run()
        except Exception as error:  # noqa: BLE001 - reported per case, the run goes on
            failed += 1
            tally[1] += 1
            print(f"FAILED: {name} {case.what}: {type(error).__name__}: {error}", flush=True)
    for name, (count, bad) in per_kernel.items():
        print(f"{name}: {count} cases, {bad} failed")
    print(f"sanitize_jit: {sum(c for c, _ in per_kernel.values())} cases ({launches} launches), {failed} failed, "
          f"{time.time() - start:.1f} s, compiles {cutlax.jit.cache_info()['misses']} "
          f"(disk hits {cutlax.jit.cache_info()['disk_hits']})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
