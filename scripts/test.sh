#!/usr/bin/env bash
# Quick start, step 2: set up and build if needed, then run every test suite.
# GPU suites report "Skipped" on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
ctest --test-dir build --output-on-failure
