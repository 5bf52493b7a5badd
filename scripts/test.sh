#!/usr/bin/env bash
# Installs cutlax (scripts/install.sh) and runs the whole test suite: the C++
# unit tests of the bridge (GoogleTest through CTest), the out-of-tree example
# op library built against the installed cutlax package (examples/custom_op),
# and the JAX-side tests of both (pytest), after ruff's lint. It also builds the host
# micro-benchmark (bench/host_kernels.cpp) so that it keeps compiling. Tests
# that need a GPU skip when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
cmake -S . -B build/tests -G Ninja -DCUTLAX_BUILD_TESTS=ON -DCUTLAX_ENABLE_CUDA=OFF \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build build/tests --target cutlax_bridge_tests cutlax_host_bench
ctest --test-dir build/tests --output-on-failure
cmake -S examples/custom_op -B examples/custom_op/build -G Ninja \
  -Dcutlax_DIR="$(python3 -m cutlax --cmake-dir)" >/dev/null
cmake --build examples/custom_op/build
python3 -m ruff check .   # the Python style rules in pyproject.toml
python3 -m pytest tests/python examples/custom_op
