#!/usr/bin/env python3
"""Moves a dataset directory to the GPU machine, whose runs carry at most 64 MiB each:
`pack` compresses it (tar + xz) and splits it into parts, one folder per run;
`unpack`, there, joins the parts, checks the archive's SHA-256 and extracts it.

    python3 benchs/datasets/carry_parts.py pack .data/sift-wallpapers --out .data/carry/sift
    # run 1 carries .data/carry/sift/part-00, run 2 .data/carry/sift/part-01, ...:
    mkdir -p /tmp/parts && cp .data/carry/sift/part-*/* /tmp/parts/
    # the run that carries the last part:
    python3 benchs/datasets/carry_parts.py unpack /tmp/parts --out /tmp/sift-wallpapers

Only the standard library is used, so it runs on any Python 3.8+.
"""

import argparse
import hashlib
import json
import lzma
import os
import sys
import tarfile
import tempfile

PART_PREFIX = "data."
INDEX_PREFIX = "parts."  # parts.NN.json in every part: the same index, distinct names


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pack(src, out, part_bytes, preset=6):
    """Writes out/part-NN/{data.NN, parts.NN.json}; returns the number of parts."""
    if not os.path.isdir(src):
        raise FileNotFoundError(f"{src} is not a directory")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        archive = os.path.join(tmp, "archive.tar.xz")
        with lzma.open(archive, "wb", preset=preset) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
            for name in sorted(os.listdir(src)):
                tar.add(os.path.join(src, name), arcname=name)
        size = os.path.getsize(archive)
        count = max(1, -(-size // part_bytes))
        index = {"name": os.path.basename(os.path.normpath(src)), "parts": count,
                 "bytes": size, "sha256": sha256_of(archive)}
        with open(archive, "rb") as f:
            for i in range(count):
                folder = os.path.join(out, f"part-{i:02d}")
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, f"{PART_PREFIX}{i:02d}"), "wb") as part:
                    part.write(f.read(part_bytes))
                with open(os.path.join(folder, f"{INDEX_PREFIX}{i:02d}.json"), "w") as j:
                    json.dump(index, j)
    return count


def unpack(folder, out):
    """Joins folder/data.NN, checks it against the index (parts.NN.json), extracts
    into out."""
    indexes = sorted(n for n in os.listdir(folder)
                     if n.startswith(INDEX_PREFIX) and n.endswith(".json"))
    if not indexes:
        raise FileNotFoundError(f"{folder}: no {INDEX_PREFIX}NN.json (copy every part here)")
    with open(os.path.join(folder, indexes[0])) as j:
        index = json.load(j)
    names = [f"{PART_PREFIX}{i:02d}" for i in range(index["parts"])]
    missing = [n for n in names if not os.path.exists(os.path.join(folder, n))]
    if missing:
        raise FileNotFoundError(f"{folder}: missing parts {', '.join(missing)} "
                                f"of {index['parts']}")
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "archive.tar.xz")
        with open(archive, "wb") as joined:
            for n in names:
                with open(os.path.join(folder, n), "rb") as part:
                    data = part.read()
                h.update(data)
                joined.write(data)
        if h.hexdigest() != index["sha256"]:
            raise ValueError(f"{folder}: the joined parts do not match the packed archive "
                             "(SHA-256 differs)")
        os.makedirs(out, exist_ok=True)
        with lzma.open(archive, "rb") as xz, tarfile.open(fileobj=xz, mode="r") as tar:
            for member in tar.getmembers():
                if not member.isfile() or os.path.basename(member.name) != member.name:
                    raise ValueError(f"unexpected archive member {member.name!r}")
            # Members are checked above; the "data" filter (Python 3.12+, and
            # backported) also silences 3.12's warning about the default.
            tar.extractall(out, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return sorted(os.listdir(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("src")
    p.add_argument("--out", required=True)
    p.add_argument("--part-mib", type=float, default=50,
                   help="size of one part (leave room under 64 MiB for the repository)")
    u = sub.add_parser("unpack")
    u.add_argument("folder", help="folder holding every part's files")
    u.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.command == "pack":
        n = pack(args.src, args.out, int(args.part_mib * 2**20))
        print(f"{args.src} -> {n} part(s) under {args.out}")
    else:
        try:
            files = unpack(args.folder, args.out)
        except (FileNotFoundError, ValueError) as e:
            sys.exit(f"carry_parts: {e}")
        print(f"{args.out}: {', '.join(files)}")


if __name__ == "__main__":
    main()
