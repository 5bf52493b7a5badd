#!/usr/bin/env bash
# Measures a change to the GEMM kernels' configuration before it lands: copies
# this tree, applies a sed expression to src/ops/gemm_sm90.cuh in the copy,
# builds and installs that copy (the same kernel list, so the build and CI's
# time stay as they are) and runs bench/gemm_tune.py on it. Run it after
# scripts/gpu_check.sh's tune step on the same machine, whose figures for the
# unchanged kernels it is compared with (each against XLA in its own process).
# The variant stays installed: scripts/gpu_check.sh puts the tree's own
# build back.
#
#   bench/kernel_variant.sh OUT_DIR SED_EXPRESSION [gemm_tune.py args...]
#
# e.g. the 128x128 ping-pong kernel on a 2x1 cluster:
#   bench/kernel_variant.sh OUT 's/Config<T, 128, 128, 1, cutlass::gemm::KernelTmaWarpSpecializedPingpong/Config<T, 128, 128, 2, cutlass::gemm::KernelTmaWarpSpecializedPingpong/' --sections mlp
# Needs the CUTLASS wheel in .whl/, as scripts/gpu_check.sh does.
set -euo pipefail
out=${1:?usage: bench/kernel_variant.sh OUT_DIR SED_EXPRESSION [gemm_tune.py args...]}
expression=${2:?usage: bench/kernel_variant.sh OUT_DIR SED_EXPRESSION [gemm_tune.py args...]}
shift 2
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1

python3 -m pip install -q --no-index --no-deps --target /tmp/cutlass-site .whl/nvidia_cutlass-*.whl
export PYTHONPATH=/tmp/cutlass-site${PYTHONPATH:+:$PYTHONPATH}

copy=/tmp/cutlax-variant
rm -rf "$copy" && mkdir -p "$copy"
tar --exclude=./build --exclude=./.git --exclude=./dist -cf - . | tar -xf - -C "$copy"
header=$copy/src/ops/gemm_sm90.cuh
sed -i "$expression" "$header"
if cmp -s src/ops/gemm_sm90.cuh "$header"; then
  echo "kernel_variant.sh: the expression changed nothing in src/ops/gemm_sm90.cuh" >&2
  exit 1
fi
diff -u src/ops/gemm_sm90.cuh "$header" | tee "$out/variant.diff" || true
python3 -m pip install --no-build-isolation --no-deps -v -C build-dir="$copy/build" "$copy" \
  >"$out/variant_build.log" 2>&1 || { tail -40 "$out/variant_build.log"; exit 1; }
grep -E "warning|ptxas" "$out/variant_build.log" | head -20 || true
python3 -X faulthandler bench/gemm_tune.py --out "$out" "$@" 2>&1 | tee "$out/variant_tune.txt"
