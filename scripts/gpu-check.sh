#!/usr/bin/env bash
# On the lent GPU machine (see README "Working on the GPU machine"): builds for sm_90,
# runs every test suite, then the benchmarks named as arguments. Logs go to $OUT
# (or ./gpu-logs). Carry .deps; for the FAISS baseline also carry the wheel (README).
#   bash scripts/gpu-check.sh                  # build + all tests
#   bash scripts/gpu-check.sh bench_flat bench_ivf bench_bang
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"
mkdir -p "$out"
source .deps/install-deps.sh >/dev/null 2>&1
cmake -S . -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
grep -E "faiss_ext:" "$out/cmake.log"
cmake --build build-gpu -j"$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -20; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ctest --test-dir build-gpu --output-on-failure 2>&1 | tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|Failure" 
status=${PIPESTATUS[0]}
for b in "$@"; do
  echo "== $b"
  "build-gpu/benchs/$b" 2>&1 | tee "$out/$b.txt"
done
exit "$status"
