#!/usr/bin/env python3
"""Where one GpuIndexBang build's GPU time goes, by kernel: each kernel's total time,
launch count and mean over a whole `add` of n x d clustered blobs (spread 0.15, as
bench_bang). It stands in for Nsight Systems' kernel summary where that is missing:
PyTorch's profiler reads the same CUPTI activity records.

    PYTHONPATH=build-gpu/python:benchs/datasets python3 benchs/profile_build.py \\
        --n 4000000 [--d 128] [--verbose]

--verbose also prints the build's own phases (GpuIndex.verbose). A 200,000-vector build
runs first, outside the profile, to warm up the device. Needs PyTorch with CUDA.
"""

import argparse
import collections
import time

import torch
from torch.profiler import ProfilerActivity, profile

import faiss_ext
import synthetic


def kernel_name(event_name):
    """The kernel's name without its arguments, template arguments and namespace noise."""
    name = event_name.replace("void ", "").replace("(anonymous namespace)::", "")
    return name.split("(")[0].split("<")[0][-60:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4000000)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--top", type=int, default=30, help="kernels printed")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    xb = synthetic.clustered(args.n, args.d, clusters=1000, spread=0.15, seed=1, stream=0)
    res = faiss_ext.GpuResources(device=0)
    warm = faiss_ext.GpuIndexBang(res, args.d)
    warm.add(xb[: min(args.n, 200000)])
    del warm
    bang = faiss_ext.GpuIndexBang(res, args.d)
    bang.verbose = args.verbose
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.time()
        bang.add(xb)
        torch.cuda.synchronize()
        wall = time.time() - start

    total = collections.Counter()
    launches = collections.Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            name = kernel_name(e.name)
            total[name] += e.device_time
            launches[name] += 1
    busy = sum(total.values())
    print(f"n {args.n} d {args.d}: build wall {wall:.2f} s (under the profiler), "
          f"kernels and copies {busy / 1e6:.2f} s")
    for name, t in total.most_common(args.top):
        print(f"{t / 1e6:8.3f} s {launches[name]:8d} x {t / launches[name]:9.1f} us  {name}")


if __name__ == "__main__":
    main()
