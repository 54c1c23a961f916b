#!/usr/bin/env bash
# Builds the wheel (pip wheel ., scikit-build-core from PyPI, the same CMake as build/),
# imports it in a fresh virtual environment and runs the CPU Python suite there against
# it, and against build/'s module, under the NumPy pip picks (the newest) instead of
# Debian's. Uses Debian's python3 as
# scripts/setup.sh does. ccache serves the library's objects compiled for build/ when
# CCACHE_BASEDIR is the repository (build-wheel/ lies at the same depth) and both use
# the same generator.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CMAKE_GENERATOR="Unix Makefiles"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
fi
python=/usr/bin/python3
work=build-wheel/check
rm -rf "$work"
mkdir -p "$work"
"$python" -m venv "$work/build-env"
"$work/build-env/bin/pip" install -q --upgrade pip
"$work/build-env/bin/pip" wheel -q --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/faiss_ext-*.whl)
echo "check-wheel: built $(basename "$wheel")"

"$python" -m venv "$work/test-env"
"$work/test-env/bin/pip" install -q "$wheel"
# Run from elsewhere, so that nothing of the source tree is importable.
(cd "$work" && test-env/bin/python - <<'PY'
import pathlib, sysconfig
import numpy as np
import faiss_ext
assert pathlib.Path(faiss_ext.__file__).is_relative_to(sysconfig.get_paths()["platlib"])
stubs = pathlib.Path(sysconfig.get_paths()["platlib"]) / "faiss_ext-stubs" / "__init__.pyi"
assert stubs.is_file(), stubs
x = faiss_ext._check_vectors(np.zeros((3, 4), np.float64), 4)
assert x.dtype == np.float32 and x.shape == (3, 4)
print(f"check-wheel: imported {faiss_ext.__file__} ({faiss_ext.get_num_gpus()} GPU(s)), stubs present")
PY
)

# The CPU Python suite with pip's NumPy: against the wheel (PYTHONPATH holds only the
# datasets' helpers), then against build/'s module (built with the pybind11 CMake found,
# Debian's by default: NumPy 2 broke an itemsize() read of pybind11 < 2.12 there).
repo=$PWD
"$work/test-env/bin/pip" install -q pytest
for module_path in "" "$repo/build/python:"; do
  (cd "$work" && PYTHONPATH="${module_path}$repo/benchs/datasets" PYTHONDONTWRITEBYTECODE=1 \
    test-env/bin/python -m pytest "$repo/tests/python" -q -p no:cacheprovider -m "not gpu")
done
echo "check-wheel: CPU Python suite passed with NumPy $("$work/test-env/bin/python" -c 'import numpy; print(numpy.__version__)')"
