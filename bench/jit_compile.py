"""cutlax.jit compile latency at each cache level, in fresh processes.

    python3 bench/jit_compile.py [--repeats 5] [--json FILE]

Each repeat starts new Python processes with an empty cache directory and
measures, with the wall clock around ``Kernel.compiled()``:
  cold, prelude only    the first kernel of a process, using only the prelude's tensor views
  cold, cute/tensor.hpp the first kernel of a process that includes CuTe's algorithms
  later, no PCH         a second, different kernel right after the first
  later, PCH            a third kernel once the precompiled prelude is ready
  in-memory hit         a new kernel object with the same source, same process
  disk hit              the first kernel again, in a new process
and, apart, the first ``cutlax.jit.arch()`` of a process (a CUDA driver query).
Medians, with the range, are printed; bench/RESULTS.md records runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

SOURCES = r'''
using cutlax::jit::Tensor;

template <class T>
__global__ void relu(Tensor<const T, 1> x, Tensor<T, 1> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) < T(0) ? T(0) : x(i);
}

template <class T, int Width>
__global__ void bias_relu(Tensor<const T, 2> x, Tensor<const T, 1> bias, Tensor<T, 2> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i / Width, i % Width) = cute::max(x(i / Width, i % Width) + bias(i % Width), T(0));
}

__global__ void saxpy(Tensor<const float, 0> a, Tensor<const float, 1> x, Tensor<const float, 1> y,
                      Tensor<float, 1> out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) out(i) = a(0) * x(i) + y(i);
}
'''

# A kernel that uses CuTe's partitioning and copy algorithms, so it includes
# <cute/tensor.hpp> itself.
ALGORITHM_SOURCE = r'''
#include <cute/tensor.hpp>
using cutlax::jit::Tensor;

template <class T>
__global__ void copy_tiles(Tensor<const T, 1> x, Tensor<T, 1> y) {
  // This block's tile of 1024 elements, 4 per thread.
  auto tile = cute::make_shape(cute::Int<1024>{});
  auto threads = cute::make_layout(cute::Int<256>{});
  auto tx = cute::local_partition(cute::local_tile(x, tile, cute::make_coord(blockIdx.x)), threads, threadIdx.x);
  auto ty = cute::local_partition(cute::local_tile(y, tile, cute::make_coord(blockIdx.x)), threads, threadIdx.x);
  cute::copy(tx, ty);
}
'''

_IN_PROCESS = textwrap.dedent('''
    import json, sys, time
    import cutlax
    sources, algorithms = sys.argv[1], sys.argv[2]

    def kernel(source, entry):
        return cutlax.jit.kernel(source, entry, grid=1, block=256)

    def seconds(k):
        start = time.perf_counter()
        k.compiled()
        return time.perf_counter() - start

    # The target architecture comes from the CUDA driver once per process
    # (~0.2 s to initialise it on the H200, nothing without a GPU); under
    # JAX on a GPU that is paid when JAX starts, so it is kept out of the
    # compile times.
    start = time.perf_counter()
    cutlax.jit.arch()
    out = {"architecture query": time.perf_counter() - start}
    if sys.argv[3] == "algorithms":
        out["cold, cute/tensor.hpp"] = seconds(kernel(algorithms, "copy_tiles<float>"))
    elif sys.argv[3] == "disk":
        out["disk hit"] = seconds(kernel(sources, "relu<float>"))
        assert cutlax.jit.cache_info()["disk_hits"] == 1
    else:
        out["cold, prelude only"] = seconds(kernel(sources, "relu<float>"))
        out["later, no PCH"] = seconds(kernel(sources, "bias_relu<float, 96>"))
        deadline = time.time() + 60
        while cutlax.jit.cache_info()["pch_enabled"] and not cutlax.jit.cache_info()["pch_ready"]:
            if time.time() > deadline:
                break
            time.sleep(0.05)
        out["later, PCH"] = seconds(kernel(sources, "saxpy"))
        out["PCH used"] = cutlax.jit.cache_info()["pch_compiles"]
        hits = [seconds(kernel(sources, "relu<float>")) for _ in range(100)]
        out["in-memory hit"] = sorted(hits)[len(hits) // 2]
    print(json.dumps(out))
''')

ORDER = ["cold, prelude only", "cold, cute/tensor.hpp", "later, no PCH", "later, PCH", "in-memory hit",
         "disk hit", "architecture query"]


def run(mode: str, cache: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _IN_PROCESS, SOURCES, ALGORITHM_SOURCE, mode],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "CUTLAX_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu"})
    if out.returncode != 0:
        raise SystemExit(f"jit_compile: the {mode} process failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", help="write the measurements to this file")
    args = p.parse_args(argv)
    samples: dict[str, list[float]] = {k: [] for k in ORDER}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            for mode in ("first", "disk"):
                for key, value in run(mode, cache).items():
                    samples.setdefault(key, []).append(value)
        with tempfile.TemporaryDirectory() as cache:
            for key, value in run("algorithms", cache).items():
                samples[key].append(value)
    import cutlax

    print(f"cutlax.jit compile latency, NVRTC {cutlax.jit.nvrtc_version()}, target {cutlax.jit.arch()}, "
          f"{os.cpu_count()} cores, {args.repeats} repeats (median [min, max])")
    for key in ORDER:
        values = samples[key]
        scale, unit = (1e3, "ms") if statistics.median(values) < 0.1 else (1.0, "s")
        print(f"  {key:<22} {statistics.median(values) * scale:8.3f} {unit}  "
              f"[{min(values) * scale:.3f}, {max(values) * scale:.3f}]")
    print(f"  the PCH was used in {sum(samples['PCH used'])} of {args.repeats} 'later, PCH' compiles")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
