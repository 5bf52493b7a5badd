#!/usr/bin/env bash
# Builds and installs cutlax and runs the whole test suite. The install is
# the wheel a packager gets (scripts/build_wheel.sh: `pip wheel .` in an
# isolated build against the oldest supported jaxlib's FFI headers, repaired
# to a manylinux tag), installed with its test extras into this Python, which
# has the newest jaxlib pip offers: so the suite also tests the jaxlib rule
# (README). Then: the out-of-tree example op library built against the
# installed package (examples/custom_op), ruff's lint, the same wheel in a
# clean virtual environment with a smoke run (so a packaging regression
# fails here), the sanitizer builds (scripts/sanitize.sh: the C++ unit tests
# of the bridge and the jit runtime through CTest, the fuzzers, every op from
# Python; it also builds the host micro-benchmark, bench/host_kernels.cpp, so
# that it keeps compiling), and last the JAX-side tests (pytest). Tests that
# need a GPU skip when there is none.
#
# The Python is python3 from PATH: the system's, or an activated virtual
# environment's. PYTHON=path (e.g. a virtual environment's bin/python,
# activated or not) picks another; its folder then goes first on PATH, so
# that every tool started from here (pytest's subprocesses, CMake, the
# sanitizer builds) finds the same interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
if [ -n "${PYTHON:-}" ]; then
  found=$(command -v "$PYTHON") || { echo "test.sh: PYTHON=$PYTHON is not a program" >&2; exit 1; }
  export PYTHON=$found PATH=$(dirname "$found"):$PATH
fi
py=${PYTHON:-python3}
echo "== testing with $(command -v "$py") ($("$py" -c 'import sys; print(sys.prefix)'))"
# The oldest supported jaxlib, whose FFI headers the wheel is built against
# (pyproject.toml's build requirements); test_package checks the wheel says so.
export CUTLAX_EXPECT_JAXLIB_HEADERS=$(sed -n 's/.*"jaxlib==\([0-9.]*\)".*/\1/p' pyproject.toml)
# pytest runs one worker per core, up to 8, (pytest-xdist) where there is no
# GPU; on a GPU each worker's JAX would claim most of its memory, so one
# process. PYTEST_WORKERS overrides.
if nvidia-smi -L >/dev/null 2>&1; then
  export PYTEST_WORKERS=${PYTEST_WORKERS:-0}
else
  cores=$(nproc)
  export PYTEST_WORKERS=${PYTEST_WORKERS:-$((cores < 8 ? cores : 8))}
fi
# Each stage says when it starts (seconds since this script began), so a
# run's log shows where its time goes (CI has 25 minutes on 2 cores).
stage() { echo "== [${SECONDS} s] $*"; }
stage "the wheel (scripts/build_wheel.sh)"
bash scripts/build_wheel.sh dist
wheel=$(ls "$repo"/dist/cutlax-*.whl)
"$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$py" -m pip install --quiet --disable-pip-version-check "cutlax[test,bench] @ file://$wheel"

stage "the example op library and ruff"
cmake -S examples/custom_op -B examples/custom_op/build -G Ninja \
  -Dcutlax_DIR="$("$py" -m cutlax --cmake-dir)" >/dev/null
cmake --build examples/custom_op/build
"$py" -m ruff check .   # the Python style rules in pyproject.toml

# A packaging regression (a missing file or dependency) shows when the wheel
# runs where nothing else was installed. .ci/run's environment is such a
# place already (CUTLAX_FRESH_VENV=1: made empty for this run, the wheel
# installed with its declared dependencies), so it skips the second one.
if [ "${CUTLAX_FRESH_VENV:-0}" = 1 ]; then
  stage "the wheel in a clean virtual environment: this one ($py), made fresh by .ci/run"
else
  stage "the wheel in a clean virtual environment"
  venv=$repo/build/wheel-venv
  "$py" -m venv --clear "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "cutlax[test] @ file://$wheel"
  (cd /tmp && "$venv/bin/python" -m cutlax doctor &&
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -n "$PYTEST_WORKERS" "$repo/tests/python/test_package.py" \
      "$repo/tests/python/test_relu.py" "$repo/tests/python/transforms/test_export.py")
fi

# The sanitizer builds and a short fuzz run (docs/reliability.md); the C++
# unit tests (CTest) run there, under ASan + UBSan and under TSan. A failure
# fails the run, but only after pytest, so that the whole suite still runs
# and the log ends with pytest's summary line.
stage "the sanitizer builds and the fuzzers (scripts/sanitize.sh)"
sanitizers=0
bash scripts/sanitize.sh || sanitizers=$?
stage "pytest"

"$py" -m pytest -n "$PYTEST_WORKERS" tests/python examples/custom_op
[ "$sanitizers" -eq 0 ] || { echo "scripts/sanitize.sh failed (exit $sanitizers): see above" >&2; exit 1; }
