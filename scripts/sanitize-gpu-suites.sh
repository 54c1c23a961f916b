#!/usr/bin/env bash
# Runs every GPU suite under compute-sanitizer's memcheck (with leak check), racecheck,
# synccheck and initcheck; `scripts/gpu-check.sh --sanitize` calls it after the build.
#   bash scripts/sanitize-gpu-suites.sh BUILD_DIR LOG_DIR
# Under the tools the suites run smaller (FAISS_EXT_SANITIZE=1: two random shapes per
# loop, a 5-second soak) and leave out the tests whose size is their point (listed in
# `skip` below; smaller tests run the same kernels). Each run is bounded by
# SANITIZE_TIMEOUT seconds (default 150), and no run starts after SANITIZE_BUDGET
# seconds in all (default 480: those left are reported as not run, a failure);
# SANITIZE_TOOLS and SANITIZE_SUITES pick a subset; SANITIZE_KERNELS is synccheck's
# kernel filter (default kns=faiss_ext). One line per run, a log per run in LOG_DIR; the
# status is 0 only when every run passed with no error reported (77 when there was no
# device to run on).
set -uo pipefail
build="${1:?build directory}"
out="${2:?log directory}"
mkdir -p "$out"
cs="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[ -x "$cs" ] || { echo "sanitize: compute-sanitizer not found" >&2; exit 1; }

read -r -a tools <<<"${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}"
read -r -a suites <<<"${SANITIZE_SUITES:-gpu_flat_tests gpu_ivf_tests gpu_bang_tests gpu_contract_tests gpu_soak_tests gpu_shards_tests python_gpu_tests}"
# Device-memory exhaustion holds all free memory (the tools need some for their own
# state); the other tests are left out for their size alone.
skip='*DeviceMemoryExhausted*:*RecallOnClustered100K*:*TenThousandQueriesInSmallPages*'
skip+=':*SmallBudgetsGiveTheSameResults*:*GpuKMeansTrainsAGoodQuantizer*'
skip+=':*WithoutASecondHostCopy*'
export FAISS_EXT_SANITIZE=1
export FAISS_EXT_SOAK_SECONDS="${FAISS_EXT_SOAK_SECONDS:-5}"
limit="${SANITIZE_TIMEOUT:-150}"
budget="${SANITIZE_BUDGET:-480}"
python="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"

suite_command() {
    if [ "$1" = python_gpu_tests ]; then
        echo "env PYTHONPATH=$build/python:benchs/datasets ${python:-python3} -m pytest" \
            "tests/python -q -p no:cacheprovider -m gpu --no-device-exit-code=77"
    else
        echo "$build/tests/$1 --gtest_filter=-$skip"
    fi
}

status=0
ran=0
start_all=$SECONDS
for tool in "${tools[@]}"; do
    for suite in "${suites[@]}"; do
        if [ $((SECONDS - start_all)) -ge "$budget" ]; then
            printf "%-10s %-20s        NOT RUN (SANITIZE_BUDGET=%ss spent)\n" "$tool" "$suite" "$budget"
            status=1
            continue
        fi
        # Leaks: the C++ suites only (the interpreter does not free everything at exit).
        extra=()
        [ "$tool" = memcheck ] && [ "$suite" != python_gpu_tests ] && extra=(--leak-check full)
        # synccheck looks at faiss_ext's own kernels only (cuBLAS's and CUB's are the
        # vendor's, and instrumenting cuBLAS's sm_90 GEMMs is most of its time). The
        # others instrument every kernel: under racecheck a filter leaves cuBLAS's sm_90
        # GEMMs uninstrumented and they end in "Sanitizer failed to handle a hardware
        # exception"; under initcheck an uninstrumented kernel's writes count as never
        # made (H100, CUDA 13; benchs/NOTES.md, twelfth session).
        [ "$tool" = synccheck ] && extra+=(--kernel-name "${SANITIZE_KERNELS:-kns=faiss_ext}")
        log="$out/sanitize-$tool-$suite.log"
        start=$SECONDS
        # shellcheck disable=SC2046
        timeout "$limit" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 86 \
            $(suite_command "$suite") >"$log" 2>&1
        rc=$?
        case $rc in
            0) verdict=clean; ran=1 ;;
            77) verdict="skipped (no device)" ;;
            86) verdict="ERRORS REPORTED"; status=1 ;;
            124) verdict="TIMEOUT after ${limit}s"; status=1 ;;
            *) verdict="FAILED (status $rc)"; status=1 ;;
        esac
        summary="$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed 's/^========= //')"
        printf "%-10s %-20s %4ds  %s  %s\n" "$tool" "$suite" $((SECONDS - start)) "$verdict" "$summary"
    done
done
echo "sanitize: $((SECONDS - start_all))s in all, logs in $out"
if [ "$status" = 0 ] && [ "$ran" = 0 ]; then
    echo "sanitize: nothing ran on a device"
    exit 77
fi
exit "$status"
