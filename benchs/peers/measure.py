"""Timing, recall, ground truth, device rates and floors for compare_peers.py.

Every function here works on host numpy arrays and plain callables, so the tests run it
without a GPU (tests/python/test_compare_peers.py).
"""

import json
import subprocess
import sys
import time

import numpy as np

# Used only where a rate could not be measured; the report says which ones were.
STATED_RATES = {
    "dram_Bps": 3.0e12,     # H100 device-to-device copy, read + write (README, KINDS.md)
    "h2d_Bps": 25e9,        # PCIe 5 x16, practical
    "d2h_Bps": 25e9,
    "fp32_flops": 51.5e12,  # FP32 CUDA cores
    "tf32_flops": 400e12,   # TF32 tensor cores, dense
}


# ---------------------------------------------------------------------------- recall

def recall_at(gt, I, r):
    """r-recall@r: the mean fraction of each query's true r nearest (gt[:, :r]) found
    among its first r results; None when fewer than r results were asked for."""
    if I.shape[1] < r or gt.shape[1] < r:
        return None
    g = gt[:, :r]
    f = I[:, :r]
    hits = 0
    for i0 in range(0, g.shape[0], 4096):       # bounded temporary (4096 x r x r)
        gg, ff = g[i0:i0 + 4096], f[i0:i0 + 4096]
        hits += int((gg[:, :, None] == ff[:, None, :]).any(axis=2).sum())
    return hits / float(g.size)


# ---------------------------------------------------------------------------- timing

# Timed calls per batch size after one warm-up (--quick uses QUICK_REPS), and the
# seconds after which a point stops repeating (at least MIN_REPS calls are kept). With
# medians of 5 and 3 calls single points at batch 1024 and 10000 moved by 1.5-3x
# between runs (benchs/NOTES.md, twenty-third session); with 11 at batch 1024 still by
# 13-24% between two runs a minute apart (thirty-seventh session). A call at batch
# 1024 takes 0.15-1.5 ms for every system, so 40 cost well under a second a point.
REPS = {16: 40, 128: 40, 1024: 40}
REPS_LARGE = 11
QUICK_REPS = {16: 10, 128: 5, 1024: 3}
QUICK_REPS_LARGE = 2
MIN_REPS = 2
POINT_SECONDS = 4.0


def reps_for(batch, quick):
    table, large = (QUICK_REPS, QUICK_REPS_LARGE) if quick else (REPS, REPS_LARGE)
    return table.get(batch, large if batch > 1024 else max(table.values()))


def time_point(search, xq, k, batch, reps, singles, clock=time.perf_counter,
               max_seconds=POINT_SECONDS):
    """Times search(x, k) -> (D, I) at one batch size over host arrays.

    batch 1: `singles` one-query calls on distinct queries (after one warm-up call);
    returns their p50 latency and qps = 1 / p50.
    batch > 1: `reps` calls, each on the next slice of `batch` consecutive queries
    (wrapping), after one warm-up call; qps = batch / median call time.
    Returns dict(qps, p50_ms or None, calls, rows, I): rows are the query indices whose
    results I holds (each searched slice once), for recall."""
    nq = xq.shape[0]
    if batch == 1:
        n = min(singles, nq)
        search(xq[:1], k)
        lat, ids = [], []
        t_start = clock()
        for i in range(n):
            t0 = clock()
            _, I = search(xq[i:i + 1], k)
            lat.append(clock() - t0)
            ids.append(np.asarray(I)[0])
            if i + 1 >= 20 and clock() - t_start > max_seconds:
                break
        p50 = float(np.median(lat))
        return dict(qps=1.0 / p50, p50_ms=p50 * 1e3, calls=len(lat),
                    rows=np.arange(len(lat)), I=np.stack(ids))
    if batch > nq:
        raise ValueError(f"batch {batch} is larger than the {nq} queries")
    slices = max(1, nq // batch)
    search(xq[:batch], k)
    times, results = [], {}
    t_start = clock()
    for r in range(reps):
        s = (r % slices) * batch
        t0 = clock()
        _, I = search(xq[s:s + batch], k)
        times.append(clock() - t0)
        results[s] = np.asarray(I)
        if r + 1 >= MIN_REPS and clock() - t_start > max_seconds:
            break
    starts = sorted(results)
    rows = np.concatenate([np.arange(s, s + batch) for s in starts])
    I = np.concatenate([results[s] for s in starts])
    return dict(qps=batch / float(np.median(times)), p50_ms=None, calls=len(times),
                rows=rows, I=I)


# ---------------------------------------------------------------------- ground truth

def numpy_knn(xb, xq, k, metric, chunk=100_000, ids=None):
    """Exact (distances, ids) in float64 (L2: squared distances ascending; ip: inner
    products descending), the base read in chunks. ids: search only these rows of xb
    (an id filter's allowed ids; the results are still ids of xb), default all."""
    q = xq.astype(np.float64)
    best_d = np.zeros((len(q), 0))
    best_i = np.zeros((len(q), 0), np.int64)
    n = len(xb) if ids is None else len(ids)
    for i0 in range(0, n, chunk):
        if ids is None:
            rows = np.arange(i0, min(i0 + chunk, n))
            b = np.asarray(xb[i0:i0 + chunk], dtype=np.float64)
        else:
            rows = np.asarray(ids[i0:i0 + chunk], dtype=np.int64)
            b = np.asarray(xb[rows], dtype=np.float64)
        if metric == "l2":
            dist = (q ** 2).sum(1)[:, None] - 2 * q @ b.T + (b ** 2).sum(1)[None]
        else:
            dist = -(q @ b.T)
        ids_ = np.broadcast_to(rows, dist.shape)
        if dist.shape[1] > k:                        # keep this chunk's k best only
            part = np.argpartition(dist, k - 1, axis=1)[:, :k]
            dist = np.take_along_axis(dist, part, 1)
            ids_ = np.take_along_axis(ids_, part, 1)
        best_d = np.concatenate([best_d, dist], axis=1)
        best_i = np.concatenate([best_i, ids_], axis=1)
        order = np.argsort(best_d, axis=1, kind="stable")[:, :k]
        best_d = np.take_along_axis(best_d, order, 1)
        best_i = np.take_along_axis(best_i, order, 1)
    return (best_d if metric == "l2" else -best_d), best_i


def check_ground_truth(xb, xq, D, I, metric, n_check=100, seed=1234, ids=None):
    """Recomputes n_check random queries in float64: the returned distances must be
    those of the returned ids and equal the exact k best (ties may swap ids).
    ids: the results must be the k best among these ids only (a filter's allowed ids),
    and every returned id one of them. Returns a list of failures (empty when exact)."""
    k = I.shape[1]
    rows = np.random.default_rng(seed).choice(len(xq), size=min(n_check, len(xq)),
                                              replace=False)
    ref_d, _ = numpy_knn(xb, xq[rows], k, metric, ids=ids)
    allowed = None
    if ids is not None:
        allowed = np.zeros(len(xb), dtype=bool)
        allowed[ids] = True
    failures = []
    for r, q in enumerate(rows):
        if np.any(I[q] < 0) or np.any(I[q] >= len(xb)):
            failures.append(f"query {q}: missing results")
            continue
        if allowed is not None and not allowed[I[q]].all():
            failures.append(f"query {q}: returned ids the filter does not allow")
            continue
        x = xq[q].astype(np.float64)
        own = np.asarray(xb[I[q]], dtype=np.float64)
        true_d = ((own - x) ** 2).sum(1) if metric == "l2" else own @ x
        tol = 1e-4 * (1 + np.abs(ref_d[r]).max())
        if not np.allclose(true_d, D[q], rtol=1e-4, atol=tol):
            failures.append(f"query {q}: returned distances are not those of the ids")
        elif not np.allclose(D[q], ref_d[r], rtol=1e-4, atol=tol):
            failures.append(f"query {q}: distances differ from the exact k nearest")
    return failures


# ---------------------------------------------------------------------- device rates

_RATES_SCRIPT = r"""
import json, time
import numpy as np
import torch
out = {"device": torch.cuda.get_device_name(0)}
dev = torch.device("cuda")
def events(fn, n):
    fn(); torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record(); torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / n
src = torch.empty(1 << 28, dtype=torch.float32, device=dev)
dst = torch.empty_like(src)
out["dram_Bps"] = 2 * src.numel() * 4 / events(lambda: dst.copy_(src), 10)
del src, dst
# 256 MiB of pinned memory both ways: the bus's own rate. Pageable copies measured
# 1.1-1.3 GB/s out on a VM (fresh pages fault on every call), below what the indexes'
# pinned staging reaches, so the floor was not one.
host = torch.ones(1 << 26, dtype=torch.float32).pin_memory()
dev_x = torch.empty(1 << 26, dtype=torch.float32, device=dev)
def wall(fn, n=5):
    fn(); torch.cuda.synchronize(); t = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); t.append(time.perf_counter() - t0)
    return sorted(t)[n // 2]
nbytes = host.numel() * 4
out["h2d_Bps"] = nbytes / wall(lambda: dev_x.copy_(host, non_blocking=True))
out["d2h_Bps"] = nbytes / wall(lambda: host.copy_(dev_x, non_blocking=True))
n = 8192
a = torch.randn(n, n, device=dev); b = torch.randn(n, n, device=dev)
for tf32, key in ((False, "fp32_flops"), (True, "tf32_flops")):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    out[key] = 2 * n ** 3 / events(lambda: a @ b, 5)
print("RATES " + json.dumps(out))
"""


def measure_rates(python=sys.executable, timeout=180):
    """Device rates from a separate process with PyTorch (so that its CUDA libraries
    stay out of this process): DRAM copy (read + write), pinned host->device and
    device->host copies, FP32 and TF32 GEMM (8192^3). Returns (rates, sources, device
    name or None); a rate that could not be measured is the stated one."""
    rates, sources, name = dict(STATED_RATES), {k: "stated" for k in STATED_RATES}, None
    try:
        p = subprocess.run([python, "-c", _RATES_SCRIPT], capture_output=True, text=True,
                           timeout=timeout)
        line = [x for x in p.stdout.splitlines() if x.startswith("RATES ")]
        if not line:
            err = (p.stderr.strip().splitlines() or ["no output"])[-1]
            return rates, sources, None, f"rates not measured ({err}); stated values used"
        got = json.loads(line[-1][len("RATES "):])
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return rates, sources, None, f"rates not measured ({e}); stated values used"
    name = got.pop("device", None)
    for k, v in got.items():
        if k in rates and v > 0:
            rates[k], sources[k] = float(v), "measured"
    return rates, sources, name, "rates measured with PyTorch in a separate process"


# ---------------------------------------------------------------------------- floors

def floors(rates, nq, d, k, device_bytes, flops):
    """Lower bounds (seconds) of one batch: reading device_bytes once from DRAM; the host
    copies (queries in, k float distances + int64 ids out); the flops at FP32 and at TF32
    rates. 'floor' = max(DRAM, TF32) + host copies (the copies cannot overlap the
    search of the same batch)."""
    t = dict(
        dram=device_bytes / rates["dram_Bps"],
        pcie=nq * d * 4 / rates["h2d_Bps"] + nq * k * 12 / rates["d2h_Bps"],
        fp32=flops / rates["fp32_flops"],
        tf32=flops / rates["tf32_flops"],
    )
    t["floor"] = max(t["dram"], t["tf32"]) + t["pcie"]
    return t


def flat_work(nb, d, nq, copy=None):
    """(device bytes, flops) of exact search: the base (and its norms) read once;
    2 nq nb d flops. copy ('float16' or 'int8'): one query reads faiss_ext's copy
    instead (16-byte rows: d rounded up to 8 halves or 16 bytes; a scale and a norm a
    vector)."""
    if copy is not None and nq == 1:
        row = (d + 7) // 8 * 16 if copy == "float16" else (d + 15) // 16 * 16
        return nb * (row + 8), 2.0 * nb * d
    return nb * (d * 4 + 4), 2.0 * nq * nb * d


def ivf_work(list_sizes, probes, nlist, d):
    """(device bytes, flops) of an IVF-Flat search of the queries whose probed lists are
    the rows of `probes` (nq x nprobe list ids, -1 for none): the distinct probed lists
    read once (d floats + an int64 id per vector) plus the centroids; flops of the
    coarse search (2 d nlist per query) and of scanning every probed list of every
    query (2 d per vector)."""
    probes = np.asarray(probes)
    nq = probes.shape[0]
    probed = probes[probes >= 0]
    sizes = np.asarray(list_sizes, dtype=np.float64)
    bytes_ = float(sizes[np.unique(probed)].sum()) * (d * 4 + 8) + nlist * d * 4
    flops = 2.0 * d * (nq * nlist + float(sizes[probed].sum()))
    return bytes_, flops
