#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp) and runs each one
# for a while: the whole project compiled by clang with ASan, UBSan and
# libFuzzer's coverage, in a build directory of its own, CPU handlers only.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET (10)] [BUILD_DIR (build/fuzz)] [CMAKE_OPTION...]
#   bash scripts/fuzz.sh 600     # a longer run: ten minutes per harness
#
# scripts/sanitize.sh runs it on build/asan with -DCUTLAX_BUILD_TESTS=ON, and
# then builds the C++ tests and the extension there: one ASan + UBSan build
# serves the fuzzers, the C++ tests and the Python smoke run.
#
# Each harness replays the checked-in seeds (tests/fuzz/corpus/<harness>,
# never written) and BUILD_DIR/corpus/<harness>, where it keeps what it finds,
# so longer runs build on each other (rm -rf BUILD_DIR/corpus to start over),
# and an updated regression seed is always replayed. Findings
# (crash-*, leak-*, timeout-*, oom-*) go to BUILD_DIR/findings/<harness>/, the
# fuzzer's output to BUILD_DIR/logs/<harness>.log; replay one with
#   BUILD_DIR/tests/fuzz/<harness> BUILD_DIR/findings/<harness>/crash-...
# and, once fixed, add it to tests/fuzz/corpus/<harness>/ as a regression seed.
#
# Exits non-zero when a harness found something. Needs clang++ with
# compiler-rt (Debian: clang, libclang-rt-dev), CMake, and a python3 with jax
# (for the FFI headers), as a normal build does. CXX_FUZZ picks the compiler,
# PYTHON the interpreter, JOBS the build's parallelism (2), FUZZ_JOBS how many
# harnesses run at once (2: each is one process on one core).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
build=${2:-build/fuzz}
shift $(($# < 2 ? $# : 2))  # the rest: more CMake options for the build folder
cxx=${CXX_FUZZ:-clang++}
py=${PYTHON:-python3}

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
# The same instrumentation everywhere (the harnesses add -fsanitize=fuzzer's
# main); UBSan aborts, so libFuzzer counts undefined behaviour as a crash.
# -O1 runs no loop unroller, so each of CuTe's CUTE_UNROLL pragmas would warn.
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
sanitize+=" -Wno-pass-failed"
start=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
  -DCUTLAX_ENABLE_CUDA=OFF -DCUTLAX_BUILD_FUZZERS=ON -DPython_EXECUTABLE="$(command -v "$py")" \
  "$@" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --target cutlax_fuzzers -j "${JOBS:-2}"
echo "fuzz build: $(($(date +%s) - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# One of libFuzzer's -print_final_stats values from a log.
final_stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -n 1; }
# One harness: its summary line in $build/logs/<name>.line, its exit
# status in <name>.status.
fuzz_one() {
  local name=$1
  local corpus=$build/corpus/$name findings=$build/findings/$name log=$build/logs/$name.log
  mkdir -p "$corpus" "$findings"
  local options=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
                 -artifact_prefix="$findings/")
  if [ -f "tests/fuzz/$name.dict" ]; then options+=(-dict="tests/fuzz/$name.dict"); fi
  local t0 status=0
  t0=$(date +%s)
  touch "$findings/.started"  # to tell this run's findings from earlier ones
  # The working corpus first (new inputs go there), the checked-in seeds
  # second: libFuzzer replays both and writes only to the first.
  "$build/tests/fuzz/$name" "${options[@]}" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  echo "$status" >"$build/logs/$name.status"
  local elapsed=$(($(date +%s) - t0)) cov ft execs rate line
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  execs=$(final_stat "$log" number_of_executed_units)
  rate=$(final_stat "$log" average_exec_per_sec)
  line="$name: ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?},"
  line+=" corpus $(find "$corpus" -type f | wc -l) files, ${elapsed} s,"
  line+=" peak rss $(final_stat "$log" peak_rss_mb) MB"
  if [ "$status" -ne 0 ]; then
    line+=" -- FOUND SOMETHING (exit $status): $log"
    {
      grep -m 3 -E '^(SUMMARY|==[0-9]+==ERROR)|runtime error|fuzz_[a-z_]*: ' "$log" || tail -n 20 "$log"
      find "$findings" -type f -newer "$findings/.started" -printf '  finding: %p\n'
      echo "  replay: $build/tests/fuzz/$name FINDING"
    } >"$build/logs/$name.report"
  fi
  echo "$line" >"$build/logs/$name.line"
}

# The harnesses run FUZZ_JOBS (2) at a time: each is one process on one core.
mkdir -p "$build/logs"
rm -f "$build"/logs/*.line "$build"/logs/*.status "$build"/logs/*.report
names=()
for source in tests/fuzz/fuzz_*.cpp; do
  name=$(basename "$source" .cpp)
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "${FUZZ_JOBS:-2}" ]; do wait -n || true; done
  echo "== $name: $seconds s"
  fuzz_one "$name" &
done
wait
failed=0
summary=()
for name in "${names[@]}"; do
  line=$(cat "$build/logs/$name.line" 2>/dev/null || echo "$name: no summary, see $build/logs/$name.log")
  if [ "$(cat "$build/logs/$name.status" 2>/dev/null || echo 1)" -ne 0 ]; then
    failed=1
    cat "$build/logs/$name.report" 2>/dev/null || tail -n 20 "$build/logs/$name.log"
  fi
  echo "$line"
  summary+=("$line")
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
