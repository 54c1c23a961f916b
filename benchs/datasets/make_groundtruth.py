#!/usr/bin/env python3
"""Exact k-NN ground truth on the GPU with faiss_ext.GpuIndexFlat.

    PYTHONPATH=build/python:benchs/datasets python3 benchs/datasets/make_groundtruth.py \\
        --base sift-wallpapers/base.fvecs --query sift-wallpapers/query.fvecs \\
        --k 100 --out sift-wallpapers/groundtruth.ivecs

Reads any format of vecs_io (.fvecs, .bvecs, .fbin, ...; the base memory-mapped and
added in chunks), writes the ids (.ivecs, or .ibin) and, with --distances, the
distances (.fvecs / .fbin). Before writing, --check queries (default 100) are
recomputed with numpy in float64: every returned distance must be the exact distance
of its id and equal the exact k-th best up to float32 rounding, else it exits with
status 1.
"""

import argparse
import sys
import time

import numpy as np

import faiss_ext
import vecs_io


def numpy_knn(xb, xq, k, metric, chunk=200_000):
    """Exact (distances, ids) in float64, the base read in chunks."""
    xq64 = xq.astype(np.float64)
    best_d = np.full((len(xq), 0), 0.0)
    best_i = np.zeros((len(xq), 0), np.int64)
    for i0 in range(0, len(xb), chunk):
        b = np.asarray(xb[i0:i0 + chunk], dtype=np.float64)
        if metric == faiss_ext.METRIC_L2:
            dist = (xq64 ** 2).sum(1)[:, None] - 2 * xq64 @ b.T + (b ** 2).sum(1)[None]
        else:
            dist = -(xq64 @ b.T)
        best_d = np.concatenate([best_d, dist], axis=1)
        best_i = np.concatenate([best_i, np.broadcast_to(np.arange(i0, i0 + len(b)), dist.shape)], axis=1)
        order = np.argsort(best_d, axis=1, kind="stable")[:, :k]
        best_d = np.take_along_axis(best_d, order, 1)
        best_i = np.take_along_axis(best_i, order, 1)
    return (best_d if metric == faiss_ext.METRIC_L2 else -best_d), best_i


def check(xb, xq, D, I, k, metric, n_check, seed):
    """Compares n_check random queries with numpy; returns the failures as strings."""
    rows = np.random.default_rng(seed).choice(len(xq), size=min(n_check, len(xq)), replace=False)
    ref_d, _ = numpy_knn(xb, xq[rows], k, metric)
    failures = []
    for r, q in enumerate(rows):
        xq64 = xq[q].astype(np.float64)
        own = np.asarray(xb[I[q]], dtype=np.float64)
        true_d = ((own - xq64) ** 2).sum(1) if metric == faiss_ext.METRIC_L2 else own @ xq64
        tol = 1e-4 * (1 + np.abs(ref_d[r]).max())
        if not np.allclose(true_d, D[q], rtol=1e-4, atol=tol):
            failures.append(f"query {q}: returned distances are not those of the returned ids")
        elif not np.allclose(D[q], ref_d[r], rtol=1e-4, atol=tol):
            failures.append(f"query {q}: distances differ from the exact k nearest")
    return failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--out", required=True, help="ids: .ivecs or .ibin")
    ap.add_argument("--distances", help="distances: .fvecs or .fbin")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--metric", choices=["l2", "ip"], default="l2")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--check", type=int, default=100, help="queries checked with numpy")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)

    metric = faiss_ext.METRIC_L2 if args.metric == "l2" else faiss_ext.METRIC_INNER_PRODUCT
    xb = vecs_io.read_vectors(args.base, mmap=True)
    xq = np.ascontiguousarray(vecs_io.read_vectors(args.query), dtype=np.float32)
    if xb.shape[1] != xq.shape[1]:
        sys.exit(f"make_groundtruth: base d={xb.shape[1]} but query d={xq.shape[1]}")
    if len(xb) >= 2**31:
        sys.exit("make_groundtruth: ids would not fit the int32 of .ivecs / .ibin")

    t0 = time.time()
    res = faiss_ext.GpuResources(device=args.device)
    index = faiss_ext.GpuIndexFlat(res, xb.shape[1], metric)
    chunk = 1 << 18
    for i0 in range(0, len(xb), chunk):
        index.add(xb[i0:i0 + chunk])
    t1 = time.time()
    D, I = index.search(xq, args.k)
    t2 = time.time()
    print(f"base {xb.shape} {xb.dtype}, queries {xq.shape}: add {t1 - t0:.1f} s, "
          f"search k={args.k} {t2 - t1:.2f} s")
    if np.any(I < 0):
        sys.exit(f"make_groundtruth: k={args.k} is larger than the base")

    failures = check(xb, xq, D, I, args.k, metric, args.check, args.seed)
    if failures:
        print("\n".join(failures[:10]), file=sys.stderr)
        sys.exit(f"make_groundtruth: {len(failures)} of {min(args.check, len(xq))} checked "
                 "queries disagree with numpy; nothing written")
    print(f"checked {min(args.check, len(xq))} queries against numpy: exact")
    vecs_io.write_vectors(args.out, I.astype(np.int32))
    if args.distances:
        vecs_io.write_vectors(args.distances, D)
    print(f"wrote {args.out}" + (f" and {args.distances}" if args.distances else ""))


if __name__ == "__main__":
    main()
