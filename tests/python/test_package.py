"""The installed package: what it links, what it registers, the CLI."""

import os
import re
import shutil
import subprocess
import sys

import jax
import jaxlib
import pytest

import cutlax
from cutlax import _cutlax
from cutlax.cli import demo
from cutlax._library import LibraryError, register_library, registered_targets
from cutlax.library import builtin_library

# Every target of the built-in library's table.
TARGETS = {op.target for op in builtin_library().ops.values()}


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_every_target_has_a_cpu_and_a_cuda_handler():
    targets = registered_targets()
    assert TARGETS <= set(targets)
    expected = {"cpu", "CUDA"} if _cutlax.build_info()["cuda"] else {"cpu"}
    for name in TARGETS:
        assert targets[name] == expected, name


@pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")
def test_extension_never_links_the_cuda_driver():
    needed = subprocess.run(["ldd", _cutlax.__file__], capture_output=True, text=True).stdout
    assert "libcuda.so" not in needed


def test_registering_the_builtin_library_again_is_a_no_op():
    targets, entries = register_library(_cutlax.__file__)
    assert set(targets) == TARGETS
    assert {e[0] for e in entries} == TARGETS


def test_a_file_that_is_not_a_library(tmp_path):
    bogus = tmp_path / "not_a_library.so"
    bogus.write_text("hello")
    with pytest.raises(LibraryError, match="cannot load"):
        register_library(str(bogus))


def test_doctor_reports_versions_and_platforms():
    out = subprocess.run([sys.executable, "-m", "cutlax", "doctor"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "XLA FFI API" in out.stdout and "CUTLASS 4.2.0" in out.stdout
    assert f"jaxlib {_cutlax.build_info()['jaxlib_headers']}'s headers" in out.stdout
    assert "cutlax_vector_add_v1: " in out.stdout and "cpu" in out.stdout


def test_built_against_headers_no_newer_than_the_running_jaxlib():
    # XLA refuses handlers built against newer FFI headers than its own (README, "Set-up").
    from cutlax.cli.doctor import older

    built = _cutlax.build_info()["jaxlib_headers"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", built), built
    assert not older(jaxlib.__version__, built)
    # scripts/test.sh and the GPU script's wheel mode say which headers the wheel must carry.
    expected = os.environ.get("CUTLAX_EXPECT_JAXLIB_HEADERS")
    if expected:
        assert built == expected


def test_doctor_compares_jaxlib_versions_numerically():
    from cutlax.cli.doctor import older

    assert older("0.9.2", "0.10.0") and older("0.10.0", "0.10.1")
    assert not older("0.10.0", "0.10.0") and not older("0.11.2", "0.10.0")
    assert not older("0.10.2.dev20261201", "0.10.0")


def test_doctor_fails_clearly_when_the_extension_cannot_load():
    # Load doctor.py on its own with the extension made unimportable.
    doctor = os.path.join(os.path.dirname(cutlax.__file__), "cli", "doctor.py")
    out = run_python(
        "import sys, importlib.util\n"
        "sys.modules['cutlax._cutlax'] = None\n"
        f"spec = importlib.util.spec_from_file_location('doctor', {doctor!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "sys.exit(mod.main())\n"
    )
    assert out.returncode == 1
    assert "error: the cutlax extension cannot load" in out.stderr


def test_cli_rejects_unknown_commands():
    out = subprocess.run([sys.executable, "-m", "cutlax", "frobnicate"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and "usage: python -m cutlax" in out.stdout


def test_demo_runs_every_step_and_checks_it():
    out = subprocess.run([sys.executable, "-m", "cutlax", "demo", "--log2-size", "16", "--gemm-size", "128"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    for number in range(1, demo.STEPS + 1):
        assert f"[{number}/{demo.STEPS}" in out.stdout
    # 8 virtual CPU devices without a GPU, else every GPU.
    devices = f"{jax.device_count()} gpu" if jax.default_backend() == "gpu" else "8 cpu"
    assert f"shard_map over {devices} device(s)" in out.stdout
    assert "fresh process, rows=4096: shape (4096, 256)" in out.stdout
    assert "every step matched jax.numpy" in out.stdout
