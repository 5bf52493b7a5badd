#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck, initcheck and synccheck over every
# CUDA kernel of the installed cutlax: scripts/gpu_check.sh's step `sanitize`
# (STEPS=sanitize scripts/gpu_check.sh OUT), or alone once cutlax is built:
#
#   bash tests/gpu/sanitize.sh OUT_DIR
#   bash tests/gpu/sanitize.sh --self-check   # no GPU, no sanitizer: see below
#
# Two parts under each tool:
#   driver  tests/gpu/sanitize_driver.cpp, built here with nvcc, calls every
#           CUDA handler of the extension's table through a fake XLA call
#           frame on exact-size cudaMallocs, at sizes that hit every tail
#           (python3 hosts it: tests/gpu/run_driver.py says why). JAX under
#           the sanitizer is far too slow for this: initcheck ran past 200 s.
#           racecheck and initcheck, the slow tools, get the reduced case set
#           (two GEMM cases per SM90 kernel instead of eight; the same
#           elementwise cases).
#   jit     tests/gpu/sanitize_jit.py: the cutlax.jit kernels, which only JAX
#           launches, with --kernel-name kns=cutlax_sanitize so that XLA's own
#           kernels are neither instrumented nor checked. Under memcheck a
#           planted bad read (--control) must then be reported: the proof
#           that the filter matched the NVRTC-loaded kernels.
# Plain runs of both come first, without a sanitizer: a failure there is the
# code's, not a tool's finding (and the jit one fills the compile cache the
# sanitized runs read).
#
# Output: OUT_DIR/sanitize_<tool>.txt per tool, each part under a "==== "
# header with its command line; a line per part as it ends and a summary line
# per tool ("memcheck: driver ... 0 errors | jit ... 0 errors"). Exits 1 on a
# sanitizer error, a failed case, a time-out or an unreported control.
#
# --self-check checks this machinery where there is no GPU (a CPU-only build
# of cutlax will do): it builds the driver, runs every case through the CPU
# twins (same call frames, refusals and host references; `--cpu`) and
# compiles every cutlax.jit kernel for sm_90a and lowers every case for CUDA.
#
# SANITIZE_TOOLS      the tools (default "memcheck racecheck initcheck synccheck")
# SANITIZE_JIT_TOOLS  the tools the jit part runs under (default SANITIZE_TOOLS);
#                     the part costs a JAX start-up per tool, e.g. leave out
#                     initcheck if it is too slow there
# SANITIZE_REDUCED    the tools that get the driver's reduced set (default
#                     "racecheck initcheck")
# SANITIZE_TIMEOUT    seconds per sanitized run (default 240; the control 120)
set -uo pipefail
out=${1:?usage: tests/gpu/sanitize.sh OUT_DIR | --self-check}
if [ "$out" != --self-check ]; then
  mkdir -p "$out" && out=$(cd "$out" && pwd)
fi
cd "$(dirname "$0")/../.." || exit 1

tools=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
jit_tools=" ${SANITIZE_JIT_TOOLS:-$tools} "
reduced=" ${SANITIZE_REDUCED:-racecheck initcheck} "
limit=${SANITIZE_TIMEOUT:-240}
status=0

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "sanitize: needs nvcc (PATH or /usr/local/cuda/bin)"; exit 1; }
py=$(python3 -c "import sys; print(sys.executable)")  # the interpreter itself, no shim
ext=$("$py" -c "import cutlax._cutlax as m; print(m.__file__)") || exit 1
ffi=$("$py" -c "import jax; print(jax.ffi.include_dir())") || exit 1
# The plain run compiles the jit kernels into this cache; the sanitized ones read it.
export CUTLAX_CACHE_DIR=${CUTLAX_CACHE_DIR:-/tmp/cutlax-sanitize-jit-cache}

# The driver: host code only (no device code, no CUTLASS), cudart linked statically.
driver=/tmp/cutlax_sanitize_driver.so
build=("$nvcc" -std=c++17 -O1 -g -Xcompiler -fPIC -Xcompiler -Wall -Xcompiler -Wextra -shared
  -Iinclude -Isrc -Itests/cpp -isystem "$ffi" tests/gpu/sanitize_driver.cpp -o "$driver" -ldl)
echo "\$ ${build[*]}"
"${build[@]}" || exit 1
run_driver=("$py" -S tests/gpu/run_driver.py "$driver" "$ext")
run_jit=("$py" tests/gpu/sanitize_jit.py)

if [ "$out" = --self-check ]; then
  "${run_driver[@]}" --cpu --quiet || status=1
  "${run_jit[@]}" --compile-only 2>&1 | tail -5
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  exit $status
fi

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "sanitize: needs compute-sanitizer (PATH or /usr/local/cuda/bin)"; exit 1; }
"$sanitizer" --version | tail -1

printf '\n-- plain runs, no sanitizer\n'
"${run_driver[@]}" --quiet 2>&1 | tail -15
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
"${run_jit[@]}" 2>&1 | tail -20
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# The options of TOOL for PART (driver, jit or control), into `opts`.
options() {
  opts=(--tool "$1" --error-exitcode 1 --target-processes application-only)
  case $1 in
    # Padding after each allocation: an overrun reaches no neighbouring one.
    # A bad access ends its kernel only, so one run reports every bad case
    # (and the control returns instead of leaving JAX a dead context).
    memcheck) opts+=(--padding 512 --destroy-on-device-error kernel) ;;
    # Hazards and the analysis both: the accesses, threads and addresses of a race.
    racecheck) opts+=(--racecheck-report all) ;;
    # Also cudaMemcpy of bytes never written: each result is copied back whole.
    # (--track-unused-memory would report the misaligned cases' unused first
    # element, by design.)
    initcheck) opts+=(--check-api-memory-access yes) ;;
  esac
  if [ "$2" = driver ]; then
    # The handlers may not allocate (XLA captures them into CUDA graphs), and
    # the driver frees everything it allocates.
    [ "$1" = memcheck ] && opts+=(--leak-check full)
  else
    # Only cutlax.jit's kernels (all in namespace cutlax_sanitize); XLA's CUDA
    # API errors are not ours (a failed launch of ours fails its case anyway).
    opts+=(--kernel-name kns=cutlax_sanitize --report-api-errors no)
  fi
}

# Runs COMMAND... under the sanitizer, appending it to LOG under a header.
# Sets part_rc, part_secs, part_text (the part's output) and part_errors
# (compute-sanitizer's ERROR SUMMARY count, empty if it printed none).
sanitized() {
  local log=$1 label=$2 seconds=$3
  shift 3
  local from start
  from=$(stat -c %s "$log")
  printf '\n==== %s\n$ %s\n' "$label" "$*" >>"$log"
  start=$SECONDS
  timeout -k 10 "$seconds" "$@" >>"$log" 2>&1
  part_rc=$?
  part_secs=$((SECONDS - start))
  printf '==== %s: exit %d after %d s\n' "$label" "$part_rc" "$part_secs" >>"$log"
  part_text=$(tail -c +$((from + 1)) "$log")
  # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W
  # warnings)" instead (seen on the H200, compute-sanitizer 2025.3.1).
  part_errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: .*\([0-9]+ error' <<<"$part_text" |
    tail -1 | grep -oE '[0-9]+ error' | grep -oE '[0-9]+')
}

# The verdict on the part just run, whose own summary line starts with
# PREFIX; prints the part's line (and its first reports when it failed) and
# sets `verdict` for the tool's summary.
judge() {
  local name=$1 prefix=$2 line
  line=$(grep "^$prefix" <<<"$part_text" | tail -1)
  line=${line#"$prefix"}
  verdict="${line:-no summary line}; ${part_errors:-?} errors (${part_secs} s)"
  if [ "$part_rc" -eq 124 ] || [ "$part_rc" -eq 137 ]; then
    verdict="TIMED OUT after $part_secs s (SANITIZE_TIMEOUT=$limit); ${line:-no summary line}"
  elif [ -z "$part_errors" ]; then
    verdict="FAILED: no ERROR SUMMARY (exit $part_rc); ${line:-no summary line}"
  elif [ "$part_errors" -ne 0 ] || [ "$part_rc" -ne 0 ] || [ -z "$line" ]; then
    verdict="FAILED (exit $part_rc): $verdict"
  else
    echo "$name: $verdict"
    return 0
  fi
  status=1
  echo "$name: $verdict"
  # The first reports (the sanitizer's with their kernel, thread and address
  # lines, the cases' own), each after the line before it: the case that ran.
  grep -v -E '^========= (COMPUTE-SANITIZER|ERROR SUMMARY|LEAK SUMMARY)' <<<"$part_text" |
    grep -E -m 12 -B1 -A4 '^========= [A-Z]|FAILED|STOPPED|Traceback' | head -60
  echo "   (the whole output: $log)"
}

declare -A summary
for tool in $tools; do
  log=$out/sanitize_$tool.txt
  printf 'compute-sanitizer --tool %s, %s\n' "$tool" "$(date -u +%FT%TZ)" >"$log"
  printf '\n-- %s\n' "$tool"
  cases=full
  [[ $reduced == *" $tool "* ]] && cases=reduced
  options "$tool" driver
  sanitized "$log" "driver ($cases cases)" "$limit" "$sanitizer" "${opts[@]}" "${run_driver[@]}" --cases "$cases"
  judge "$tool driver" "sanitize_driver: "
  summary[$tool]="driver $verdict"
done

for tool in $tools; do
  [[ $jit_tools == *" $tool "* ]] || {
    summary[$tool]+=" | jit skipped (SANITIZE_JIT_TOOLS)"
    continue
  }
  log=$out/sanitize_$tool.txt
  printf '\n-- %s, cutlax.jit\n' "$tool"
  options "$tool" jit
  sanitized "$log" "cutlax.jit" "$limit" "$sanitizer" "${opts[@]}" "${run_jit[@]}"
  judge "$tool jit" "sanitize_jit: "
  summary[$tool]+=" | jit $verdict"
  if [ "$tool" = memcheck ]; then
    # The control must be reported, in our kernel: else the filter checked nothing.
    sanitized "$log" "cutlax.jit control (must be reported)" 120 "$sanitizer" "${opts[@]}" \
      "${run_jit[@]}" --control
    if [ "${part_errors:-0}" -ge 1 ] && grep -q '^=========.*oob_control' <<<"$part_text"; then
      echo "memcheck jit control: reported ($part_errors errors, ${part_secs} s)"
      summary[$tool]+=" | control reported"
    else
      status=1
      echo "memcheck jit control: NOT REPORTED (errors: ${part_errors:-none}, exit $part_rc):" \
        "the kernel-name filter matched no cutlax.jit kernel, so the jit runs checked nothing"
      summary[$tool]+=" | control NOT REPORTED"
    fi
  fi
done

printf '\n-- summary (logs: %s/sanitize_<tool>.txt)\n' "$out"
for tool in $tools; do echo "$tool: ${summary[$tool]}"; done
exit $status
