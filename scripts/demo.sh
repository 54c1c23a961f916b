#!/usr/bin/env bash
# Quick start, step 1: set up, build, and run the demo search (needs an NVIDIA GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/benchs/faiss_ext_demo
