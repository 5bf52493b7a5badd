"""cutlax.jit: CuTe kernels compiled at run time with NVRTC. Without a GPU:
compiling to sm_90a, compile errors, the caches (memory, disk, corrupt
entries, two processes), launch expressions, CPU fallbacks and export. With
one: results against the built-in ops and jax.numpy under jit, grad, vmap,
export in a fresh process and CUDA graphs."""

import functools
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from conftest import GPUS, needs_gpu, needs_nvrtc


SOURCE = r"""
using cutlax::jit::Tensor;

// The flat array: one thread per element, bounds-checked.
template <class T>
__global__ void relu(Tensor<const T, 1> x, Tensor<T, 1> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) < T(0) ? T(0) : x(i);
}

// relu's backward: the cotangent where x > 0.
template <class T>
__global__ void relu_backward(Tensor<const T, 1> dy, Tensor<const T, 1> x, Tensor<T, 1> dx) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) dx(i) = x(i) > T(0) ? dy(i) : T(0);
}

// A static width: the template argument; the column comes from the flat index.
template <class T, int Width>
__global__ void bias_relu(Tensor<const T, 2> x, Tensor<const T, 1> bias, Tensor<T, 2> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= cute::size(x)) return;
  const int64_t row = i / Width, col = i % Width;
  const T v = x(row, col) + bias(col);
  y(row, col) = v < T(0) ? T(0) : v;
}

// A dynamic scalar: a 0-d array, read as alpha(0).
__global__ void saxpy(Tensor<const float, 0> alpha, Tensor<const float, 1> x,
                      Tensor<const float, 1> y, Tensor<float, 1> out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) out(i) = alpha(0) * x(i) + y(i);
}

// GEMM-shaped: a 2-D grid of 16 x 16 output tiles, K summed in order.
__global__ void matmul(Tensor<const float, 2> a, Tensor<const float, 2> b, Tensor<float, 2> c) {
  const int64_t row = int64_t(blockIdx.y) * 16 + threadIdx.y, col = int64_t(blockIdx.x) * 16 + threadIdx.x;
  const int64_t m = cute::size<0>(a), k = cute::size<1>(a), n = cute::size<1>(b);
  if (row >= m || col >= n) return;
  float sum = 0;
  for (int64_t p = 0; p < k; ++p) sum += a(row, p) * b(p, col);
  c(row, col) = sum;
}
"""


def flat_grid(x, *_):
    return cutlax.jit.cdiv(x.size, 256)


def make_relu():
    return cutlax.jit.kernel(SOURCE, "relu<float>", grid=flat_grid, block=256, cpu=jax.nn.relu)


def relu_op():
    relu = make_relu()
    relu.def_shape(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype))
    relu.def_jvp(lambda out, args, t: jnp.where(out > 0, t[0], 0))
    relu.def_vmap(cutlax.batching.SEQUENTIAL)
    return relu


def relu_with_a_jit_backward():
    """relu whose vjp is another jit kernel, each with its CPU version."""
    relu = cutlax.jit.kernel(SOURCE, "relu<float>", grid=flat_grid, block=256, cpu=jax.nn.relu)
    backward = cutlax.jit.kernel(SOURCE, "relu_backward<float>", grid=lambda dy, x: cutlax.jit.cdiv(x.size, 256),
                                 block=256, cpu=lambda dy, x: jnp.where(x > 0, dy, 0))
    relu.def_shape(cutlax.op.same_as(0))
    backward.def_shape(cutlax.op.same_as(0))
    relu.def_vjp(lambda args, out, dy: (backward(dy, args[0]),))
    relu.def_vmap(cutlax.batching.FLATTEN)  # the kernel takes rank-1 arrays
    relu.def_sharding(cutlax.sharding.ELEMENTWISE)
    return relu


def _env(**env) -> dict:
    """os.environ with ``env``; a PYTHONPATH given is put before the inherited one."""
    merged = {**os.environ, **env}
    if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
        merged["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + os.environ["PYTHONPATH"]
    return merged


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=_env(**env))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLAX_CACHE_DIR", str(tmp_path / "cache"))
    cutlax.jit.clear_cache(disk=False)  # each test starts with nothing compiled in this process
    return tmp_path / "cache"


# Launch expressions: recorded, not evaluated ---------------------------------

def test_launch_program_records_the_expression():
    x = jax.ShapeDtypeStruct((7, 300), jnp.float32)
    program = cutlax.jit.launch_program(lambda x: (cutlax.jit.cdiv(x.size, 256), x.shape[0] // 2 + 1),
                                        (16, 16), [x])
    # Each expression: its length in words, then its words in reverse Polish notation.
    assert program.tolist() == [
        5, 2, 0, 0, 256, 7,            # grid.x = cdiv(size(x0), 256)
        9, 1, 0, 0, 0, 2, 6, 0, 1, 3,  # grid.y = x0.shape[0] // 2 + 1
        2, 0, 1,                       # grid.z = 1
        2, 0, 16, 2, 0, 16, 2, 0, 1,   # block = (16, 16, 1)
        2, 0, 1, 2, 0, 1, 2, 0, 1]     # cluster = (1, 1, 1), the default
    clustered = cutlax.jit.launch_program(lambda x: cutlax.jit.min(x.shape[0], cutlax.jit.sm_count()), 384, [x],
                                          cluster=(2, 1))
    assert clustered.tolist() == [
        5, 1, 0, 0, 10, 8,             # grid.x = min(x0.shape[0], sm_count())
        2, 0, 1, 2, 0, 1,              # grid.y, grid.z
        2, 0, 384, 2, 0, 1, 2, 0, 1,   # block
        2, 0, 2, 2, 0, 1, 2, 0, 1]     # cluster = (2, 1, 1)
    assert cutlax.jit.cdiv(10, 4) == 3 and cutlax.jit.min(3, 5) == 3 and cutlax.jit.max(3, 5) == 5


def test_launch_sizes_refuse_python_comparisons():
    x = jax.ShapeDtypeStruct((8,), jnp.float32)
    with pytest.raises(TypeError, match="cutlax.jit.min / cutlax.jit.max"):
        cutlax.jit.launch_program(lambda x: min(x.size, 1024), 256, [x])
    with pytest.raises(TypeError, match="a launch size must be an integer"):
        cutlax.jit.launch_program(1.5, 256, [x])
    with pytest.raises(ValueError, match="grid has 4 dimensions"):
        cutlax.jit.kernel(SOURCE, "relu<float>", grid=(1, 1, 1, 1), block=256)


# Compiling, without a GPU ----------------------------------------------------

@needs_nvrtc
def test_compiles_to_the_target_architecture_and_caches(cache_dir):
    cutlax.jit.clear_cache()
    relu = make_relu()
    before = cutlax.jit.cache_info()
    cubin, lowered = relu.compiled()
    assert cubin.dtype == np.uint8 and cubin.size > 0 and "relu" in lowered
    after = cutlax.jit.cache_info()
    assert after["misses"] == before["misses"] + 1 and after["directory"] == str(cache_dir)
    make_relu().compiled()  # a new kernel object, same source: in-process hit
    assert cutlax.jit.cache_info()["hits"] == after["hits"] + 1
    # A fresh process finds it on disk.
    out = run_python("""
        import cutlax, test_jit
        test_jit.make_relu().compiled()
        print(cutlax.jit.cache_info()["disk_hits"], cutlax.jit.cache_info()["misses"])
        """, CUTLAX_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0"]


@needs_nvrtc
def test_a_syntax_error_names_the_line(cache_dir):
    source = "template <class T>\n__global__ void broken(cutlax::jit::Tensor<T, 1> y) {\n  y(0) = ;\n}\n"
    k = cutlax.jit.kernel(source, "broken<float>", grid=1, block=1)
    with pytest.raises(cutlax.jit.CompileError, match=r"broken<float> does not compile") as info:
        k.compiled()
    assert "(3)" in info.value.log or ":3:" in info.value.log, info.value.log


@needs_nvrtc
def test_a_corrupt_entry_is_detected_and_rebuilt(cache_dir):
    make_relu().compiled()
    entries = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert entries
    for p in entries:
        p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])  # truncated
    out = run_python("""
        import cutlax, test_jit
        test_jit.make_relu().compiled()
        info = cutlax.jit.cache_info()
        print(info["corrupt"], info["misses"])
        """, CUTLAX_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]


@needs_nvrtc
def test_two_processes_compile_at_once(cache_dir):
    code = textwrap.dedent("""
        import cutlax, test_jit
        k = cutlax.jit.kernel(test_jit.SOURCE, "bias_relu<float, 77>", grid=1, block=1)
        print(k.compiled()[1])
        """)
    env = _env(CUTLAX_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.dirname(__file__))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert results[0][0] == results[1][0] and "bias_relu" in results[0][0]


# On CPU: the jax.numpy version, and export for both platforms -----------------

@needs_nvrtc
def test_on_cpu_the_cpu_function_runs_and_exports_for_both_platforms(cache_dir, tmp_path):
    relu = relu_op()
    with jax.default_device(jax.devices("cpu")[0]):
        x = jnp.linspace(-3, 3, 1000, dtype=jnp.float32)
        np.testing.assert_array_equal(jax.jit(relu)(x), jax.nn.relu(x))
        spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("n"), jnp.float32)
        exp = cutlax.export.export(relu, spec, platforms=("cpu", "cuda"))
    assert cutlax.jit.TARGET in exp.mlir_module()
    artifact = tmp_path / "relu.jax_export"
    artifact.write_bytes(exp.serialize())
    out = run_python(f"""
        import jax, numpy as np, cutlax
        f = jax.export.deserialize(open({str(artifact)!r}, "rb").read())
        x = np.linspace(-3, 3, 4099, dtype=np.float32)
        print(float(np.abs(np.asarray(f.call(x)) - np.maximum(x, 0)).max()))
        """, JAX_PLATFORMS="cpu", CUTLAX_CACHE_DIR=str(tmp_path / "empty"))
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == 0.0


@needs_nvrtc
def test_without_cpu_a_cpu_call_names_the_kernel(cache_dir):
    k = cutlax.jit.kernel(SOURCE, "relu<float>", grid=flat_grid, block=256)
    x = jnp.ones(8, jnp.float32)
    with jax.default_device(jax.devices("cpu")[0]):
        with pytest.raises(Exception, match=r"relu<float> has no CPU version; pass cpu="):
            jax.block_until_ready(jax.jit(lambda x: k(x, out=jax.ShapeDtypeStruct(x.shape, x.dtype)))(x))


def test_wrong_calls_name_the_kernel():
    k = cutlax.jit.kernel(SOURCE, "relu<float>", grid=flat_grid, block=256)
    x = jnp.ones(8, jnp.float32)
    with pytest.raises(TypeError, match=r"^cutlax.jit relu<float>: needs out="):
        k(x)
    with pytest.raises(TypeError, match=r"^cutlax.jit relu<float>: x0 must be an array"):
        k("x", out=jax.ShapeDtypeStruct((8,), jnp.float32))
    with pytest.raises(ValueError, match="shared_mem must be a byte count"):
        cutlax.jit.kernel(SOURCE, "relu<float>", grid=1, block=1, shared_mem=-1)


# On every platform: the kernel on the GPU, its CPU version on CPU -------------

@needs_nvrtc
def test_grad_through_a_backward_that_is_a_jit_kernel(device, cache_dir):
    relu = relu_with_a_jit_backward()
    x = jax.random.normal(jax.random.PRNGKey(7), (4099,), jnp.float32)
    w = jnp.linspace(-1, 1, 4099, dtype=jnp.float32)
    grad = jax.jit(jax.grad(lambda x: (relu(x) * w).sum()))(x)
    np.testing.assert_array_equal(grad, jax.grad(lambda x: (jax.nn.relu(x) * w).sum())(x))


@needs_nvrtc
def test_vmap_of_a_jit_kernel(device, cache_dir):
    relu = relu_with_a_jit_backward()
    xs = jax.random.normal(jax.random.PRNGKey(8), (3, 5, 1000), jnp.float32)
    np.testing.assert_array_equal(jax.jit(jax.vmap(jax.vmap(relu)))(xs), jax.nn.relu(xs))


@needs_nvrtc
def test_shard_map_and_a_sharding_rule(cache_dir):
    """Over the 8 CPU devices (or every GPU): each device runs its shard."""
    devices = GPUS or jax.devices("cpu")
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    spec = jax.sharding.PartitionSpec("d")
    relu = relu_with_a_jit_backward()
    x = jax.device_put(jnp.linspace(-4, 4, 1024 * len(devices), dtype=jnp.float32),
                       jax.sharding.NamedSharding(mesh, spec))
    mapped = jax.jit(jax.shard_map(relu, mesh=mesh, in_specs=spec, out_specs=spec))
    np.testing.assert_array_equal(mapped(x), jax.nn.relu(x))
    ruled = jax.jit(relu)(x)  # the ELEMENTWISE rule: per-shard calls, the input's sharding kept
    np.testing.assert_array_equal(ruled, jax.nn.relu(x))
    assert ruled.sharding.spec == spec


# On the GPU ------------------------------------------------------------------

@needs_gpu
@needs_nvrtc
@pytest.mark.parametrize("n", [1, 255, 256, 4099, 1 << 20])
def test_relu_matches_the_builtin_op(n):
    relu = relu_op()
    x = jax.random.normal(jax.random.PRNGKey(n), (n,), jnp.float32)
    np.testing.assert_array_equal(jax.jit(relu)(x), cutlax.relu(x))


@needs_gpu
@needs_nvrtc
@pytest.mark.parametrize("rows", [1, 3, 1000])
def test_bias_relu_with_a_static_width(rows):
    width = 96
    k = cutlax.jit.kernel(SOURCE, f"bias_relu<float, {width}>", grid=flat_grid, block=256)
    x = jax.random.normal(jax.random.PRNGKey(rows), (rows, width), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (width,), jnp.float32)
    out = jax.jit(lambda x, b: k(x, b, out=jax.ShapeDtypeStruct(x.shape, x.dtype)))(x, b)
    np.testing.assert_array_equal(out, cutlax.bias_relu(x, b))


@needs_gpu
@needs_nvrtc
def test_a_dynamic_scalar_and_a_gemm_shaped_grid():
    saxpy = cutlax.jit.kernel(SOURCE, "saxpy", grid=lambda a, x, y: cutlax.jit.cdiv(x.size, 128), block=128)
    x, y = jnp.arange(1000, dtype=jnp.float32), jnp.ones(1000, jnp.float32)
    f = jax.jit(lambda alpha, x, y: saxpy(alpha, x, y, out=jax.ShapeDtypeStruct(x.shape, x.dtype)))
    for alpha in (2.0, -0.5):  # one program, two values
        np.testing.assert_allclose(f(jnp.float32(alpha), x, y), alpha * x + y, rtol=1e-6)
    matmul = cutlax.jit.kernel(SOURCE, "matmul", block=(16, 16),
                               grid=lambda a, b: (cutlax.jit.cdiv(b.shape[1], 16), cutlax.jit.cdiv(a.shape[0], 16)))
    matmul.def_shape(lambda a, b: jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))
    a = jax.random.normal(jax.random.PRNGKey(0), (100, 70), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (70, 33), jnp.float32)
    np.testing.assert_allclose(jax.jit(matmul)(a, b), cutlax.gemm(a, b, impl="tiled"), rtol=1e-5, atol=1e-5)


@needs_gpu
@needs_nvrtc
def test_grad_vmap_and_a_cuda_graph():
    relu = relu_op()
    x = jax.random.normal(jax.random.PRNGKey(3), (4096,), jnp.float32)
    np.testing.assert_array_equal(jax.grad(lambda x: relu(x).sum())(x), (x > 0).astype(jnp.float32))
    xs = x.reshape(4, 1024)
    np.testing.assert_array_equal(jax.vmap(relu)(xs), jax.nn.relu(xs))

    def chain(x):  # 100 dependent launches: XLA captures them into a command buffer
        for _ in range(100):
            x = relu(x - 0.01)
        return x

    np.testing.assert_allclose(jax.jit(chain)(x), jax.nn.relu(x - 1.0), atol=1e-5)


def bias_relu_and_matmul():
    """The jit bias_relu (width 96) and the GEMM-shaped matmul, with shape,
    vjp and batching rules; matmul's backward is matmul itself."""
    bias_relu = cutlax.jit.kernel(SOURCE, "bias_relu<float, 96>", grid=flat_grid, block=256)
    bias_relu.def_shape(cutlax.op.same_as(0))

    @bias_relu.def_vjp
    def _(args, y, g):
        dx = jnp.where(y > 0, g, 0)
        return dx, dx.sum(axis=0)

    matmul = cutlax.jit.kernel(SOURCE, "matmul", block=(16, 16),
                               grid=lambda a, b: (cutlax.jit.cdiv(b.shape[1], 16), cutlax.jit.cdiv(a.shape[0], 16)))
    matmul.def_shape(lambda a, b: jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))
    matmul.def_vjp(lambda args, c, g: (matmul(g, args[1].T), matmul(args[0].T, g)))
    for k in (bias_relu, matmul):
        k.def_vmap(cutlax.batching.SEQUENTIAL)  # rank-fixed kernels: one call per batch element
    return bias_relu, matmul


@needs_gpu
@needs_nvrtc
def test_bias_relu_and_matmul_under_grad_vmap_and_a_cuda_graph():
    bias_relu, matmul = bias_relu_and_matmul()
    keys = jax.random.split(jax.random.PRNGKey(11), 4)
    x, bias = jax.random.normal(keys[0], (300, 96)), jax.random.normal(keys[1], (96,))
    a, b = jax.random.normal(keys[2], (100, 70)), jax.random.normal(keys[3], (70, 33))

    def loss(op):
        return lambda x, bias: (op(x, bias) ** 2).sum()

    for got, want in zip(jax.jit(jax.grad(loss(bias_relu), argnums=(0, 1)))(x, bias),
                         jax.grad(loss(cutlax.bias_relu), argnums=(0, 1))(x, bias)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    tiled = functools.partial(cutlax.gemm, impl="tiled")
    for got, want in zip(jax.jit(jax.grad(loss(matmul), argnums=(0, 1)))(a, b),
                         jax.grad(loss(tiled), argnums=(0, 1))(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)

    xs = jnp.stack([x, -x, 2 * x])
    np.testing.assert_array_equal(jax.jit(jax.vmap(bias_relu, in_axes=(0, None)))(xs, bias),
                                  jax.vmap(cutlax.bias_relu, in_axes=(0, None))(xs, bias))
    bs = jnp.stack([b, -b])
    np.testing.assert_allclose(jax.jit(jax.vmap(matmul, in_axes=(None, 0)))(a, bs),
                               jax.vmap(tiled, in_axes=(None, 0))(a, bs), rtol=1e-5, atol=1e-5)

    def chain(x, a):  # 60 dependent launches of both kernels in one program: one command buffer
        for _ in range(30):
            x = bias_relu(x, bias) * 0.5
            a = matmul(a, jnp.eye(70, dtype=a.dtype))
        return x, a

    def reference(x, a):
        for _ in range(30):
            x = cutlax.bias_relu(x, bias) * 0.5
        return x, a

    for got, want in zip(jax.jit(chain)(x, a), reference(x, a)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def three_kernels():
    """relu, bias_relu (width 96) and the GEMM-shaped matmul, in one function."""
    relu = relu_op()
    bias_relu, matmul = bias_relu_and_matmul()
    return lambda x, xm, bias, a, b: (relu(x), bias_relu(xm, bias), matmul(a, b))


@needs_gpu
@needs_nvrtc
def test_export_with_symbolic_shapes_runs_in_a_fresh_process_without_nvrtc(tmp_path):
    n, rows, m, k, p = jax.export.symbolic_shape("n, rows, m, k, p")
    f32 = jnp.float32
    specs = [jax.ShapeDtypeStruct(s, f32) for s in ((n,), (rows, 96), (96,), (m, k), (k, p))]
    artifact = tmp_path / "kernels.jax_export"
    artifact.write_bytes(cutlax.export.export(three_kernels(), *specs, platforms=("cuda",)).serialize())
    out = run_python(f"""
        import jax, numpy as np, cutlax
        cutlax.jit.kernel = None  # the artifact needs no compiler
        f = jax.export.deserialize(open({str(artifact)!r}, "rb").read())
        rng = np.random.default_rng(0)
        for size in (5, 4099):
            x = rng.standard_normal(size * 7, np.float32)
            xm, bias = rng.standard_normal((size, 96), np.float32), rng.standard_normal(96, np.float32)
            a, b = rng.standard_normal((size, 33), np.float32), rng.standard_normal((33, 17), np.float32)
            relu, bias_relu, matmul = (np.asarray(r) for r in f.call(x, xm, bias, a, b))
            assert np.array_equal(relu, np.maximum(x, 0)), size
            assert np.array_equal(bias_relu, np.maximum(xm + bias, 0)), size
            assert np.allclose(matmul, a @ b, rtol=1e-4, atol=1e-4), size
        print("ok", jax.devices()[0].platform, cutlax.jit.cache_info()["misses"])
        """, CUTLAX_CACHE_DIR=str(tmp_path / "empty"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "gpu", "0"]


@needs_gpu
@needs_nvrtc
def test_empty_arrays_and_a_launch_that_fails():
    relu = relu_op()
    assert jax.jit(relu)(jnp.zeros((0,), jnp.float32)).shape == (0,)  # grid 0: nothing launched
    x = jnp.linspace(-1, 1, 4096, dtype=jnp.float32)
    # More dynamic shared memory than a block may have: only the device knows its limit.
    too_much = cutlax.jit.kernel(SOURCE, "relu<float>", grid=1, block=256, shared_mem=1 << 20)
    with pytest.raises(Exception, match=r"cutlax.jit kernel relu<float>: needs 1048576 bytes of dynamic shared"):
        jax.block_until_ready(too_much(x, out=jax.ShapeDtypeStruct(x.shape, x.dtype)))
    np.testing.assert_array_equal(jax.jit(relu)(x), jax.nn.relu(x))  # and the next call works
