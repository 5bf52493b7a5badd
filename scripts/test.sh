#!/usr/bin/env bash
# Installs cutlax (scripts/install.sh) and runs the whole test suite: the C++
# unit tests of the bridge (GoogleTest through CTest) and the JAX-side tests
# (pytest). Tests that need a GPU skip when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
cmake -S . -B build/tests -G Ninja -DCUTLAX_BUILD_TESTS=ON -DCUTLAX_ENABLE_CUDA=OFF \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build build/tests --target cutlax_bridge_tests
ctest --test-dir build/tests --output-on-failure
python3 -m pytest tests/python
