#!/usr/bin/env bash
# Installs the build dependencies (Debian packages) and builds everything into build/.
# Safe to run again: it installs only what is missing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake g++ make ccache libfaiss-dev libopenblas-dev libgtest-dev pybind11-dev
      python3-dev python3-numpy python3-pytest)
# faiss's Python module: the tests move indexes between it and faiss_ext.
pkgs+=(python3-faiss)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "setup: nvcc (the CUDA Toolkit) is not installed; install CUDA 12 or 13 first" >&2
    exit 1
  fi
fi

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# The Python packages above are Debian's, for /usr/bin/python3; another python3 may
# come first on PATH (pyenv, a virtualenv), so name the interpreter. "$@" may override.
python=()
[ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${python[@]}" "$@"
cmake --build build -j"$(nproc)"
