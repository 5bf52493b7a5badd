"""jax.export for every op: concrete and symbolic shapes, serialization, a
fresh process that imports only jax, numpy and cutlax, and both platforms."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from export_cases import CASES, arg_specs

import cutlax

HERE = os.path.dirname(__file__)
ARTIFACT = os.path.join(HERE, "..", "..", "data", "composed_cpu_cuda_v1.jax_export")


def run_in_fresh_process(directory, names):
    script = os.path.join(HERE, "run_exported.py")
    return subprocess.run([sys.executable, script, directory, *names], capture_output=True, text=True,
                          timeout=600, cwd=directory)


@pytest.fixture(scope="module")
def exported_dir(tmp_path_factory):
    """Every case exported with symbolic shapes and serialized to a file."""
    directory = tmp_path_factory.mktemp("exported")
    for name, (fn, _, runs) in CASES.items():
        exp = cutlax.export.export(fn, *arg_specs(name))
        (directory / f"{name}.bin").write_bytes(exp.serialize())
        (directory / f"{name}.json").write_text(json.dumps(runs))
    return directory


@pytest.fixture(scope="module")
def fresh_process_results(exported_dir):
    out = run_in_fresh_process(str(exported_dir), list(CASES))
    assert out.returncode in (0, 1), out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()], out


@pytest.mark.parametrize("name", list(CASES))
def test_symbolic_artifact_runs_in_a_fresh_process_at_two_sizes(fresh_process_results, name):
    results, out = fresh_process_results
    mine = [r for r in results if r["name"] == name]
    assert len(mine) == len(CASES[name][2]) >= 2, out.stderr
    for r in mine:
        assert r["error"] < 1e-5, r


@pytest.mark.parametrize("name", list(CASES))
def test_concrete_shapes(rng, name):
    fn, _, runs = CASES[name]
    args = [jnp.asarray(rng.standard_normal(s), jnp.float32) for s in runs[0]]
    exp = cutlax.export.export(fn, *args)
    restored = jax.export.deserialize(exp.serialize())
    np.testing.assert_allclose(restored.call(*args), jax.jit(fn)(*args), rtol=1e-6, atol=1e-6)


def test_symbolic_dims_survive_in_the_artifact():
    exp = cutlax.export.export(*CASES["gemm"][:1], *arg_specs("gemm"))
    assert str(exp.in_avals[0].shape) == "(m, k)" and str(exp.out_avals[0].shape) == "(m, n)"


def test_one_artifact_for_cpu_and_cuda(rng):
    fn = CASES["composed"][0]
    exp = cutlax.export.export(fn, *arg_specs("composed"), platforms=("cpu", "cuda"))
    assert exp.platforms == ("cpu", "cuda")
    x, bias = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    with jax.default_device(jax.devices("cpu")[0]):
        out = jax.export.deserialize(exp.serialize()).call(x, bias)
    np.testing.assert_allclose(out, jax.nn.sigmoid(jax.nn.relu(3 * x + bias)), rtol=1e-6)


def test_committed_multiplatform_artifact_still_runs_on_cpu(rng):
    # tests/data holds an artifact exported by an earlier cutlax (see
    # make_export_artifact.py): the _v1 targets must keep their meaning.
    exp = jax.export.deserialize(open(ARTIFACT, "rb").read())
    assert exp.platforms == ("cpu", "cuda")
    x, bias = rng.standard_normal((7, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    with jax.default_device(jax.devices("cpu")[0]):
        out = exp.call(x, bias)
    np.testing.assert_allclose(out, jax.nn.sigmoid(jax.nn.relu(3 * x + bias)), rtol=1e-6)


@pytest.mark.gpu
def test_committed_multiplatform_artifact_runs_on_the_gpu(rng):
    exp = jax.export.deserialize(open(ARTIFACT, "rb").read())
    x, bias = rng.standard_normal((1000, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    with jax.default_device(jax.devices("gpu")[0]):
        out = exp.call(x, bias)
        assert out.devices() == {jax.devices("gpu")[0]}
    np.testing.assert_allclose(out, jax.nn.sigmoid(jax.nn.relu(3 * x + bias)), rtol=1e-6)


def test_without_import_cutlax_xla_has_no_handler(exported_dir):
    code = ("import jax, jax.numpy as jnp\n"
            f"exp = jax.export.deserialize(open({str(exported_dir / 'relu.bin')!r}, 'rb').read())\n"
            "exp.call(jnp.ones((2, 3)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "No FFI handler registered for cutlax_relu_v1" in out.stderr


def test_shape_violating_a_constraint_fails_at_call_time(exported_dir):
    restored = jax.export.deserialize((exported_dir / "bias_relu.bin").read_bytes())
    with pytest.raises(ValueError, match=r"args\[1\].shape\[0\] \(= 4\) and the specification 'w' \(= 5\)"):
        restored.call(jnp.ones((3, 5)), jnp.ones((4,)))
    gemm = jax.export.deserialize((exported_dir / "gemm.bin").read_bytes())
    with pytest.raises(ValueError, match="inconsistency"):
        gemm.call(jnp.ones((3, 4)), jnp.ones((5, 6)))
    static_width = jax.export.deserialize((exported_dir / "bias_relu_static_width.bin").read_bytes())
    with pytest.raises(ValueError, match=r"args\[0\].shape\[1\].*expected \(b, 16\) and called with \(3, 8\)"):
        static_width.call(jnp.ones((3, 8)), jnp.ones((8,)))


def test_constraint_that_cannot_hold_fails_at_export_time():
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, w"), jnp.float32)
    with pytest.raises(ValueError, match=r"bias has shape \(4,\); expected \(w,\)"):
        cutlax.export.export(cutlax.bias_relu, x, jax.ShapeDtypeStruct((4,), jnp.float32))


def test_disabled_checks_cover_exactly_the_cutlax_targets():
    checks = cutlax.export.disabled_checks()
    assert checks == [jax.export.DisabledSafetyCheck.custom_call(t)
                      for t in sorted(cutlax._library.registered_targets())]
    assert len(checks) >= 6


def test_plain_jax_export_refuses_without_the_checks():
    x = jax.ShapeDtypeStruct((4,), jnp.float32)
    with pytest.raises(ValueError, match="Cannot serialize code with custom calls"):
        jax.export.export(jax.jit(cutlax.relu))(x)
