#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (CONTRIBUTING.md): builds into build-gpu/ for the GPU
# present (CUDA_ARCHITECTURES=90, say, to pick one), runs every test suite, then the
# benchmarks named as arguments. Logs go to $OUT (or ./gpu-logs).
#   bash scripts/gpu-check.sh                  # build + all tests
#   bash scripts/gpu-check.sh bench_flat bench_ivf bench_bang bench_filtered
#   bash scripts/gpu-check.sh --sanitize       # build + every GPU suite under
#                                              # compute-sanitizer (sanitize-gpu-suites.sh)
# The build dependencies are those scripts/setup.sh installs; a machine that gets them
# another way (no network access, say) puts a script that provides them at
# .deps/install-deps.sh, which is sourced first.
set -uo pipefail
cd "$(dirname "$0")/.."
sanitize=0
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  shift
fi
out="${OUT:-gpu-logs}"
mkdir -p "$out"
if [ -f .deps/install-deps.sh ]; then
  source .deps/install-deps.sh >/dev/null 2>&1
fi
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-native}" \
  >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
grep -E "faiss_ext:" "$out/cmake.log"
cmake --build build-gpu -j"$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -20; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "$sanitize" = 1 ]; then
  bash scripts/sanitize-gpu-suites.sh build-gpu "$out"
  status=$?
else
  ctest --test-dir build-gpu --output-on-failure 2>&1 | tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|Failure"
  status=${PIPESTATUS[0]}
fi
for b in "$@"; do
  echo "== $b"
  "build-gpu/benchs/$b" 2>&1 | tee "$out/$b.txt"
done
exit "$status"
