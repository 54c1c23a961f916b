#!/usr/bin/env bash
# Per-kernel device times of a benchmark's profiled region, one line per kernel and
# launch shape: name, grid x block, unit, then min / max / average of gpu__time_duration.
#   bash scripts/ncu-kernels.sh build-gpu/benchs/bench_ivf_small 1000000 4096 --profile 16 10 1024 list-major
# The benchmark brackets the searches to measure with cudaProfilerStart / Stop; clocks and
# caches are left as they run (--clock-control none --cache-control none).
set -uo pipefail
ncu --profile-from-start off --cache-control none --clock-control none \
  --metrics gpu__time_duration.sum --print-summary per-kernel "$@" 2>&1 | python3 -c '
import re, sys
name = None
for line in sys.stdin:
    m = re.match(r"\s+(?:void )?([\w:<>, ]+?)\s*(?:\([^()]*\))?\s*(\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))", line)
    if m:
        name = m.group(1).replace("faiss_ext::<unnamed>::", "")[:48]
        shape = m.group(2).replace(" ", "")
        continue
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", line)
    if m and name:
        print(f"{name:48} {shape:24} {m.group(1):5} {m.group(2):>9} {m.group(3):>9} {m.group(4):>9}")
        name = None
'
