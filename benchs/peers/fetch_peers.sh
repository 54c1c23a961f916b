#!/usr/bin/env bash
# Here (a machine with network), from the repository root: downloads the peers' wheels
# for CPython 3.12 / x86-64 / CUDA 13 into .whl/peers/wheels (ignored by git) and packs
# them into parts of at most 50 MiB, .whl/peers/part-NN/, one per device run (a run
# carries at most 64 MiB together with the repository's own files, ~8 MB in 2026-11; 56 MiB parts
# did not fit beside them):
#   faiss-cuda 1.14.1.post4           stock FAISS with its GPU indexes
#   cuVS 26.10 and what it needs       cuvs, libcuvs, libraft, librmm, libkvikio, pylibraft,
#                                      rmm, rapids-logger; nvidia-nvjitlink >= 13.3 (libcuvs
#                                      needs its symbols; the GPU machine has 13.0)
# On the GPU machine, benchs/peers/install_peers.sh installs them (benchs/PEERS.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.whl/peers
part_mib=${PART_MIB:-50}
mkdir -p "$dest/wheels"
plat=(--platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
for p in faiss-cuda==1.14.1.post4 \
         cuvs-cu13==26.10.0 libcuvs-cu13==26.10.0 libraft-cu13==26.10.0 librmm-cu13==26.10.0 \
         libkvikio-cu13==26.10.0 pylibraft-cu13==26.10.0 rmm-cu13==26.10.0 "rapids-logger==0.3.*" \
         "nvidia-nvjitlink>=13.3,<14"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp "${plat[@]}" -d "$dest/wheels" "$p"
done
# One of each: two versions of one package would stop the install there.
dups=$(ls "$dest/wheels" | sed 's/-[0-9].*//' | sort | uniq -d)
if [ -n "$dups" ]; then echo "fetch_peers: several versions of: $dups (empty $dest/wheels and rerun)"; exit 1; fi
rm -rf "$dest"/part-* "$dest/peers.tar"
(cd "$dest/wheels" && tar -cf ../peers.tar ./*.whl)
sum=$(sha256sum "$dest/peers.tar" | cut -d' ' -f1)
(cd "$dest" && split -b "${part_mib}M" -d peers.tar peers.tar.)
n=$(ls "$dest"/peers.tar.[0-9]* | wc -l)
for f in "$dest"/peers.tar.[0-9]*; do
  i=${f##*.}
  mkdir -p "$dest/part-$i"
  mv "$f" "$dest/part-$i/"
  printf '%s  peers.tar\n%s parts\n' "$sum" "$n" > "$dest/part-$i/peers.sha256"
done
rm "$dest/peers.tar"
ls "$dest/wheels"
du -sh "$dest"/part-*
echo "fetch_peers: $n parts under $dest (sha256 of the joined tar $sum)"
