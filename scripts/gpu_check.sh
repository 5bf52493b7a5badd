#!/usr/bin/env bash
# The GPU check, for a Hopper (H100/H200) machine that has JAX with CUDA,
# nvcc and CMake but may have no network: install the CUTLASS headers from
# the wheel carried in .whl/, build cutlax against that machine's own
# jaxlib, run the whole test suite on the GPU (tests/python/test_docs.py
# runs the docs' GPU blocks there), dump the SASS instruction mix of the
# kernels, and run the benchmark. Results go to $1.
#
#   scripts/gpu_check.sh OUT_DIR [bench args...]
#
# STEPS (default "doctor sass sweep example tests demo jitcompile bench") picks the steps
# after the build; TESTS (default "tests/python", and "examples/custom_op" when
# the example step runs) the pytest paths, e.g.
#   STEPS="tests demo" TESTS=tests/python/transforms/test_export.py scripts/gpu_check.sh OUT
#
# STEPS=jitbench (never a default step) times cutlax.jit's Hopper examples
# against XLA: bench/jit_tma_copy.py (the TMA transpose) and bench/jit_gemm.py.
#
# STEPS=tune (never a default step) runs bench/gemm_tune.py (TUNE_SECTIONS:
# its --sections; TUNE_ARGS: more of its arguments): the measurements behind
# gemm's heuristic. With it the build is a tuning build (CUTLAX_GEMM_TUNING=ON:
# the GEMM's tile order and promotion interval settable, bench/gemm_tuning.cpp).
#
# STEPS=sanitize (never a default step) runs every CUDA kernel, cutlax.jit's
# included, under compute-sanitizer's memcheck, racecheck, initcheck and
# synccheck: tests/gpu/sanitize.sh (its SANITIZE_* variables), logs in
# $out/sanitize_<tool>.txt, a summary line per tool.
#
# WHEEL=path installs that cutlax wheel (scripts/build_wheel.sh, built
# elsewhere against the oldest supported jaxlib's headers) instead of
# building here: the jaxlib rule's test on this machine's newer jaxlib.
#
# Copy the checkout with .whl/ to the GPU machine and run it from there;
# .whl/ holds nvidia_cutlass-4.2.0.0-py3-none-any.whl, fetched beforehand
# (where there is network) with
#   pip download --no-deps -d .whl nvidia-cutlass==4.2.0.0
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUT_DIR [bench args...]}
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }
status=0

step "CUTLASS headers from the carried wheel"
python3 -m pip install -q --no-index --no-deps --target /tmp/cutlass-site .whl/nvidia_cutlass-*.whl || exit 1
export PYTHONPATH=/tmp/cutlass-site${PYTHONPATH:+:$PYTHONPATH}
# rich and matplotlib for the benchmark's table and plot, when carried
# (pip download -d .whl/bench --python-version 3.12 --only-binary=:all: rich matplotlib;
#  without numpy, which the machine has).
if ls .whl/bench/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/bench-site .whl/bench/*.whl &&
    export PYTHONPATH=$PYTHONPATH:/tmp/bench-site
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/doctor.txt"
if [ -n "${WHEEL:-}" ]; then
  step "install the carried wheel $WHEEL"
  python3 -m pip install -q --no-index --no-deps "$WHEEL" || exit 1
  export CUTLAX_EXPECT_JAXLIB_HEADERS=$(sed -n 's/.*"jaxlib==\([0-9.]*\)".*/\1/p' pyproject.toml)
else
  step "build against this machine's jaxlib"
  # In build/gpu, so that a second run on the same machine rebuilds only
  # what changed.
  # Stated either way: build/gpu's CMake cache keeps the last value.
  tuning=OFF; [[ " ${STEPS:-} " == *" tune "* ]] && tuning=ON
  if ! python3 -m pip install --no-build-isolation --no-deps -v -C build-dir=build/gpu \
       -C cmake.define.CUTLAX_GEMM_TUNING=$tuning . >"$out/build.log" 2>&1; then
    tail -50 "$out/build.log"
    exit 1
  fi
  grep -E "warning|ptxas" "$out/build.log" | grep -v "^ *$" | head -20
fi

steps=" ${STEPS:-doctor sass sweep example tests demo jitcompile bench} "
want() { [[ "$steps" == *" $1 "* ]]; }

if want doctor; then
step "doctor"
python3 -X faulthandler -m cutlax doctor 2>&1 | tee -a "$out/doctor.txt" || status=1
fi

step "SASS instruction mix of the GEMMs"
if want sass && command -v cuobjdump >/dev/null; then
  ext=$(python3 -c "import cutlax._cutlax as m; print(m.__file__)")
  # Per kernel: tensor-core (HGMMA), FMA, shared/global/local memory
  # instructions, in POSIX awk (mawk, Debian's default, has no \< \> anchors):
  # the opcode is the first word after the /*address*/ comment and any
  # predicate, without its .modifiers.
  cuobjdump --dump-sass "$ext" | awk '/Function :/ {name = $3; keep = (name ~ /gemm/)}
      keep && /\/\*[0-9a-f]+\*\// {
        line = $0; sub(/^[^\/]*\/\*[0-9a-f]+\*\/[ \t]*/, "", line); sub(/^@!?U?P[0-9T]+[ \t]+/, "", line)
        split(line, word, /[ .;]/)
        if (word[1] ~ /^(HGMMA|FFMA|LDSM|LDS|STS|LDG|STG|UTMALDG|UTMASTG|LDL|STL)$/) print substr(name, 1, 60), word[1]
      }' | sort | uniq -c | sort -k2,2 -k1,1rn \
    | tee "$out/sass_gemm.txt" | head -40
fi

step "elementwise tuning sweep (bench/elementwise_sweep.cu)"
cutlass=$(python3 -c "import importlib.util, os; print(os.path.join(list(importlib.util.find_spec('cutlass_library').submodule_search_locations)[0], 'source'))")
ffi=$(python3 -c "import jax; print(jax.ffi.include_dir())")
if ! want sweep; then
  echo skipped
elif nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
     -Iinclude -Isrc/ops -isystem "$cutlass/include" -isystem "$ffi" \
     bench/elementwise_sweep.cu -o /tmp/elementwise_sweep; then
  /tmp/elementwise_sweep | tee "$out/sweep.txt" || status=1
else
  status=1
fi

if want example; then
  step "examples/custom_op against the installed cutlax"
  if cmake -S examples/custom_op -B examples/custom_op/build -G Ninja \
       -Dcutlax_DIR="$(python3 -m cutlax --cmake-dir)" >"$out/example_build.log" 2>&1 &&
     cmake --build examples/custom_op/build >>"$out/example_build.log" 2>&1; then
    python3 examples/custom_op/rms_norm.py 2>&1 | tee "$out/rms_norm.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  else
    tail -30 "$out/example_build.log"
    status=1
  fi
fi

if want tests; then
  step "tests on the GPU"
  # shellcheck disable=SC2086
  # The example's tests need its library, which the example step builds.
  default_tests="tests/python"
  want example && default_tests="$default_tests examples/custom_op"
  python3 -m pytest ${TESTS:-$default_tests} -q -rs -p no:cacheprovider 2>&1 | tee "$out/pytest.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want demo; then
  step "demo"
  python3 -X faulthandler -m cutlax demo 2>&1 | tee "$out/demo.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want jitcompile; then
  step "cutlax.jit compile latency (bench/jit_compile.py)"
  python3 bench/jit_compile.py --repeats 3 --json "$out/jit_compile.json" 2>&1 | tee "$out/jit_compile.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want bench; then
  step "benchmark"
  python3 -X faulthandler -m cutlax bench --json "$out/bench.json" --png "$out/bench.png" "$@" 2>&1 | tee "$out/bench.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want jitbench; then
  step "cutlax.jit Hopper kernels: the TMA transpose and the jit GEMM against XLA"
  python3 -X faulthandler bench/jit_tma_copy.py "$out/jit_tma_copy.json" 2>&1 | tee "$out/jit_tma_copy.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  python3 -X faulthandler bench/jit_gemm.py "$out" 2>&1 | tee "$out/jit_gemm.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want tune; then
  step "GEMM tuning measurements (bench/gemm_tune.py)"
  python3 -X faulthandler bench/gemm_tune.py --sections "${TUNE_SECTIONS:-tiles,f32,mlp}" ${TUNE_ARGS:-} --out "$out" 2>&1 |
    tee "$out/gemm_tune.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want sanitize; then
  step "compute-sanitizer over every CUDA kernel (tests/gpu/sanitize.sh)"
  bash tests/gpu/sanitize.sh "$out" || status=1
fi
exit $status
