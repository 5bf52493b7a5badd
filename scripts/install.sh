#!/usr/bin/env bash
# Installs cutlax from this checkout the standard way, `pip install .`, with
# the test and benchmark extras. pip builds it in an isolated environment
# from pyproject.toml's build requirements (JAX's FFI headers from the oldest
# supported jaxlib, the CUTLASS headers from nvidia-cutlass, nanobind,
# scikit-build-core); the CUDA kernels are compiled when nvcc is on PATH (or
# under /usr/local/cuda/bin). For incremental rebuilds while developing:
#   pip install --no-build-isolation --no-deps .   (against the installed jaxlib)
# It installs into the python3 on PATH (an activated virtual environment's),
# or into PYTHON (a path, e.g. a virtual environment's bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
"${PYTHON:-python3}" -m pip install --quiet --disable-pip-version-check ".[test,bench]"
