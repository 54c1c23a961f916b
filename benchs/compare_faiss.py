#!/usr/bin/env python3
"""Side by side, in one process, on the same data: stock FAISS GPU against faiss_ext.

  faiss.GpuIndexFlatL2          vs faiss_ext.GpuIndexFlat
  faiss.GpuIndexIVFFlat         vs faiss_ext.GpuIndexIVFFlat (same trained CPU index
                                   copied to both: same centroids, same nprobe sweep)
  faiss_ext.GpuIndexBang        graph search on the GPU (search_L sweep), beside
  faiss.IndexHNSWFlat (CPU)     FAISS's graph index as the reference (--hnsw)

Writes a markdown table (QPS at the full batch, recall@1/@10 against exact search,
batch-1 latency p50/p99, device memory, train/add time, faiss_ext / faiss QPS ratio)
and a QPS-vs-recall@10 plot.

Usage (GPU machine):  python3 benchs/compare_faiss.py --nb 1000000 --out-dir OUT
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "datasets"))

import faiss  # noqa: E402  (stock FAISS GPU wheel)
import faiss_ext  # noqa: E402
import synthetic  # noqa: E402
import vecs_io  # noqa: E402


def device_used_bytes():
    """Bytes in use on device 0 (driver view), or None without a way to ask."""
    try:
        import cupy
        free, total = cupy.cuda.runtime.memGetInfo()
        return total - free
    except Exception:  # cupy missing or no device: leave the column empty
        return None


def recall_at(gt, I, r):
    hits = sum(len(set(gt[q, :r]) & set(I[q, :r])) for q in range(gt.shape[0]))
    return hits / (gt.shape[0] * r)


def time_batch(search, xq, k, reps):
    """Median seconds of a whole-batch search, after one warm-up."""
    search(xq, k)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        D, I = search(xq, k)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), I


def time_single(search, xq, k, n):
    """Latencies (ms) of n one-query searches."""
    search(xq[:1], k)
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        search(xq[i:i + 1], k)
        lat.append((time.perf_counter() - t0) * 1e3)
    return np.percentile(lat, 50), np.percentile(lat, 99)


class Rows:
    def __init__(self):
        self.rows = []

    def add(self, **kw):
        self.rows.append(kw)
        r = kw
        print(f"  {r['family']:5s} {r['impl']:24s} {r['param']:12s} "
              f"QPS {r['qps']:10.0f}  R@1 {r['r1']:.3f}  R@10 {r['r10']:.3f}  "
              f"p50 {r['p50']:.3f} ms", flush=True)


def measure(rows, family, impl, param, search, xq, k, gt, args, extra):
    secs, I = time_batch(search, xq, k, args.reps)
    p50, p99 = time_single(search, xq, k, args.single)
    rows.add(family=family, impl=impl, param=param, qps=xq.shape[0] / secs,
             r1=recall_at(gt, I, 1), r10=recall_at(gt, I, 10), p50=p50, p99=p99,
             **extra)


def built(fn):
    """Runs fn(); returns (result, seconds, device bytes it took or None)."""
    before = device_used_bytes()
    t0 = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t0
    after = device_used_bytes()
    return out, secs, (after - before if before is not None else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nb", type=int, default=1_000_000)
    ap.add_argument("--nq", type=int, default=10_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--base", help="fvecs/bvecs/fbin base file instead of synthetic data")
    ap.add_argument("--query", help="query file (with --base)")
    ap.add_argument("--nlist", type=int, default=1024)
    ap.add_argument("--nprobe", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--single", type=int, default=200, help="batch-1 queries timed")
    ap.add_argument("--hnsw", action="store_true", help="also FAISS CPU IndexHNSWFlat")
    ap.add_argument("--out-dir", default=".")
    args = ap.parse_args()

    if faiss_ext.get_num_gpus() == 0 or faiss.get_num_gpus() == 0:
        sys.exit("compare_faiss: no CUDA device visible to faiss_ext and faiss")

    if args.base:
        xb = vecs_io.read_vectors(args.base).astype(np.float32)
        xq = vecs_io.read_vectors(args.query).astype(np.float32)[:args.nq]
        source = f"{args.base} / {args.query}"
    else:
        xb = synthetic.clustered(args.nb, args.d, clusters=1000, spread=0.1, seed=1)
        xq = synthetic.clustered(args.nq, args.d, clusters=1000, spread=0.1, seed=1, stream=1)
        source = "synthetic clustered (1000 clusters, spread 0.1, seed 1)"
    nb, d = xb.shape
    nq, k = xq.shape[0], args.k
    print(f"data: {source}: nb={nb} nq={nq} d={d} k={k}", flush=True)
    print(f"faiss {faiss.__version__}, faiss_ext from {faiss_ext.__file__}", flush=True)

    fres = faiss.StandardGpuResources()
    xres = faiss_ext.GpuResources(device=0)
    rows = Rows()

    # Exact search: faiss_ext's flat index is also the ground truth (checked below
    # against faiss's own GPU flat index).
    xflat, t_add, mem = built(lambda: _flat_ext(xres, xb))
    gtD, gt = xflat.search(xq, 100)
    extra = dict(train_s=0.0, add_s=t_add, mem=xflat.device_memory_bytes())
    measure(rows, "flat", "faiss_ext GpuIndexFlat", "-", xflat.search, xq, k, gt, args, extra)
    fflat, t_add, mem = built(lambda: _flat_faiss(fres, xb))
    extra = dict(train_s=0.0, add_s=t_add, mem=mem)
    measure(rows, "flat", "faiss GpuIndexFlatL2", "-", fflat.search, xq, k, gt, args, extra)
    _, fI = fflat.search(xq, 100)
    agree = recall_at(gt, fI, 100)
    print(f"  exact search agreement faiss vs faiss_ext (top-100 overlap): {agree:.5f}")
    del fflat

    if hasattr(faiss_ext, "GpuIndexIVFFlat"):
        cpu_ivf = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, args.nlist)
        sample = xb[np.random.default_rng(0).choice(nb, min(nb, 256 * args.nlist), False)]
        t0 = time.perf_counter()
        cpu_ivf.train(sample)  # one quantizer for both GPU indexes
        t_train = time.perf_counter() - t0
        fivf, t_add_f, mem_f = built(lambda: _ivf_faiss(fres, cpu_ivf, xb))
        xivf, t_add_x, mem_x = built(lambda: _ivf_ext(xres, cpu_ivf, xb))
        for nprobe in [int(p) for p in args.nprobe.split(",")]:
            if nprobe > args.nlist:
                continue
            xivf.nprobe = nprobe
            measure(rows, "ivf", "faiss_ext GpuIndexIVFFlat", f"nprobe={nprobe}",
                    xivf.search, xq, k, gt, args,
                    dict(train_s=t_train, add_s=t_add_x, mem=xivf.device_memory_bytes()))
            fivf.nprobe = nprobe
            measure(rows, "ivf", "faiss GpuIndexIVFFlat", f"nprobe={nprobe}",
                    fivf.search, xq, k, gt, args,
                    dict(train_s=t_train, add_s=t_add_f, mem=mem_f))
        del fivf, xivf

    if hasattr(faiss_ext, "GpuIndexBang"):
        bang, t_add, _ = built(lambda: _bang_ext(xres, xb))
        extra = dict(train_s=0.0, add_s=t_add, mem=bang.device_memory_bytes())
        for L in (10, 20, 40, 60, 80, 100, 160):
            if L < k:
                continue
            params = faiss_ext.SearchParametersBang(search_L=L)
            measure(rows, "graph", "faiss_ext GpuIndexBang", f"L={L}",
                    lambda x, kk: bang.search(x, kk, params=params), xq, k, gt, args, extra)
        del bang

    if args.hnsw:
        hnsw = faiss.IndexHNSWFlat(d, 32)
        hnsw.hnsw.efConstruction = 40
        _, t_add, _ = built(lambda: hnsw.add(xb))
        for ef in (16, 32, 64, 128, 256):
            hnsw.hnsw.efSearch = ef
            measure(rows, "graph", "faiss CPU IndexHNSWFlat", f"efSearch={ef}",
                    hnsw.search, xq, k, gt, args,
                    dict(train_s=0.0, add_s=t_add, mem=None))

    write_outputs(rows.rows, args, dict(source=source, nb=nb, nq=nq, d=d, k=k,
                                        faiss=faiss.__version__, agree=agree))


def _flat_ext(res, xb):
    index = faiss_ext.GpuIndexFlat(res, xb.shape[1], faiss_ext.METRIC_L2)
    index.add(xb)
    return index


def _flat_faiss(res, xb):
    index = faiss.GpuIndexFlatL2(res, xb.shape[1])
    index.add(xb)
    return index


def _ivf_faiss(res, cpu_ivf, xb):
    index = faiss.index_cpu_to_gpu(res, 0, cpu_ivf)
    index.add(xb)
    return index


def _ivf_ext(res, cpu_ivf, xb):
    index = faiss_ext.index_cpu_to_gpu(res, cpu_ivf)
    index.add(xb)
    return index


def _bang_ext(res, xb):
    index = faiss_ext.GpuIndexBang(res, xb.shape[1])
    index.add(xb)
    return index


def fmt_mem(b):
    return "-" if b is None else f"{b / 2**20:.0f} MiB"


def write_outputs(rows, args, info):
    os.makedirs(args.out_dir, exist_ok=True)
    # faiss_ext / faiss QPS ratio for rows that have a faiss twin.
    twin = {(r["family"], r["param"]): r for r in rows if r["impl"].startswith("faiss ")}
    lines = [
        f"data: {info['source']}; nb={info['nb']} nq={info['nq']} d={info['d']} "
        f"k={info['k']}; faiss {info['faiss']} (PyPI faiss-cuda wheel); exact-search "
        f"agreement faiss vs faiss_ext top-100: {info['agree']:.5f}",
        "",
        "device memory: faiss_ext rows report the index's own bytes; faiss rows the "
        "growth of the driver's used memory while building the index (so they include "
        "whatever faiss reserved then).",
        "",
        f"| family | index | param | QPS (batch {info['nq']}) | faiss_ext / faiss | "
        "recall@1 | recall@10 | batch-1 p50 ms | batch-1 p99 ms | device memory | "
        "train s | add s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "-"
        t = twin.get((r["family"], r["param"]))
        if r["impl"].startswith("faiss_ext") and t is not None:
            ratio = f"{r['qps'] / t['qps']:.2f}"
        lines.append(
            f"| {r['family']} | {r['impl']} | {r['param']} | {r['qps']:.0f} | {ratio} | "
            f"{r['r1']:.3f} | {r['r10']:.3f} | {r['p50']:.3f} | {r['p99']:.3f} | "
            f"{fmt_mem(r['mem'])} | {r['train_s']:.1f} | {r['add_s']:.1f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out_dir, "compare_faiss.md"), "w") as f:
        f.write(table)
    print("\n" + table)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for impl in dict.fromkeys(r["impl"] for r in rows):
        pts = sorted((r["r10"], r["qps"]) for r in rows if r["impl"] == impl)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=impl)
    ax.set_xlabel("recall@10")
    ax.set_ylabel(f"QPS (batch {info['nq']})")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"nb={info['nb']} d={info['d']} k={info['k']} ({platform.node()})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out_dir, "compare_faiss.png"), dpi=110)


if __name__ == "__main__":
    main()
