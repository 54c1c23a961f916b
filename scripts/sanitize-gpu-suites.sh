#!/usr/bin/env bash
# Runs every GPU suite under compute-sanitizer's memcheck (with leak check), racecheck,
# synccheck and initcheck; `scripts/gpu-check.sh --sanitize` calls it after the build.
#   bash scripts/sanitize-gpu-suites.sh BUILD_DIR LOG_DIR
# Every test (every file of the Python suite) runs as a process of its own, under one
# tool, SANITIZE_JOBS of them at once (default 8), spread over the GPUs (the tests that
# need two devices see them all). Under the tools the suites run smaller (FAISS_EXT_SANITIZE=1:
# fewer and smaller shapes, a 5-second soak) and leave out the tests whose size is their
# point (listed in `skip` below; smaller tests run the same kernels). Each process is
# bounded by SANITIZE_TIMEOUT seconds (default 300). SANITIZE_TOOLS and SANITIZE_SUITES
# pick a subset, SANITIZE_FILTER the C++ tests (a gtest filter); SANITIZE_KERNELS is
# synccheck's kernel filter (default kns=faiss_ext).
# One line per tool and suite (its slowest test beside it), a log per test in
# LOG_DIR/TOOL/SUITE/; the status is 0 only when every test ran clean, with no error or
# hazard reported (77 when there is no device to run on).
set -uo pipefail
build="${1:?build directory}"
out="${2:?log directory}"
cs="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[ -x "$cs" ] || { echo "sanitize: compute-sanitizer not found" >&2; exit 1; }
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "sanitize: no CUDA device here"
    exit 77
fi

# The slow tools first: their long tests then start while the fast tools fill the gaps.
read -r -a tools <<<"${SANITIZE_TOOLS:-racecheck initcheck memcheck synccheck}"
read -r -a suites <<<"${SANITIZE_SUITES:-gpu_flat_tests gpu_ivf_tests gpu_bang_tests gpu_contract_tests gpu_soak_tests gpu_shards_tests python_gpu_tests}"
# Device-memory exhaustion holds all free memory (the tools need some for their own
# state); the other tests are left out for their size alone.
skip='*DeviceMemoryExhausted*:*RecallOnClustered100K*:*TenThousandQueriesInSmallPages*'
skip+=':*SmallBudgetsGiveTheSameResults*:*GpuKMeansTrainsAGoodQuantizer*'
skip+=':*WithoutASecondHostCopy*'
# Under racecheck and initcheck every suite runs on the plain products, which this test
# compares with cuBLAS's.
skip+=':*PlainProductsMatchCpu*'
export FAISS_EXT_SANITIZE=1
export FAISS_EXT_SOAK_SECONDS="${FAISS_EXT_SOAK_SECONDS:-5}"
export SANITIZE_CS="$cs" SANITIZE_BUILD="$build" SANITIZE_OUT="$out"
export SANITIZE_LIMIT="${SANITIZE_TIMEOUT:-300}"
export SANITIZE_SYNC_KERNELS="${SANITIZE_KERNELS:-kns=faiss_ext}"
export SANITIZE_PYTHON
SANITIZE_PYTHON="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"

# The tests of a suite, one a line: gtest names, or the Python files with GPU tests.
list_tests() {
    if [ "$1" = python_gpu_tests ]; then
        grep -l "pytest.mark.gpu" tests/python/test_*.py
    else
        "$build/tests/$1" --gtest_list_tests --gtest_filter="${SANITIZE_FILTER:-*}-$skip" | awk '
            /^[^ ]/ { group = $1; next }
            /^  / { print group $1 }'
    fi
}

# One job: "GPU TOOL SUITE TEST". Writes LOG_DIR/TOOL/SUITE/TEST.log, whose last line
# is "status STATUS SECONDS".
run_one() {
    local gpu tool suite name
    read -r gpu tool suite name <<<"$1"
    local dir="$SANITIZE_OUT/$tool/$suite"
    local log="$dir/$(echo "$name" | tr '/' '_').log"
    local extra=() env=()
    # Leaks: the C++ suites only (the interpreter does not free everything at exit).
    [ "$tool" = memcheck ] && [ "$suite" != python_gpu_tests ] && extra=(--leak-check full)
    # synccheck looks at faiss_ext's own kernels only (cuBLAS's and CUB's are the
    # vendor's, and instrumenting cuBLAS's sm_90 GEMMs is most of its time).
    [ "$tool" = synccheck ] && extra+=(--kernel-name "$SANITIZE_SYNC_KERNELS")
    # racecheck and initcheck do not follow cuBLAS's sm_90 GEMMs (racecheck reports
    # hazards inside them, or fails on them when they are filtered out; initcheck does
    # not see their writes): the products run on faiss_ext's plain kernel
    # (GpuResourcesConfig::plainProducts). memcheck keeps cuBLAS.
    case "$tool" in racecheck | initcheck) env=(FAISS_EXT_PLAIN_PRODUCTS=1) ;; esac
    # Spread over the GPUs; the tests of several devices see them all.
    case "$name" in *TwoDevices*) ;; *) env+=(CUDA_VISIBLE_DEVICES="$gpu") ;; esac
    local cmd
    if [ "$suite" = python_gpu_tests ]; then
        cmd=(env "PYTHONPATH=$SANITIZE_BUILD/python:benchs/datasets" "${SANITIZE_PYTHON:-python3}"
             -m pytest "$name" -q -p no:cacheprovider -m gpu)
    else
        cmd=("$SANITIZE_BUILD/tests/$suite" "--gtest_filter=$name")
    fi
    local start=$SECONDS
    env "${env[@]}" timeout "$SANITIZE_LIMIT" "$SANITIZE_CS" --tool "$tool" "${extra[@]}" \
        --error-exitcode 86 "${cmd[@]}" >"$log" 2>&1
    echo "status $? $((SECONDS - start))" >>"$log"
}
export -f run_one

gpus="$(nvidia-smi -L | grep -c '^GPU')"
jobs_file="$(mktemp)"
for tool in "${tools[@]}"; do
    for suite in "${suites[@]}"; do
        mkdir -p "$out/$tool/$suite"
        list_tests "$suite" | sed "s|^|$tool $suite |" >>"$jobs_file"
    done
done
awk -v n="$gpus" '{ print (NR - 1) % n, $0 }' "$jobs_file" >"$jobs_file.gpu"
mv "$jobs_file.gpu" "$jobs_file"
start_all=$SECONDS
xargs -P "${SANITIZE_JOBS:-8}" -d '\n' -n 1 bash -c 'run_one "$1"' _ <"$jobs_file"
rm -f "$jobs_file"

status=0
for tool in "${tools[@]}"; do
    for suite in "${suites[@]}"; do
        clean=0 bad=0 slowest="" worst=0 notes=""
        for log in "$out/$tool/$suite"/*.log; do
            [ -f "$log" ] || continue
            read -r _ rc secs <<<"$(tail -1 "$log")"
            name="$(basename "$log" .log)"
            [ "$secs" -gt "$worst" ] && worst=$secs slowest=$name
            # pytest's 5: the file's GPU tests were all deselected (none to run).
            if [ "$rc" = 0 ] || [ "$rc" = 5 ]; then
                clean=$((clean + 1))
                continue
            fi
            bad=$((bad + 1))
            case $rc in
                86) why="errors reported" ;;
                124) why="timeout after ${SANITIZE_LIMIT}s" ;;
                *) why="failed (status $rc)" ;;
            esac
            notes+="    $name: $why ($(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed 's/^========= //'))"$'\n'
        done
        verdict=clean
        if [ "$bad" -gt 0 ] || [ "$clean" = 0 ]; then
            verdict="NOT CLEAN"
            status=1
        fi
        printf "%-10s %-20s %-9s %3d clean, %d not; slowest %s (%ss)\n" \
            "$tool" "$suite" "$verdict" "$clean" "$bad" "$slowest" "$worst"
        printf "%s" "$notes"
    done
done
echo "sanitize: $((SECONDS - start_all))s in all, logs in $out"
exit "$status"
