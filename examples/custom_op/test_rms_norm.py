"""The out-of-tree example op, loaded with cutlax.load_library: results against
jax.numpy on every platform, jit, export, sharding, and the errors a wrong call
or a wrong file gives."""

import os
import subprocess
import sys

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import cutlax  # noqa: E402
from rms_norm import LIBRARY, lib, rms_norm, rms_norm_reference  # noqa: E402

PLATFORMS = ["cpu"] + (["gpu"] if any(d.platform == "gpu" for d in jax.devices()) else [])
TOL = dict(rtol=1e-5, atol=1e-5)


def data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (jnp.asarray(rng.standard_normal(shape), jnp.float32),
            jnp.asarray(rng.standard_normal(shape[-1:]), jnp.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape", [(1,), (3, 5), (64, 1024), (2, 3, 300), (7, 4097)], ids=str)
def test_matches_jnp(platform, shape):
    with jax.default_device(jax.devices(platform)[0]):
        x, w = data(shape)
        np.testing.assert_allclose(jax.jit(rms_norm, static_argnames="eps")(x, w, eps=1e-5),
                                   rms_norm_reference(x, w, 1e-5), **TOL)


def test_composes_with_jax_ops_and_a_new_eps_compiles_a_new_program():
    x, w = data((8, 16))
    f = jax.jit(lambda x, w, eps: jnp.tanh(rms_norm(x * 2, w, eps)).sum(), static_argnums=2)
    for eps in (1e-6, 0.5):
        np.testing.assert_allclose(f(x, w, eps), jnp.tanh(rms_norm_reference(x * 2, w, eps)).sum(), rtol=1e-5)


def test_exports_and_runs_in_a_fresh_process(tmp_path):
    x, w = data((4, 32))
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 32"), jnp.float32)
    exp = cutlax.export.export(rms_norm, spec, jax.ShapeDtypeStruct((32,), jnp.float32))
    artifact = tmp_path / "rms_norm.jax_export"
    artifact.write_bytes(exp.serialize())
    code = (f"import jax, numpy as np, cutlax; cutlax.load_library({LIBRARY!r});"
            f"f = jax.export.deserialize(open({str(artifact)!r}, 'rb').read());"
            "x = np.ones((6, 32), np.float32); print(float(f.call(x, np.ones(32, np.float32)).sum()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(out.stdout) == pytest.approx(6 * 32, rel=1e-5)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_rows_shard_without_gathering(axis_type):
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("d",), axis_types=(axis_type,))
    x, w = data((16, 64))
    x = jax.device_put(x, NamedSharding(mesh, P("d")))
    assert "all-gather" not in jax.jit(rms_norm).lower(x, w).compile().as_text()
    np.testing.assert_allclose(jax.jit(rms_norm)(x, w), rms_norm_reference(x, w), **TOL)


def test_under_shard_map_and_vmap():
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("d",))
    x, w = data((16, 64))
    local = jax.shard_map(lambda x: rms_norm(x, w), mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    np.testing.assert_allclose(jax.jit(local)(x), rms_norm_reference(x, w), **TOL)
    np.testing.assert_allclose(jax.vmap(rms_norm, in_axes=(0, None))(x.reshape(4, 4, 64), w),
                               rms_norm_reference(x, w).reshape(4, 4, 64), **TOL)


def test_loading_twice_gives_the_same_library():
    assert cutlax.load_library(LIBRARY) is lib
    assert lib.rms_norm.target in cutlax.export.disabled_checks().__repr__()
    assert "rms_norm" in dir(lib)


def test_wrong_calls_name_what_was_expected():
    x, w = data((4, 8))
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    with pytest.raises(TypeError, match=r"rms_norm.rms_norm: takes 2 array arguments \(x, weight\), got 1"):
        lib.rms_norm(x, out=out, eps=1e-6)
    with pytest.raises(TypeError, match=r"rms_norm.rms_norm: missing attribute 'eps' \(float32\)"):
        lib.rms_norm(x, w, out=out)
    with pytest.raises(TypeError, match=r"unexpected attribute 'epsilon' \(its attributes: eps\)"):
        lib.rms_norm(x, w, out=out, eps=1e-6, epsilon=1)
    with pytest.raises(TypeError, match="attribute 'eps' must be a static Python or NumPy value"):
        jax.jit(lambda x, w, e: lib.rms_norm(x, w, out=out, eps=e))(x, w, 1e-6)
    with pytest.raises(TypeError, match="x has dtype float16; expected one of: float32"):
        lib.rms_norm(x.astype(jnp.float16), w, out=out, eps=1e-6)
    with pytest.raises(AttributeError, match="librms_norm.so has no op 'layer_norm'; its ops: rms_norm"):
        _ = lib.layer_norm


def test_weight_is_checked_at_trace_time_and_by_the_launcher():
    x, _ = data((4, 8))
    with pytest.raises(ValueError, match=r"^rms_norm.rms_norm: weight must have shape \(8,\) \(x's last axis\), "
                                         r"got \(3,\)$"):
        rms_norm(x, jnp.ones(3, jnp.float32))
    # Past the Python op (an exported artifact, raw ffi_call), the launcher's check.
    call = jax.ffi.ffi_call(lib.rms_norm.target, jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match=r"weight must have shape \(8,\)"):
        jax.block_until_ready(call(x, jnp.ones(3, jnp.float32), eps=np.float32(1e-6)))


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 64)], ids=str)
def test_grad_through_the_declared_backward(shape):
    x, w = data(shape, seed=1)
    target = jnp.asarray(np.random.default_rng(2).standard_normal(shape), jnp.float32)

    def loss(fn):
        return lambda x, w: jnp.sum((fn(x, w, 1e-5) - target) ** 2)

    ours = jax.jit(jax.grad(loss(rms_norm), argnums=(0, 1)))(x, w)
    ref = jax.grad(loss(rms_norm_reference), argnums=(0, 1))(x, w)
    for got, want in zip(ours, ref):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # vmap of grad: the backward's jax.numpy batches, the forward goes through def_vmap.
    per_row = jax.vmap(jax.grad(lambda x: jnp.sum(rms_norm(x, w, 1e-5) ** 3)))(x.reshape(-1, shape[-1]))
    want = jax.vmap(jax.grad(lambda x: jnp.sum(rms_norm_reference(x, w, 1e-5) ** 3)))(x.reshape(-1, shape[-1]))
    np.testing.assert_allclose(per_row, want, rtol=1e-4, atol=1e-4)


def test_a_file_that_is_not_a_cutlax_library(tmp_path):
    import ctypes.util
    libm = ctypes.util.find_library("m")
    with pytest.raises(cutlax.LibraryError, match="is not a cutlax op library"):
        cutlax.load_library(os.path.join("/lib/x86_64-linux-gnu", libm) if libm and not os.path.isabs(libm) else libm)
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF file")
    with pytest.raises(cutlax.LibraryError, match="cannot load"):
        cutlax.load_library(junk)
