"""Resources stay flat under long use: many calls of every op, repeated
``load_library`` of the same and of different libraries, many runtime-compiled
kernels; and a CUDA launch that fails is a Python error after which the
process carries on. Host memory is the resident set (/proc/self/statm),
device memory XLA's allocator's ``bytes_in_use``; each bound is stated with
the test, and is far below what a per-call leak of even a few hundred bytes
would add. Each test prints what it measured (pytest -s shows it)."""

from __future__ import annotations

import os
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from cutlax import _library

from conftest import DEVICES, GPUS

from conftest import HAVE_NVRTC  # noqa: E402
MB = 1 << 20


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def device_bytes(device) -> int:
    stats = device.memory_stats()
    return stats["bytes_in_use"] if stats else 0


def _every_op_step(x, w, b):
    """Each op once (eight calls: saxpy with a static and a 0-d alpha): a chain
    whose result depends on all."""
    y = cutlax.relu(cutlax.saxpy(0.5, x, x))
    y = cutlax.vector_add(y, cutlax.bias_relu(x, b))
    y = cutlax.saxpy(jnp.float32(0.25), cutlax.relu_backward(y, x), y)
    dx, dbias = cutlax.bias_relu_backward(y, x)
    return cutlax.gemm(dx + dbias, w, bias=b, activation="relu")


@pytest.mark.parametrize("platform_device", DEVICES, ids=lambda d: d.platform)
def test_ten_thousand_calls_keep_memory_flat(platform_device):
    calls, warmup = 10_000, 200
    device = platform_device
    with jax.default_device(device):
        x = jnp.linspace(-1, 1, 64 * 64, dtype=jnp.float32).reshape(64, 64)
        w = jnp.eye(64, dtype=jnp.float32)
        b = jnp.linspace(-0.5, 0.5, 64, dtype=jnp.float32)
        step = jax.jit(_every_op_step)
        for _ in range(warmup):  # compiles, and lets the allocators reach their steady state
            out = step(x, w, b)
        out.block_until_ready()
        rss, dev = resident_bytes(), device_bytes(device)
        for _ in range(calls):
            out = step(x, w, b)
        out.block_until_ready()
        grown, dev_grown = resident_bytes() - rss, device_bytes(device) - dev
    print(f"{device.platform}: {calls} calls: host {grown / MB:+.2f} MB, device {dev_grown:+d} bytes")
    # 10,000 steps of eight op calls: 16 MB allows 210 bytes per op call, so a
    # leak of any buffer, error object or handler state per call would show.
    assert grown < 16 * MB, f"host memory grew by {grown / MB:.1f} MB over {calls} calls"
    if device.memory_stats():  # XLA:CPU keeps no allocator statistics
        assert dev_grown <= 0, f"device memory grew by {dev_grown} bytes over {calls} calls"
    np.testing.assert_allclose(out, _reference_step(x, w, b), rtol=2e-2, atol=2e-2)


def _reference_step(x, w, b):
    y = jax.nn.relu(1.5 * x)
    y = y + jax.nn.relu(x + b)
    y = 0.25 * jnp.where(y > 0, x, 0) + y
    dx = jnp.where(y > 0, x, 0)
    return jax.nn.relu(jnp.matmul(dx + dx.sum(0), w, precision="highest") + b)


def test_eager_calls_keep_host_memory_flat():
    # Outside jit every call goes through cutlax's Python layer (checks,
    # shape rules, the dispatch cache) as well as the handler.
    x = jnp.linspace(-1, 1, 1000, dtype=jnp.float32)
    for _ in range(200):
        cutlax.relu(x).block_until_ready()
    rss = resident_bytes()
    for _ in range(5_000):
        y = cutlax.relu(x)
    y.block_until_ready()
    grown = resident_bytes() - rss
    print(f"5000 eager calls: host {grown / MB:+.2f} MB")
    assert grown < 8 * MB, f"host memory grew by {grown / MB:.1f} MB over 5000 eager calls"


# Minimal op libraries: a handler that does nothing, bound with XLA's own
# ffi.h (so it answers XLA's registration-time metadata query in whatever
# form the running jaxlib's headers give it), compiled once, and per library
# a table in C naming its own target (loading and registering is what is
# measured here, not running).
_HANDLER_SOURCE = r"""
#include "xla/ffi/api/ffi.h"
static xla::ffi::Error nothing() { return xla::ffi::Error::Success(); }
XLA_FFI_DEFINE_HANDLER(bound_nothing, nothing, xla::ffi::Ffi::Bind());
extern "C" XLA_FFI_Error* reliability_handler(XLA_FFI_CallFrame* frame) { return bound_nothing(frame); }
"""
_TABLE_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
void* reliability_handler(void* frame);
typedef struct { const char *target, *platform, *signature, *types; void* handler; } Entry;
typedef struct { int32_t abi, major, minor; size_t size; const Entry* entries; } Table;
static const Entry entries[] = {
  {"reliability_" NAME "_v1", "cpu", "op(x) -> y", "in:float32;out:float32;attrs:;scratch:",
   (void*)reliability_handler},
};
const Table* cutlax_library_handlers(void) {
  static const Table table = {ABI, FFI_MAJOR, FFI_MINOR, 1, entries};
  return &table;
}
"""


@pytest.fixture(scope="module")
def tiny_libraries(tmp_path_factory):
    """Twenty distinct op libraries, each defining its own target."""
    folder = tmp_path_factory.mktemp("libraries")
    (folder / "handler.cpp").write_text(_HANDLER_SOURCE)
    (folder / "table.c").write_text(_TABLE_SOURCE)
    handler = folder / "handler.o"
    subprocess.run(["c++", "-std=c++17", "-c", "-fPIC", "-O1", "-fvisibility=hidden", "-isystem",
                    jax.ffi.include_dir(), str(folder / "handler.cpp"), "-o", str(handler)], check=True)
    major, minor = cutlax._cutlax.build_info()["xla_ffi_api"].split(".")
    paths = []
    for i in range(20):
        path = folder / f"libreliability{i}.so"
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", f'-DNAME="lib{i}"', f"-DABI={_library.abi_version()}",
                        f"-DFFI_MAJOR={major}", f"-DFFI_MINOR={minor}", str(folder / "table.c"), str(handler),
                        "-lstdc++", "-o", str(path)], check=True)
        paths.append(path)
    return paths


def test_repeated_load_library_keeps_host_memory_flat(tiny_libraries):
    first = cutlax.load_library(tiny_libraries[0])
    assert "op" in first.ops
    rss = resident_bytes()
    for _ in range(2_000):  # the same file again: dlopen's count goes up and the table is read, nothing registered
        again = cutlax.load_library(tiny_libraries[0])
    assert again.ops.keys() == first.ops.keys()
    grown = resident_bytes() - rss
    print(f"2000 loads of one library: host {grown / MB:+.2f} MB")
    assert grown < 4 * MB, f"host memory grew by {grown / MB:.1f} MB over 2000 loads of one library"

    rss = resident_bytes()
    for path in tiny_libraries[1:]:
        cutlax.load_library(path)
    grown = resident_bytes() - rss
    print(f"19 more libraries: host {grown / MB:+.2f} MB")
    # Each new library maps its pages (a few KB here) and registers one target.
    assert grown < 19 * 256 * 1024, f"19 libraries grew host memory by {grown / MB:.1f} MB"
    targets = _library.registered_targets()
    assert all(f"reliability_lib{i}_v1" in targets for i in range(20))


_FAILING_SOURCE = r"""
using cutlax::jit::Tensor;
// At most 128 threads per block: a launch of more fails in the driver.
template <int Tag>
__global__ void __launch_bounds__(128) scale(Tensor<const float, 1> x, Tensor<float, 1> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) * float(Tag);
}
"""


def _scale_kernel(tag: int, block: int = 128):
    return cutlax.jit.kernel(_FAILING_SOURCE, f"scale<{tag}>", grid=lambda x: cutlax.jit.cdiv(x.size, block),
                             block=block)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_NVRTC, reason="needs NVRTC")
def test_many_jit_kernels_keep_memory_flat(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLAX_CACHE_DIR", str(tmp_path))
    gpu = GPUS[0]
    x = jax.device_put(jnp.linspace(-1, 1, 4099, dtype=jnp.float32), gpu)
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)

    def run(tag):
        y = jax.jit(lambda v: _scale_kernel(tag)(v, out=out))(x)
        np.testing.assert_array_equal(y, x * float(tag))

    for tag in range(1, 6):  # NVRTC, the driver and XLA reach their steady state
        run(tag)
    rss, dev = resident_bytes(), device_bytes(gpu)
    kernels = 40
    for tag in range(6, 6 + kernels):
        run(tag)
    grown, dev_grown = resident_bytes() - rss, device_bytes(gpu) - dev
    print(f"{kernels} jit kernels: host {grown / MB:+.2f} MB, device {dev_grown:+d} bytes")
    # Each kernel keeps its artifact (~25 KB) in the compile cache and a loaded
    # module; 2 MB per kernel bounds that with room for XLA's own executable.
    assert grown < kernels * 2 * MB, f"host memory grew by {grown / MB:.1f} MB over {kernels} kernels"
    assert dev_grown <= 0, f"XLA's device allocations grew by {dev_grown} bytes"


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_NVRTC, reason="needs NVRTC")
def test_a_failing_launch_is_a_python_error_and_later_calls_work(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLAX_CACHE_DIR", str(tmp_path))
    x = jax.device_put(jnp.linspace(-1, 1, 4099, dtype=jnp.float32), GPUS[0])
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    too_wide = _scale_kernel(3, block=256)  # the launch passes every check but the driver's
    for _ in range(3):  # and fails the same way each time: nothing sticky
        with pytest.raises(jax.errors.JaxRuntimeError,
                           match=r"cutlax.jit kernel scale<3>: launch failed \(grid 17x1x1, block 256x1x1"):
            jax.block_until_ready(jax.jit(lambda v: too_wide(v, out=out))(x))
    np.testing.assert_array_equal(jax.jit(lambda v: _scale_kernel(3)(v, out=out))(x), x * 3.0)
    np.testing.assert_array_equal(cutlax.relu(x), jax.nn.relu(x))
