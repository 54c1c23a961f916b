#!/usr/bin/env python3
"""Timeline of one faiss_ext search on the GPU: every kernel and copy with its start,
its length and the idle time before it, and the host's CUDA calls beside them. It
stands in for Nsight Systems where that is missing: PyTorch's profiler reads the same
CUPTI activity records.

    PYTHONPATH=build-gpu/python:benchs/datasets python3 benchs/trace_search.py \
        --index ivf --nb 1000000 --nlist 4096 --nprobe 4 --k 10 --batch 10000

Queries and results are PyTorch tensors on the device (no host copies in the trace)
unless --host is given. The index is built on Gaussian blobs (synthetic.py), or on a
named set of compare_peers.py with --data (sift, say; named_sets.py). Searches of
at most 1024 queries replay a CUDA graph, whose kernels the profiler does not show one
by one: --no-graphs runs them kernel by kernel.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np
import torch

import faiss_ext
import named_sets
import synthetic


def vectors(args):
    """Base and query vectors: the named set, or blobs of --nb x --d."""
    if args.data:
        ds = named_sets.load(args.data, nb=args.nb)
        args.d = ds.xb.shape[1]
        return ds.xb, ds.xq
    xb = synthetic.clustered(args.nb, args.d, clusters=1000, stream=0)
    xq = synthetic.clustered(max(args.batch or [10000]), args.d, clusters=1000, stream=1)
    return xb, xq


def build(args, xb):
    res = faiss_ext.GpuResources(device=0)
    if args.index == "flat":
        index = faiss_ext.GpuIndexFlat(res, args.d)
    else:
        index = faiss_ext.GpuIndexIVFFlat(res, args.d, args.nlist)
        index.train(xb[: min(args.nb, 100 * args.nlist)])
        index.nprobe = args.nprobe
    index.add(xb)
    return res, index


def trace(args, index, xq):
    """Chrome-trace events of `args.repeat` searches after two warm-ups."""
    for _ in range(2):
        index.search(xq, args.k)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(args.repeat):
            with torch.profiler.record_function("search"):
                index.search(xq, args.k)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]


def report(events, out):
    """Prints the last search's device timeline and host calls."""
    searches = sorted(
        (e for e in events if e.get("name") == "search" and e.get("ph") == "X"),
        key=lambda e: e["ts"])
    last = searches[-1]
    t0, t1 = last["ts"], last["ts"] + last["dur"]
    host = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and t0 <= e["ts"] < t1]
    ids = {e["args"].get("correlation") for e in host}
    device = sorted(
        (e for e in events
         if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
         and e.get("args", {}).get("correlation") in ids),
        key=lambda e: e["ts"])
    launch_ts = {e["args"].get("correlation"): e["ts"] for e in host}
    print(f"search: host {last['dur']:.1f} us, {len(host)} CUDA calls, "
          f"{len(device)} device activities", file=out)
    if not device:
        return
    start = device[0]["ts"]
    busy = sum(e["dur"] for e in device)
    span = device[-1]["ts"] + device[-1]["dur"] - start
    print(f"device: first to last {span:.1f} us, busy {busy:.1f} us, idle {span - busy:.1f} us",
          file=out)
    print("| start us | us | idle before | launched at | name |\n|---|---|---|---|---|", file=out)
    end = start
    for e in device:
        launched = launch_ts.get(e["args"].get("correlation"), e["ts"]) - t0
        print(f"| {e['ts'] - start:8.1f} | {e['dur']:7.1f} | {max(0.0, e['ts'] - end):6.1f} | "
              f"{launched:8.1f} | {e['name'][:90]} |", file=out)
        end = max(end, e["ts"] + e["dur"])
    totals = {}
    for e in host:
        n, t = totals.get(e["name"], (0, 0.0))
        totals[e["name"]] = (n + 1, t + e["dur"])
    print("\nhost CUDA calls: name, count, total us", file=out)
    for name, (n, t) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:40} {n:4d} {t:9.1f}", file=out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", choices=("ivf", "flat"), default="ivf")
    p.add_argument("--nb", type=int, default=1000000)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--data", help="a named set (named_sets.py) instead of blobs")
    p.add_argument("--nlist", type=int, default=4096)
    p.add_argument("--nprobe", type=int, default=4)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--batch", type=int, action="append")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--host", action="store_true", help="numpy queries and results")
    p.add_argument("--no-graphs", action="store_true",
                   help="no CUDA graphs (use_search_graphs = False)")
    args = p.parse_args()
    if faiss_ext.get_num_gpus() == 0:
        raise SystemExit("trace_search.py: no CUDA device")
    xb, xqAll = vectors(args)
    _, index = build(args, xb)
    if args.no_graphs:
        index.use_search_graphs = False
    for batch in args.batch or [10000]:
        xq = xqAll[:batch]
        if not args.host:
            xq = torch.as_tensor(np.ascontiguousarray(xq), device="cuda:0")
        print(f"\n## {args.index} {args.data or 'blobs'} nb {xb.shape[0]} d {args.d} nprobe {args.nprobe} k {args.k} "
              f"batch {batch} ({'host' if args.host else 'device'} arrays)\n")
        report(trace(args, index, xq), sys.stdout)


if __name__ == "__main__":
    main()
