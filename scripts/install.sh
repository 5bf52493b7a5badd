#!/usr/bin/env bash
# Installs cutlax from this checkout with everything it builds against, all
# from PyPI: JAX, scikit-build-core and nanobind, and the CUTLASS/CuTe headers
# (nvidia-cutlass, without its Python dependencies, which the headers do not
# need). cutlax is built without build isolation, against the jaxlib that is
# installed, because XLA rejects FFI handlers compiled against newer FFI
# headers than the jaxlib that loads them. The CUDA kernels are compiled when
# nvcc is on PATH (or under /usr/local/cuda/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
python3 -m pip install --quiet --disable-pip-version-check \
  "jax>=0.10" numpy flatbuffers "scikit-build-core>=0.10" "nanobind>=2.0" pytest ruff rich matplotlib
python3 -m pip install --quiet --disable-pip-version-check --no-deps "nvidia-cutlass==4.2.0.0"
python3 -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps .
