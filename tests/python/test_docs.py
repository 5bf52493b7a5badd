"""Every ```python block of README.md and docs/*.md runs, so a doc example
cannot rot.

The blocks of one file run in order in one fresh Python process and one
namespace (a later block may use what an earlier one defined), in an empty
temporary directory, which holds `build/librms_norm.so` and
`examples/custom_op/build/librms_norm.so` (the example op library that
docs/tutorial.md builds) for the blocks that load it. An HTML comment on the
line(s) right above a fence says how to run that block (markdown does not
render it):

    <!-- requires: gpu -->          only where JAX sees a GPU (scripts/gpu_check.sh runs them)
    <!-- requires: nvrtc -->        only where cutlax.jit finds NVRTC (implied by a call
                                    of cutlax.jit.kernel)
    <!-- cluster: 2 processes -->   a multi-host program: run on its own, as that many
                                    processes of a simulated SLURM job on CPU devices
                                    (jax.distributed.initialize() with no arguments
                                    reads the job from the environment, as on a cluster)
    <!-- skip: REASON -->           never run; the reason is required

A block that is not run takes the names it binds with it: a later block of
the file that reads one of them is not run either. A failure names the file
and the line in it (tracebacks count lines of the markdown file).
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import GPUS

import cutlax

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
EXAMPLE = REPO / "examples" / "custom_op"
LIBRARY = "librms_norm.so"
TIMEOUT = 600

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^`\s]*)")
MARKER = re.compile(r"^\s*<!--\s*(requires|cluster|skip)\s*:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int  # line number (1-based) of the block's first code line
    code: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a markdown file, dedented, with their markers."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"]
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if info == "python":
            markers, j = {}, i - 1
            while j >= 0 and (mm := MARKER.match(lines[j])):
                markers[mm[1]] = mm[2]
                j -= 1
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:end]]
            blocks.append(Block(path, i + 2, "\n".join(body) + "\n", markers))
        i = end + 1
    return blocks


def _have_nvrtc() -> bool:
    return cutlax.jit.nvrtc_version() != "not found"


def requirements(block: Block) -> list[str]:
    needs = list(filter(None, re.split(r"[,\s]+", block.markers.get("requires", ""))))
    if "cutlax.jit.kernel(" in block.code and "nvrtc" not in needs:
        needs.append("nvrtc")
    return needs


def why_not_run(block: Block) -> str | None:
    """None when the block runs here, else the reason it does not."""
    if "skip" in block.markers:
        return f"marked skip: {block.markers['skip']}"
    for need in requirements(block):
        if need == "gpu" and not GPUS:
            return "needs a GPU"
        if need == "nvrtc" and not _have_nvrtc():
            return "needs NVRTC"
        if need not in ("gpu", "nvrtc"):
            raise ValueError(f"{block.name}: unknown requirement {need!r} (gpu, nvrtc)")
    return None


# Runs blocks given as JSON [[file, line, code], ...] in order in one
# namespace; padding each block with newlines makes tracebacks give the
# line numbers of the markdown file.
DRIVER = """
import json, sys, traceback
namespace = {"__name__": "__main__"}
for path, line, code in json.loads(sys.argv[1]):
    print(f"== {path}:{line}", flush=True)
    try:
        exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: the block at {path}:{line}", flush=True)
        sys.exit(1)
"""


def run_blocks(blocks: list[Block], cwd: Path, env=None) -> subprocess.Popen:
    payload = json.dumps([[str(b.path), b.line, b.code] for b in blocks])
    # On a GPU the test process already holds JAX's preallocated pool.
    env = dict(os.environ if env is None else env)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return subprocess.Popen([sys.executable, "-c", DRIVER, payload], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, what: str, timeout=TIMEOUT) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{what}: still running after {timeout} s\n{out}")
    if proc.returncode != 0:
        pytest.fail(f"{what}: exit status {proc.returncode}\n{out}")
    return out


@pytest.fixture(scope="session")
def rms_norm_library(tmp_path_factory) -> Path:
    """The example op library: the one scripts/test.sh builds in
    examples/custom_op/build, else built here as docs/tutorial.md says (in a
    temporary folder, under a lock for pytest-xdist's workers; without its
    CUDA kernel where there is no GPU to run it, which saves a minute)."""
    built = EXAMPLE / "build" / LIBRARY
    if built.exists():
        return built
    if not shutil.which("cmake"):
        pytest.skip("needs cmake to build examples/custom_op")
    # Kept between sessions (pytest keeps the base folder's parent), one per environment.
    root = tmp_path_factory.getbasetemp().parent
    build = root / f"docs-rms-norm-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]}"
    commands = [["cmake", "--build", str(build)]]  # incremental: a no-op when up to date
    if not (build / "CMakeCache.txt").exists():
        cmake_dir = subprocess.run([sys.executable, "-m", "cutlax", "--cmake-dir"], check=True,
                                   capture_output=True, text=True).stdout.strip()
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        no_cuda = [] if GPUS else ["-DCMAKE_CUDA_COMPILER=OFF"]
        commands.insert(0, ["cmake", "-S", str(EXAMPLE), "-B", str(build), *generator,
                            f"-Dcutlax_DIR={cmake_dir}", *no_cuda])
    with open(root / "docs-rms-norm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for cmd in commands:
            done = subprocess.run(cmd, capture_output=True, text=True)
            assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
    return build / LIBRARY


def workdir(tmp_path: Path, library: Path | None) -> Path:
    """An empty folder, with the example library where the docs load it from."""
    if library is not None:
        for rel in ("build", "examples/custom_op/build"):
            (tmp_path / rel).mkdir(parents=True)
            (tmp_path / rel / LIBRARY).symlink_to(library)
    return tmp_path


def _ids(paths):
    return [str(p.relative_to(REPO)) for p in paths]


WITH_BLOCKS = [p for p in DOCS if any("cluster" not in b.markers for b in python_blocks(p))]


def test_markers_are_well_formed():
    assert (REPO / "README.md") in DOCS and len(WITH_BLOCKS) > 3
    for path in DOCS:
        for block in python_blocks(path):
            if "skip" in block.markers:
                assert block.markers["skip"], f"{block.name}: a skip marker needs a reason"
            if "cluster" in block.markers:
                assert re.fullmatch(r"\d+ processes", block.markers["cluster"]), block.name
            assert set(requirements(block)) <= {"gpu", "nvrtc"}, f"{block.name}: {block.markers}"


def _names(code: str, context) -> set[str]:
    """The names a block reads (ast.Load) or binds (ast.Store)."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, context):
            names.add(node.id)
        elif context is ast.Store and isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif context is ast.Store and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def select(blocks: list[Block]) -> tuple[list[Block], list[str]]:
    """The blocks that run here, and what is not run and why."""
    run, skipped, missing = [], [], set()
    for block in blocks:
        reason = why_not_run(block)
        if reason is None and (lost := _names(block.code, ast.Load) & missing):
            reason = f"uses {', '.join(sorted(lost))} from a block not run"
        if reason:
            skipped.append(f"{block.name} ({reason})")
            missing |= _names(block.code, ast.Store)
        else:
            run.append(block)
            missing -= _names(block.code, ast.Store)
    return run, skipped


@pytest.mark.parametrize("path", WITH_BLOCKS, ids=_ids(WITH_BLOCKS))
def test_python_blocks_run(path, tmp_path, request):
    run, skipped = select([b for b in python_blocks(path) if "cluster" not in b.markers])
    if not run:
        pytest.skip("no block runs here" + (": " + ", ".join(skipped) if skipped else ""))
    library = request.getfixturevalue("rms_norm_library") if any(LIBRARY in b.code for b in run) else None
    out = finish(run_blocks(run, workdir(tmp_path, library)), str(path.relative_to(REPO)))
    for name in skipped:
        print(f"not run: {name}")
    assert out.count("== ") == len(run), out


CLUSTER_BLOCKS = [b for p in DOCS for b in python_blocks(p) if "cluster" in b.markers]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("block", CLUSTER_BLOCKS, ids=[b.name for b in CLUSTER_BLOCKS])
def test_multihost_blocks_run(block, tmp_path):
    """The block as every process of a SLURM job runs it, on one machine: JAX
    reads the coordinator, the process count and this process's id from
    SLURM's variables, and CPU devices talk through gloo."""
    if reason := why_not_run(block):
        pytest.skip(reason)
    count = int(block.markers["cluster"].split()[0])
    base = dict(os.environ, JAX_PLATFORMS="cpu", JAX_CPU_COLLECTIVES_IMPLEMENTATION="gloo",
                JAX_NUM_CPU_DEVICES="2", JAX_COORDINATOR_PORT=str(_free_port()),
                SLURM_JOB_ID="1", SLURM_STEP_NODELIST="127.0.0.1", SLURM_NTASKS=str(count))
    procs = []
    for i in range(count):
        cwd = tmp_path / f"process{i}"
        cwd.mkdir()
        env = dict(base, SLURM_PROCID=str(i), SLURM_LOCALID=str(i))
        procs.append(run_blocks([block], cwd, env))
    try:
        for i, proc in enumerate(procs):
            print(finish(proc, f"{block.name}, process {i} of {count}", timeout=300))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
