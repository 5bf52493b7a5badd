"""cutlax.jit's errors, without a GPU: NVRTC crashing is a CompileError (the
compile runs in a child process), the kernel's parameters (read from the
entry's lowered name) are checked against the arrays at trace time, launch
sizes and launch functions are checked naming the kernel and the argument,
and out= is checked against what cpu= returns."""

import os
import re
import subprocess
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import pytest

import cutlax
from conftest import needs_nvrtc
from cutlax import _cutlax, _jit_checks


SOURCE = r"""
#include <cute/arch/copy_sm90_desc.hpp>
using cutlax::jit::Tensor;

template <class T>
__global__ void relu(Tensor<const T, 1> x, Tensor<T, 1> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) < T(0) ? T(0) : x(i);
}

// The const on the wrong parameter.
__global__ void swapped_const(Tensor<float, 1> x, Tensor<const float, 1> y) {}

// A parameter of the user's own type, between the tensors.
struct Params { int n; };
__global__ void own_type(Tensor<const float, 2> x, Params p, Tensor<float, 2> y) {}

// Not mangled: nothing to read the parameters from.
extern "C" __global__ void unmangled(Tensor<const float, 1> x, Tensor<float, 1> y) {}

// One TMA descriptor after the tensors.
__global__ void with_descriptor(Tensor<const cutlass::half_t, 2> x, Tensor<cutlass::half_t, 2> y,
                                const __grid_constant__ cute::TmaDescriptor load_x) {}

// The descriptor before the output: the runtime passes it last.
__global__ void descriptor_first(Tensor<const cutlass::half_t, 2> x,
                                 const __grid_constant__ cute::TmaDescriptor load_x,
                                 Tensor<cutlass::half_t, 2> y) {}
"""

# The crash: an undeclared parameter type (Tensr) with the entry's name
# expression registered makes NVRTC 13.0 segfault inside nvrtcCompileProgram.
CRASHING_SOURCE = r"""
template <class T>
__global__ void relu(Tensr<const T, 1> x, Tensr<T, 1> y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) < T(0) ? T(0) : x(i);
}
"""


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """One cache directory for the module: each entry compiles once."""
    path = tmp_path_factory.mktemp("jit-cache")
    old = os.environ.get("CUTLAX_CACHE_DIR")
    os.environ["CUTLAX_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["CUTLAX_CACHE_DIR"]
    else:
        os.environ["CUTLAX_CACHE_DIR"] = old


def flat_grid(x, *_):
    return cutlax.jit.cdiv(x.size, 256)


def kernel(entry, *, grid=flat_grid, block=256, **kw):
    return cutlax.jit.kernel(SOURCE, entry, grid=grid, block=block, **kw)


def like(x, dtype=None):
    return jax.ShapeDtypeStruct(x.shape, dtype or x.dtype)


def spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def trace(k, *args, out, **kw):
    """Traces a call of ``k`` (what jax.jit does before lowering) on shapes alone."""
    return jax.eval_shape(lambda *a: k(*a, out=out, **kw), *args)


# NVRTC crashing -----------------------------------------------------------------

@needs_nvrtc
def test_an_nvrtc_crash_is_a_compile_error_with_the_real_error():
    before = cutlax.jit.cache_info()["nvrtc_crashes"]
    k = cutlax.jit.kernel(CRASHING_SOURCE, "relu<float>", grid=1, block=256)
    with pytest.raises(cutlax.jit.CompileError, match=r"relu<float> does not compile") as info:
        k.compiled()
    log = info.value.log
    # Whether or not this NVRTC still crashes, the log names the undeclared type and its line.
    assert 'identifier "Tensr" is undefined' in log and "kernel.cu(3)" in log, log
    if cutlax.jit.cache_info()["nvrtc_crashes"] > before:  # NVRTC 13.0 does
        assert "crashed (SIGSEGV) compiling relu<float>" in log
        assert "only that process died" in log and "without the entry's name expression" in log
    # This process and its NVRTC are fine: another kernel compiles and runs through its CPU path.
    relu = kernel("relu<float>", cpu=jax.nn.relu)
    x = jnp.linspace(-1.0, 1.0, 300)
    assert jnp.array_equal(jax.jit(lambda x: relu(x, out=like(x)))(x), jax.nn.relu(x))


@needs_nvrtc
def test_without_a_child_process_the_crash_takes_the_process_down(tmp_path):
    """What the child process protects against (CUTLAX_JIT_FORK=0 compiles in
    the process, as before); and with it on, the same script survives."""
    code = textwrap.dedent(f"""
        import cutlax
        k = cutlax.jit.kernel({CRASHING_SOURCE!r}, "relu<float>", grid=1, block=1)
        try:
            k.compiled()
        except cutlax.jit.CompileError as e:
            print("CompileError", cutlax.jit.cache_info()["nvrtc_crashes"])
        """)

    def run(fork):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "CUTLAX_CACHE_DIR": str(tmp_path), "CUTLAX_JIT_FORK": fork})

    isolated = run("1")
    assert isolated.returncode == 0 and isolated.stdout.startswith("CompileError"), isolated.stderr
    if isolated.stdout.split() != ["CompileError", "1"]:
        pytest.skip("this NVRTC does not crash on the undeclared type")
    assert run("0").returncode == -11  # SIGSEGV, in the user's process


@needs_nvrtc
def test_compiles_from_several_threads_fork_safely():
    """Two threads compiling at once each fork a child (the fork is serialized
    with in-process NVRTC work); both kernels arrive."""
    kernels = [cutlax.jit.kernel(SOURCE, f"relu<{t}>", grid=1, block=1) for t in ("double", "int")]
    errors = []

    def compile_one(k):
        try:
            k.compiled()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=compile_one, args=(k,)) for k in kernels]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [k.compiled()[1].startswith("_Z4reluI") for k in kernels] == [True, True]


# The parameters, from the lowered name ------------------------------------------

# Lowered names NVRTC 13.0 gave for SOURCE's kernels (so these run without NVRTC).
RELU_FLOAT = ("_Z4reluIfEvN4cute6TensorINS0_10ViewEngineINS0_8gmem_ptrIPKT_EEEENS0_6LayoutINS0_5tupleIJxEEENSA_IJNS0_1"
              "CILi1EEEEEEEEEENS1_INS2_INS3_IPS4_EEEESF_EE")
MIXED = ("_Z2k2IfEvN4cute6TensorINS0_10ViewEngineINS0_8gmem_ptrIPKT_EEEENS0_6LayoutINS0_5tupleIJNS0_1CILi1EEEEEENSA_"
         "IJNSB_ILi0EEEEEEEEEENS1_IS8_NS9_INSA_IJxxxEEENSA_IJxxSC_EEEEEEENS1_INS2_INS3_IPS4_EEEENS9_INSA_IJxxEEENSA_IJx"
         "SC_EEEEEEENS0_13TmaDescriptorE6ParamsiPKf")


def test_parameters_are_read_from_the_lowered_name():
    params = _jit_checks.kernel_parameters(RELU_FLOAT)
    assert [(p.kind, p.text, p.element, p.is_const, p.rank) for p in params] == [
        ("tensor", "Tensor<const float, 1>", "float", True, 1),
        ("tensor", "Tensor<float, 1>", "float", False, 1)]
    # k2<float>(Tensor<const T, 0>, Tensor<const T, 3>, Tensor<T, 2>, TmaDescriptor, Params, int, const float*)
    params = _jit_checks.kernel_parameters(MIXED)
    assert [p.text for p in params] == ["Tensor<const float, 0>", "Tensor<const float, 3>", "Tensor<float, 2>",
                                        "TmaDescriptor", "Params", "int", "float const*"]
    assert [p.kind for p in params] == ["tensor"] * 3 + ["tma"] + ["other"] * 3
    assert _jit_checks.kernel_parameters("unmangled") is None
    assert _cutlax.jit.demangle(RELU_FLOAT).startswith("void relu<float>(cute::Tensor<")


def test_the_parameter_check_needs_no_compiler():
    params = _jit_checks.kernel_parameters(RELU_FLOAT)
    x = spec((8,), jnp.bfloat16)
    with pytest.raises(TypeError, match=re.escape("x0 is bfloat16 but parameter 0 of relu<float> is "
                                                  "Tensor<const float, 1>")):
        _jit_checks.check_parameters("relu<float>", params, [x], [spec((8,))])
    _jit_checks.check_parameters("relu<float>", params, [spec((8,))], [spec((8,))])
    _jit_checks.check_parameters("k", None, [x], [])  # unknown parameters: nothing checked


@needs_nvrtc
def test_a_bf16_array_into_relu_float_names_the_kernel_and_the_argument():
    relu = kernel("relu<float>", cpu=jax.nn.relu)
    good = spec((1000,))
    trace(relu, good, out=like(good))  # a call that passes is remembered; others are still checked
    trace(relu, good, out=like(good))
    x = spec((1000,), jnp.bfloat16)
    with pytest.raises(TypeError, match=re.escape("cutlax.jit relu<float>: x0 is bfloat16 but parameter 0 of "
                                                  "relu<float> is Tensor<const float, 1>")):
        trace(relu, x, out=like(x))
    # An output of the wrong dtype.
    x = spec((1000,))
    with pytest.raises(TypeError, match=re.escape("out0 (x1) is float16 but parameter 1 of relu<float> is "
                                                  "Tensor<float, 1>")):
        trace(relu, x, out=like(x, jnp.float16))


@needs_nvrtc
def test_rank_and_count_are_checked():
    relu = kernel("relu<float>")
    x = spec((10, 100))
    with pytest.raises(ValueError, match=re.escape("cutlax.jit relu<float>: x0 has rank 2 (shape (10, 100)) but "
                                                   "parameter 0 of relu<float> is Tensor<const float, 1>")):
        trace(relu, x, out=like(x))
    x = spec((100,))
    with pytest.raises(TypeError, match=re.escape("relu<float> takes 2 parameters (Tensor<const float, 1>, "
                                                  "Tensor<float, 1>) but the call passes 3: 2 inputs, 1 output")):
        trace(relu, x, x, out=like(x))
    with pytest.raises(TypeError, match="but the call passes 3: 1 input, 2 outputs"):
        trace(relu, x, out=(like(x), like(x)))


@needs_nvrtc
def test_inputs_must_be_const_and_outputs_not():
    k = kernel("swapped_const")
    x = spec((100,))
    with pytest.raises(TypeError, match=re.escape("x0 is an input but parameter 0 of swapped_const is "
                                                  "Tensor<float, 1>: inputs are Tensor<const T, R>")):
        trace(k, x, out=like(x))


@needs_nvrtc
def test_parameters_of_the_users_own_types_are_counted_not_checked():
    k = kernel("own_type")
    x = spec((4, 8))
    with pytest.raises(TypeError, match=re.escape("own_type takes 3 parameters (Tensor<const float, 2>, Params, "
                                                  "Tensor<float, 2>) but the call passes 2")):
        trace(k, x, out=like(x))
    # An extern "C" kernel's name carries no parameters: nothing is checked.
    unmangled = kernel("unmangled")
    assert trace(unmangled, spec((3, 3), jnp.int32), out=spec((3, 3), jnp.int32)).shape == (3, 3)


@needs_nvrtc
def test_tma_descriptors_come_after_the_tensors():
    x = spec((64, 64), jnp.float16)
    ok = kernel("with_descriptor", grid=1, block=128, tma=[cutlax.jit.tma(0, (64, 64))])
    assert trace(ok, x, out=like(x)).shape == (64, 64)
    without = kernel("with_descriptor", grid=1, block=128)
    with pytest.raises(TypeError, match=r"takes 3 parameters .* but the call passes 2: 1 input, 1 output"):
        trace(without, x, out=like(x))
    # The kernel takes (x, descriptor, y) but the runtime passes (x, y, descriptor).
    swapped = kernel("descriptor_first", grid=1, block=128, tma=[cutlax.jit.tma(0, (64, 64))])
    with pytest.raises(TypeError, match=re.escape("parameter 1 of descriptor_first is TmaDescriptor, but out0 (x1) "
                                                  "goes there")):
        trace(swapped, x, out=like(x))


# Launch sizes and expressions -------------------------------------------------------

def test_truediv_in_a_launch_expression_says_to_use_floordiv_or_cdiv():
    relu = cutlax.jit.kernel(SOURCE, "relu<float>", grid=lambda x: x.size / 256, block=256)
    with pytest.raises(TypeError) as info:
        cutlax.jit.launch_program(relu.grid, relu.block, [spec((100,))])
    message = str(info.value)
    assert "grid=" in message and "`//`" in message and "cutlax.jit.cdiv" in message
    with pytest.raises(TypeError, match="cutlax.jit.cdiv"):
        cutlax.jit.launch_program(lambda x: (1, 1000 / x.shape[0]), 1, [spec((100,))])


@needs_nvrtc
def test_launch_function_errors_name_the_kernel_and_the_argument():
    x = spec((100,))
    cases = [
        (lambda x: x.size / 256, 256, TypeError, r"cutlax.jit relu<float>: grid= .*raised: `/` is not a launch-size"),
        (lambda x: x.shape[1], 256, ValueError, r"cutlax.jit relu<float>: grid= .*IndexError"),
        (lambda x: 2.5, 256, TypeError, r"cutlax.jit relu<float>: grid= returned 2.5: a launch size must be"),
        (flat_grid, lambda x: (x.size, 2048), ValueError, r"cutlax.jit relu<float>: block=\(x0.size, 2048, 1\): "
                                                          r"block.y is 2048; CUDA allows 1 to 1024"),
        (lambda x: (x.size, 70000), 256, ValueError, r"cutlax.jit relu<float>: grid=\(x0.size, 70000, 1\): "
                                                     r"grid.y is 70000; CUDA allows 0 to 65535"),
    ]
    for grid, block, error, match in cases:
        relu = cutlax.jit.kernel(SOURCE, "relu<float>", grid=grid, block=block)
        with pytest.raises(error, match=match):
            jax.jit(lambda x, relu=relu: relu(x, out=like(x))).lower(x)


def test_constant_launch_sizes_are_checked_in_kernel():
    cases = [
        (dict(grid=1, block=2048), r"cutlax.jit relu<float>: block=2048: block.x is 2048; CUDA allows 1 to 1024"),
        (dict(grid=1, block=(32, 32, 2)), r"block=\(32, 32, 2\): 2048 threads per block; CUDA allows at most 1024"),
        (dict(grid=1, block=(1, 1, 65)), r"block.z is 65; CUDA allows 1 to 64"),
        (dict(grid=1, block=0), r"block.x is 0; CUDA allows 1 to 1024"),
        (dict(grid=(1, 70000), block=1), r"cutlax.jit relu<float>: grid=\(1, 70000\): grid.y is 70000"),
        (dict(grid=-1, block=1), r"grid=-1: grid.x is -1"),
        (dict(grid=2**31, block=1), r"grid.x is 2147483648; CUDA allows 0 to 2147483647"),
        (dict(grid=(1, 1, 1, 1), block=1), r"cutlax.jit relu<float>: grid has 4 dimensions"),
    ]
    for kw, match in cases:
        with pytest.raises(ValueError, match=match):
            cutlax.jit.kernel(SOURCE, "relu<float>", **kw)
    with pytest.raises(TypeError, match=r"cutlax.jit relu<float>: grid=1.5: a launch size must be an integer"):
        cutlax.jit.kernel(SOURCE, "relu<float>", grid=1.5, block=1)
    # The largest sizes CUDA launches, and an empty grid, are fine.
    cutlax.jit.kernel(SOURCE, "relu<float>", grid=(2**31 - 1, 65535, 65535), block=(1024, 1, 1))
    cutlax.jit.kernel(SOURCE, "relu<float>", grid=0, block=(16, 16, 4))


# out= against cpu= -----------------------------------------------------------------

@needs_nvrtc
def test_out_is_checked_against_what_cpu_returns():
    x = spec((1000,))
    short = kernel("relu<float>", cpu=lambda x: jax.nn.relu(x)[:10])
    with pytest.raises(ValueError, match=re.escape("cutlax.jit relu<float>: out= says float32[1000] but cpu= "
                                                   "returns float32[10]")):
        trace(short, x, out=like(x))
    wrong_dtype = kernel("relu<float>", cpu=lambda x: jax.nn.relu(x).astype(jnp.float16))
    with pytest.raises(TypeError, match=re.escape("out= says float32[1000] but cpu= returns float16[1000]")):
        trace(wrong_dtype, x, out=like(x))
    two = kernel("relu<float>", cpu=lambda x: (x, x))
    with pytest.raises(ValueError, match=re.escape("out= says float32[1000] but cpu= returns float32[1000], "
                                                   "float32[1000]")):
        trace(two, x, out=like(x))
