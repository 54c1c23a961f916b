#!/usr/bin/env bash
# Installs build/ (scripts/setup.sh made it) into build/prefix as a CMake package,
# then builds and runs examples/cpp against it the way a user's project would. The
# example exits 2 without a GPU ("no CUDA device found"), which counts as success here.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
prefix="$PWD/build/prefix"
rm -rf "$prefix" build/example
cmake --install build --prefix "$prefix" >/dev/null
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S examples/cpp -B build/example -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
cmake --build build/example -j"$(nproc)" >/dev/null
status=0
build/example/ivf_flat_example || status=$?
if [ "$status" -eq 0 ] || [ "$status" -eq 2 ]; then
  echo "check-install: find_package(faiss_ext) consumer built; example exited $status"
else
  echo "check-install: the example failed with status $status" >&2
  exit 1
fi
