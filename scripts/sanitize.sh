#!/usr/bin/env bash
# The C++ sanitizer builds, run by scripts/test.sh in CI:
#
#   address  AddressSanitizer + UndefinedBehaviorSanitizer (clang) over the
#            bridge, the CPU twins and the jit runtime, in one build folder
#            (build/asan) that also holds the fuzzers: scripts/fuzz.sh
#            configures and builds it and runs each harness for
#            FUZZ_SECONDS (10) from the checked-in seeds. Then the C++ unit
#            tests run there through CTest (leak checking on), and Python:
#            the sanitized extension imported by the python3 (below) with the
#            ASan runtime preloaded,
#              LD_PRELOAD=$(clang++ -print-file-name=libclang_rt.asan-x86_64.so) \
#              ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=build/asan/site python3 ...
#            (Python is not instrumented, and what it keeps until exit looks
#            like leaks to LeakSanitizer, hence detect_leaks=0 there),
#            running tests/sanitize/every_op.py and a pytest selection.
#   thread   ThreadSanitizer: the C++ tests that start threads
#            (cutlax_thread_tests: parallel_for on a real thread pool, the
#            handlers on tests/cpp/fake_ffi.hpp's pool, the jit cache), then
#            every op in Python on XLA:CPU's
#            own intra-op thread pool, through a python3 linked with TSan's
#            runtime (tests/sanitize/python_main.cpp: TSan's shared runtime
#            cannot be preloaded). ignore_noninstrumented_modules=1 keeps
#            jaxlib's own memory traffic out of the reports; parallel_for
#            states the hand-off to jaxlib's pool that TSan cannot see
#            (include/cutlax/parallel.hpp).
#
#   scripts/sanitize.sh [address|thread|all]   (default all)
#
# The Python is python3 from PATH (an activated virtual environment's), or
# PYTHON (a path, e.g. a virtual environment's bin/python, activated or
# not). The TSan python is a new executable outside any environment: it
# starts in the base installation and would see neither a virtual
# environment's packages nor its jax, so it runs with site disabled (-S) and
# the chosen interpreter's whole sys.path (its site-packages, user site,
# .pth entries and PYTHONPATH) in PYTHONPATH, behind the staged extension.
#
# PYTEST_WORKERS, when set, runs the ASan pytest selection on that many
# pytest-xdist workers (scripts/test.sh sets it).
#
# Any finding stops the run with the sanitizer's report (halt_on_error).
# The extension is staged with the Python package under build/<san>/site.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
mode=${1:-all}
case $mode in
  address | thread | all) ;;
  *) echo "usage: scripts/sanitize.sh [address|thread|all]" >&2; exit 2 ;;
esac
python=$(command -v "${PYTHON:-python3}") || { echo "sanitize.sh: no ${PYTHON:-python3}" >&2; exit 1; }
# clang and its sanitizer runtimes, from Debian, where a fresh machine lacks them.
if ! command -v clang++ >/dev/null || [ ! -f "$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)" ]; then
  echo "== installing clang and its sanitizer runtimes (Debian: clang, libclang-rt-dev)"
  apt-get update -q >/dev/null && apt-get install -y -q clang libclang-rt-dev >/dev/null ||
    { echo "sanitize.sh: could not install clang (needs root and Debian's registry)" >&2; exit 1; }
fi

stage_extension() {  # build folder: the package with that build's extension
  rm -rf "$1/site" && mkdir -p "$1/site"
  cp -r python/cutlax "$1/site/" && cp "$1"/src/_cutlax*.so "$1/site/cutlax/"
}

# The pytest selection run under ASan: the op library loader (real and
# malformed libraries), the platforms' denormal modes, and every op's property
# tests (hypothesis: random shapes and special values; -m hypothesis picks
# them out of each op's file, as the one file of them held before). JAX runs
# several times slower under ASan, so the ops' other tests stay out.
asan_tests="tests/python/test_library.py tests/python/test_denormals.py"
asan_property_tests="tests/python/test_vector_add.py tests/python/test_saxpy.py tests/python/test_relu.py
  tests/python/test_bias_relu.py tests/python/test_backward.py tests/python/test_gemm_properties.py"

if [[ $mode == address || $mode == all ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer, and the fuzzers"
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}" build/asan -DCUTLAX_BUILD_TESTS=ON
  cmake --build build/asan --target cutlax_bridge_tests cutlax_thread_tests cutlax_host_bench _cutlax
  stage_extension build/asan
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/asan --output-on-failure -j 2
  asan_runtime=$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)
  # shellcheck disable=SC2086
  (cd /tmp && LD_PRELOAD=$asan_runtime ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$repo/build/asan/site \
    "$python" "$repo/tests/sanitize/every_op.py" &&
    cd "$repo" && LD_PRELOAD=$asan_runtime ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$repo/build/asan/site \
    "$python" -m pytest -q -p no:cacheprovider ${PYTEST_WORKERS:+-n "$PYTEST_WORKERS"} $asan_tests &&
    LD_PRELOAD=$asan_runtime ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$repo/build/asan/site \
    "$python" -m pytest -q -p no:cacheprovider ${PYTEST_WORKERS:+-n "$PYTEST_WORKERS"} -m hypothesis \
      $asan_property_tests)
  unset UBSAN_OPTIONS
fi

if [[ $mode == thread || $mode == all ]]; then
  echo "== ThreadSanitizer"
  flags="-fsanitize=thread -fno-omit-frame-pointer"
  cmake -S . -B build/tsan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCUTLAX_BUILD_TESTS=ON -DCUTLAX_ENABLE_CUDA=OFF \
    -DPython_EXECUTABLE="$python" >/dev/null
  cmake --build build/tsan --target cutlax_thread_tests _cutlax
  stage_extension build/tsan
  TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/cpp/cutlax_thread_tests --gtest_brief=1
  # The base installation's headers and libpython (a virtual environment has neither).
  { read -r include; read -r libdir; read -r version; } < <("$python" -c \
    'import sysconfig as s; print(*(s.get_config_var(v) for v in ("INCLUDEPY", "LIBDIR", "LDVERSION")), sep="\n")')
  clang++ -fsanitize=thread -g tests/sanitize/python_main.cpp -I"$include" \
    -L"$libdir" -Wl,-rpath,"$libdir" -lpython"$version" -o build/tsan/python3
  # The chosen interpreter's module path ('' is -c's current folder).
  modules=$(cd /tmp && "$python" -c 'import os, sys; print(os.pathsep.join(p for p in sys.path if p))')
  (cd /tmp && TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
    PYTHONPATH=$repo/build/tsan/site:$modules "$repo/build/tsan/python3" -S "$repo/tests/sanitize/every_op.py")
fi
echo "== sanitizers: no findings"
