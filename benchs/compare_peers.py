#!/usr/bin/env python3
"""faiss_ext beside its peers, in one process, on one data set: one table, one plot.

  exact     faiss_ext GpuIndexFlat | FAISS GpuIndexFlatL2/IP | cuVS brute_force
  IVF-Flat  faiss_ext GpuIndexIVFFlat | FAISS GpuIndexIVFFlat (both on ONE trained
            faiss.IndexIVFFlat: same centroids) | cuVS ivf_flat (own k-means, same
            nlist; its recall is shown beside its QPS)
  graph     faiss_ext GpuIndexBang (search_L sweep) | cuVS CAGRA (nn_descent, degree 64,
            itopk sweep) | FAISS CPU IndexHNSWFlat (--hnsw)
  filtered  (--families ...,filtered; not in the default run) the same faiss_ext and cuVS
            indexes under id filters of 50% / 10% / 1% of the ids (random, range):
            GpuIndexFlat, GpuIndexIVFFlat nprobe 32, GpuIndexBang search_L 40 / 80 with
            faiss_ext's IDSelectorBitmap / IDSelectorRange | cuVS brute_force (prefilter),
            ivf_flat n_probes 32, CAGRA itopk 40 / 80 with a cuVS bitset; k = 10; recall
            against exact search under the same filter

Host numpy arrays in and out for every system (cuVS: queries copied to the device and
results back inside the timed call). Batch 1: p50 latency of single queries; larger
batches: median call time after a warm-up. Recall against exact ground truth (k=100,
checked in float64 on 100 queries). Each Flat / IVF line carries its floors: bytes
read once / DRAM bandwidth, host copies / PCIe rate, flops / FP32 and TF32 rates.

Usage (GPU machine; benchs/PEERS.md says how to install the peers):
  PYTHONPATH=build-gpu/python python3 benchs/compare_peers.py --data sift --out $OUT
  ... --data clustered768 | minilm | clustered:200000:96   [--quick] [--hnsw]
  ... --data sift --families filtered      (the filtered family alone)

Writes <out>/<name>_<device>_<date>.md (+ .png when matplotlib loads) and prints the
table last.
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "datasets"))
sys.path.insert(0, HERE)

import named_sets  # noqa: E402
from peers import filters as peer_filters  # noqa: E402
from peers import measure, report, systems  # noqa: E402

FAMILIES = ("flat", "ivf", "graph", "filtered")
# The filtered family is asked for by name: it adds minutes to a run (bench_filtered's
# 7 filters x 8 system points x 2 batches), more than the default run's budget leaves.
DEFAULT_FAMILIES = ("flat", "ivf", "graph")
GT_K = 100
BUILD_RESERVE_S = 60     # no index build starts with less of the time budget left
FILTERED_K = 10
FILTERED_CHECK = 20      # queries of each filter's ground truth rechecked in float64
NUMPY_LIMIT = 2e10       # nb * nq * d above which numpy is too slow for a ground truth
# The faiss_ext and cuVS systems the filtered family searches: (family, maker label).
FILTERED_SYSTEMS = (("flat", "faiss_ext GpuIndexFlat"), ("flat", "cuVS brute_force"),
                    ("ivf", "faiss_ext GpuIndexIVFFlat"), ("ivf", "cuVS ivf_flat"),
                    ("graph", "faiss_ext GpuIndexBang"), ("graph", "cuVS CAGRA"))


def say(msg):
    print(msg, flush=True)


def int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: need positive integers")
    return values


def fraction_list(text):
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers")
    if not values or min(values) <= 0 or max(values) > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: need fractions in (0, 1]")
    return values


def name_list(choices):
    def parse(text):
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in choices]
        if bad or not values:
            raise argparse.ArgumentTypeError(
                f"{text!r}: choose among {', '.join(choices)}")
        return values
    return parse


# Sweeps: full, and --quick.
DEFAULTS = dict(
    batches=([1, 16, 128, 1024, 10000], [1, 128, 10000]),
    flat_k=([1, 10, 100, 1024], [10, 100]),
    ivf_k=([10, 100], [10, 100]),
    nprobe=([1, 4, 16, 32, 64, 128], [1, 16, 64]),
    bang_L=([10, 16, 24, 32, 48, 64, 96, 128, 192, 256], [16, 32, 64, 128]),
    cagra_itopk=([16, 32, 48, 64, 96, 128, 192, 256, 512], [32, 64, 128, 256]),
    hnsw_ef=([16, 32, 64, 128, 256], [16, 64, 256]),
    singles=(200, 100),
)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True,
                    help="data set: " + ", ".join(named_sets.NAMES))
    ap.add_argument("--data-dir", help="folder of a file data set (default: its /tmp folder)")
    ap.add_argument("--nb", type=int, help="keep only the first nb base vectors")
    ap.add_argument("--nq", type=int, help="keep only the first nq queries")
    ap.add_argument("--systems", type=name_list(systems.PEERS),
                    default=["faiss_ext", "faiss", "cuvs"],
                    help="peers to load (default faiss_ext,faiss,cuvs; hnsw with --hnsw)")
    ap.add_argument("--hnsw", action="store_true", help="also FAISS CPU IndexHNSWFlat")
    ap.add_argument("--families", type=name_list(FAMILIES), default=list(DEFAULT_FAMILIES),
                    help="among " + ",".join(FAMILIES) + " (default "
                         + ",".join(DEFAULT_FAMILIES) + "; filtered only when named)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer batches, k, sweep points and repeats")
    ap.add_argument("--batches", type=int_list)
    ap.add_argument("--flat-k", type=int_list)
    ap.add_argument("--ivf-k", type=int_list)
    ap.add_argument("--nlist", type=int, help="IVF lists (default: the data set's)")
    ap.add_argument("--nprobe", type=int_list)
    ap.add_argument("--bang-L", type=int_list)
    ap.add_argument("--bang-entry", choices=("medoid", "nearest_hub"), default="nearest_hub",
                    help="where GpuIndexBang's walks start (SearchParametersBang.entry; "
                         "default nearest_hub, the index's own default)")
    ap.add_argument("--cagra-itopk", type=int_list)
    ap.add_argument("--hnsw-ef", type=int_list)
    ap.add_argument("--singles", type=int, help="single queries timed for batch-1 p50")
    copies = ap.add_mutually_exclusive_group()
    copies.add_argument("--flat-float16-copy", action="store_true",
                        help="build faiss_ext's GpuIndexFlat with float16_copy=True (one "
                             "query reads the copy first; +50%% device memory, shown in the "
                             "indexes table)")
    copies.add_argument("--flat-int8-copy", action="store_true",
                        help="the same with int8_copy=True (+25%% device memory)")
    ap.add_argument("--filtered-fractions", type=fraction_list,
                    default=list(peer_filters.FRACTIONS),
                    help="filtered family: fractions of the ids allowed (default 0.5,0.1,0.01)")
    ap.add_argument("--filtered-nprobe", type=int, default=32,
                    help="filtered family: IVF nprobe / n_probes (default 32)")
    ap.add_argument("--filtered-L", type=int_list, default=[40, 80],
                    help="filtered family: GpuIndexBang search_L (default 40,80)")
    ap.add_argument("--filtered-itopk", type=int_list,
                    help="filtered family: CAGRA itopk_size (default: the --filtered-L values)")
    ap.add_argument("--filtered-recall", type=float, default=0.95,
                    help="filtered family: the recall@10 both sides must reach in the "
                         "per-filter faiss_ext / best peer lines (default 0.95)")
    ap.add_argument("--budget-s", type=float, default=480,
                    help="start no new measurement after this many seconds (default 480)")
    ap.add_argument("--rates", choices=["measure", "stated"], default="measure",
                    help="device rates for the floors: measured (PyTorch, separate "
                         "process) or the stated ones")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--name", help="file name stem (default peers_<data>)")
    ap.add_argument("--commit", help="the faiss_ext commit measured, for the report "
                                     "(default: git rev-parse HEAD where .git is there)")
    args = ap.parse_args(argv)
    q = 1 if args.quick else 0
    for key, values in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, values[q])
    if args.hnsw and "hnsw" not in args.systems:
        args.systems = args.systems + ["hnsw"]
    if args.filtered_itopk is None:
        args.filtered_itopk = list(args.filtered_L)
    if args.name is None:
        args.name = "peers_" + re.sub(r"[^A-Za-z0-9]+", "-", args.data).strip("-")
        if "filtered" in args.families:   # not the same file as the default run's
            args.name += "_filtered"
    return args


# ----------------------------------------------------------------------- ground truth

def ground_truth(ds, b, k=GT_K, numpy_limit=NUMPY_LIMIT):
    """Exact k-NN ids of every query: faiss_ext GpuIndexFlat, else FAISS's GPU flat
    index, else numpy (small sets only); checked in float64 on 100 random queries.
    Returns (ids, one line saying how)."""
    k = min(k, ds.nb)
    engines = []
    if b.has("faiss_ext"):
        engines.append(("faiss_ext GpuIndexFlat", _gt_faiss_ext))
    if b.has("faiss"):
        engines.append(("FAISS GPU flat", _gt_faiss))
    for name, fn in engines:
        t0 = time.perf_counter()
        try:
            D, I = fn(ds, b, k)
        except Exception as e:  # noqa: BLE001
            say(f"  ground truth by {name} failed: {e}")
            continue
        secs = time.perf_counter() - t0
        failures = measure.check_ground_truth(ds.xb, ds.xq, D, I, ds.metric)
        if failures:
            say(f"  ground truth by {name} is not exact ({len(failures)} of 100 checked "
                f"queries; first: {failures[0]}); trying the next engine")
            continue
        return I.astype(np.int64), (f"exact k={k} by {name} ({secs:.1f} s), 100 random "
                                    "queries checked against numpy float64")
    if float(ds.nb) * ds.nq * ds.d > numpy_limit:
        raise SystemExit("compare_peers: no GPU engine for the ground truth and the set "
                         "is too large for numpy")
    t0 = time.perf_counter()
    _, I = measure.numpy_knn(ds.xb, ds.xq, k, ds.metric)
    return I, f"exact k={k} by numpy float64 ({time.perf_counter() - t0:.1f} s)"


def _gt_faiss_ext(ds, b, k):
    fx = b.mods["faiss_ext"]
    res = fx.GpuResources(device=0)
    m = fx.METRIC_L2 if ds.metric == "l2" else fx.METRIC_INNER_PRODUCT
    index = fx.GpuIndexFlat(res, ds.d, m)
    for i0 in range(0, ds.nb, 1 << 18):
        index.add(ds.xb[i0:i0 + (1 << 18)])
    return index.search(ds.xq, k)


def _gt_faiss(ds, b, k):
    faiss = b.mods["faiss"]
    res = faiss.StandardGpuResources()
    index = (faiss.GpuIndexFlatL2 if ds.metric == "l2" else faiss.GpuIndexFlatIP)(res, ds.d)
    index.add(ds.xb)
    return index.search(ds.xq, k)


# ------------------------------------------------------------------------- the runner

class Runner:
    """Builds each family's systems, measures every point, keeps rows and floors."""

    def __init__(self, args, ds, gt, backends, rates, t_start=None):
        self.args, self.ds, self.gt, self.b, self.rates = args, ds, gt, backends, rates
        self.rows, self.floors, self.systems, self.skipped = [], {}, [], []
        self.t_start = time.perf_counter() if t_start is None else t_start
        self.batches = [x for x in args.batches if x <= ds.nq]
        self.big_batch = max(self.batches)
        self.over_budget = False
        # Systems the filtered family searches again, kept by maker label when another
        # family builds them (keep_labels, set by run_families), so none is built twice.
        self.keep_labels, self.kept = set(), {}
        self.filtered_notes = []

    # -- budget
    def elapsed(self):
        return time.perf_counter() - self.t_start

    def budget_left(self, what, reserve=0.0):
        if self.elapsed() + reserve <= self.args.budget_s:
            return True
        if not self.over_budget:
            say(f"  time budget of {self.args.budget_s:.0f} s reached: {what} and what "
                "follows not measured")
            self.skipped.append(f"time budget ({self.args.budget_s:.0f} s) reached before "
                                f"{what}; the rest was not measured (--budget-s)")
        self.over_budget = True
        return False

    # -- building
    def build(self, family, label, make):
        """Builds one system (not when less than BUILD_RESERVE_S of the budget is left:
        a graph build can take a minute); on failure records why and returns None."""
        if not self.budget_left(f"building {label}", reserve=BUILD_RESERVE_S):
            return None
        say(f"  building {label} ...")
        try:
            s = make()
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            say(f"  {label}: build failed: {msg}")
            self.skipped.append(f"{label}: build failed ({msg[:200]})")
            return None
        info = dict(label=s.label, family=family, build_s=s.build_s, mem=s.mem,
                    notes=list(s.notes))
        self.systems.append(info)
        if family != "filtered" and label in self.keep_labels:
            self.kept[label] = s
        say(f"  {s.label}: built in {s.build_s:.1f} s, device memory "
            f"{report.fmt_bytes(s.mem)}")
        return s

    # -- measuring
    def point(self, s, family, param, k, batch, search=None, gt=None, extra=None):
        """Measures one system at one point; a failing call is recorded and skipped.
        search: the callable timed (default s.search; a filtered one for the filtered
        family), gt: its exact ids for every query (default the unfiltered ground
        truth), extra: more fields of the row (the filter)."""
        where = f"{s.label} {param}" + (f" {extra['filter']} {extra['fraction']:g}"
                                        if extra else "") + f" k={k} batch={batch}"
        if not self.budget_left(where):
            return None
        reps = measure.reps_for(batch, self.args.quick)
        try:
            m = measure.time_point(search or s.search, self.ds.xq, k, batch, reps,
                                   self.args.singles)
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            say(f"    {where}: failed: {msg}")
            self.skipped.append(f"{where}: {msg[:200]}")
            return None
        gt = (self.gt if gt is None else gt)[m["rows"]]
        row = dict(family=family, peer=s.peer, label=s.label, param=param, k=k,
                   batch=batch, qps=m["qps"], p50_ms=m["p50_ms"], calls=m["calls"],
                   r1=measure.recall_at(gt, m["I"], 1), r10=measure.recall_at(gt, m["I"], 10))
        row.update(extra or {})
        self.rows.append(row)
        lat = f" p50 {row['p50_ms']:.3f} ms" if row["p50_ms"] is not None else ""
        if extra:
            param = f"{param} {report.filter_name(report.filter_key_of(row))}"
        say(f"    {s.label:28s} {str(param):14s} k={k:<4d} batch={batch:<5d} "
            f"QPS {report.fmt_qps(row['qps']):>7s}{lat}  R@1 {report.fmt_r(row['r1'])} "
            f"R@10 {report.fmt_r(row['r10'])}  ({m['calls']} calls)")
        return row

    def batch_rows(self, batch):
        """The queries of one call at this batch size, for the floors (batch 1: each of
        the single queries timed)."""
        if batch == 1:
            return [np.array([i]) for i in range(min(self.args.singles, self.ds.nq))]
        return [np.arange(0, batch)]

    def flat_floor(self, k, batch):
        nbytes, flops = measure.flat_work(self.ds.nb, self.ds.d, batch, flat_copy(self.args))
        return measure.floors(self.rates, batch, self.ds.d, k, nbytes, flops)

    def ivf_floor(self, k, batch, nprobe, list_sizes, probes):
        per_call = []
        for rows in self.batch_rows(batch):
            nbytes, flops = measure.ivf_work(list_sizes, probes[rows, :nprobe],
                                             len(list_sizes), self.ds.d)
            per_call.append(measure.floors(self.rates, len(rows), self.ds.d, k, nbytes, flops))
        return {key: float(np.mean([f[key] for f in per_call])) for key in per_call[0]}

    # -- families
    def run_flat(self, makers):
        built = [s for s in (self.build("flat", label, make) for label, make in makers) if s]
        for k in self.args.flat_k:
            if k > self.ds.nb:
                continue
            for batch in self.batches:
                self.floors[("flat", "-", k, batch)] = self.flat_floor(k, batch)
                for s in built:
                    self.point(s, "flat", "-", k, batch)
        return built

    def run_ivf(self, makers, shared=None):
        """shared: dict(list_sizes=..., probes=nq x max nprobe) for the floors, or None."""
        built = [s for s in (self.build("ivf", label, make) for label, make in makers) if s]
        if built and shared is not None and shared.get("list_sizes") is None:
            for s in built:
                if hasattr(s, "list_sizes"):
                    shared["list_sizes"] = s.list_sizes()
                    break
        nlist = self.args.nlist
        for nprobe in self.args.nprobe:
            if nprobe > nlist:
                continue
            for s in built:
                s.set_param(nprobe)
            for k in self.args.ivf_k:
                for batch in self.batches:
                    if shared is not None and shared.get("list_sizes") is not None:
                        self.floors[("ivf", nprobe, k, batch)] = self.ivf_floor(
                            k, batch, nprobe, shared["list_sizes"], shared["probes"])
                    for s in built:
                        self.point(s, "ivf", nprobe, k, batch)
        return built

    def two_batches(self):
        """The big batch and batch 1 (those of --batches), biggest first: the graph and
        filtered families measure these."""
        return sorted({b for b in (1, self.big_batch) if b in self.batches}, reverse=True)

    def run_graph(self, makers, sweeps):
        k = 10
        built = []
        for label, make in makers:
            s = self.build("graph", label, make)
            if s is None:
                continue
            built.append(s)
            for param in sweeps[s.peer]:
                s.set_param(param)
                for batch in self.two_batches():
                    self.point(s, "graph", param, k, batch)
            if label not in self.kept:      # kept for the filtered family
                s.close()
                self.b.release_pools()
        return built

    # -- the filtered family
    def usable_filters(self, k):
        """The filters (peers/filters.py) over the base's ids; one allowing fewer than k
        ids is left out, said in the report."""
        out = []
        for f in peer_filters.make_filters(self.ds.nb, self.args.filtered_fractions):
            if f.allowed < k:
                self.skipped.append(f"filter {f.name}: allows {f.allowed} ids, fewer than "
                                    f"k = {k} (nb = {self.ds.nb})")
            else:
                out.append(f)
        return out

    def filtered_truth(self, filters, engines, k):
        """Exact k nearest among each filter's allowed ids, for every query: by the first
        exact engine (faiss_ext GpuIndexFlat, else cuVS brute_force, searched under the
        filter) whose results pass the float64 check of FILTERED_CHECK queries (the
        right distances, only allowed ids), else by numpy on a small set.
        Returns {filter key: ids}; filtered_notes says how each was made."""
        ds, gts = self.ds, {}
        for f in filters:
            if not self.budget_left(f"the ground truth of filter {f.name}"):
                break
            how = None
            for s in engines:
                t0 = time.perf_counter()
                try:
                    D, I = s.with_filter(f)(ds.xq, k)
                except Exception as e:  # noqa: BLE001
                    say(f"  ground truth of {f.name} by {s.label} failed: {e}")
                    continue
                secs = time.perf_counter() - t0
                failures = measure.check_ground_truth(ds.xb, ds.xq, np.asarray(D),
                                                      np.asarray(I), ds.metric,
                                                      n_check=FILTERED_CHECK, ids=f.ids())
                if failures:
                    say(f"  ground truth of {f.name} by {s.label} is not exact "
                        f"({len(failures)} of {FILTERED_CHECK}; first: {failures[0]})")
                    continue
                gts[f.key] = np.asarray(I, dtype=np.int64)
                how = f"{s.label} under the filter ({secs:.1f} s)"
                break
            if how is None and float(f.allowed) * ds.nq * ds.d <= NUMPY_LIMIT:
                t0 = time.perf_counter()
                gts[f.key] = measure.numpy_knn(ds.xb, ds.xq, k, ds.metric, ids=f.ids())[1]
                how = f"numpy float64 over the allowed ids ({time.perf_counter() - t0:.1f} s)"
            if how is None:
                self.skipped.append(f"filter {f.name}: no exact engine for its ground truth")
                continue
            self.filtered_notes.append(
                f"{f.name} ({f.allowed} ids): exact k={k} by {how}; {FILTERED_CHECK} "
                "queries rechecked in float64 against numpy over the allowed ids")
            say(f"  ground truth of {f.name} ({f.allowed} ids): {how}")
        return gts

    def run_filtered(self, entries):
        """The filtered family. entries: (family, label, make, params) of the faiss_ext
        and cuVS systems (filtered_entries). Each system is the one another family
        of this run built (kept), else built here (and dropped after its points). For
        each parameter: its unfiltered points, then one per filter, at the big batch and
        batch 1, k = FILTERED_K; recall against exact search under the same filter."""
        k = FILTERED_K
        filters = self.usable_filters(k)
        if not filters:
            return
        got = {}

        def obtain(label, make):
            if label not in got:
                got[label] = self.kept.get(label) or self.build("filtered", label, make)
            return got[label]

        engines = [obtain(label, make) for fam, label, make, _ in entries if fam == "flat"]
        gts = self.filtered_truth(filters, [s for s in engines if s is not None], k)
        for fam, label, make, params in entries:
            if self.over_budget:
                return
            s = obtain(label, make)
            if s is None:
                continue
            for param in params:
                if param is not None:
                    s.set_param(param)
                shown = "-" if param is None else param
                base = dict(pname=s.param_name if param is not None else "")
                for batch in self.two_batches():
                    self.point(s, "filtered", shown, k, batch,
                               extra=dict(base, filter="none", fraction=1.0,
                                          allowed=self.ds.nb))
                for f in filters:
                    if f.key not in gts or self.over_budget:
                        continue
                    try:
                        search = s.with_filter(f)
                    except Exception as e:  # noqa: BLE001
                        msg = f"{type(e).__name__}: {e}"
                        say(f"    {s.label} {shown} {f.name}: no filtered search ({msg})")
                        self.skipped.append(f"{s.label} {shown} {f.name}: {msg[:200]}")
                        continue
                    for batch in self.two_batches():
                        self.point(s, "filtered", shown, k, batch, search=search,
                                   gt=gts[f.key],
                                   extra=dict(base, filter=f.kind, fraction=f.fraction,
                                              allowed=f.allowed))
            if label not in self.kept:
                s.close()
                got[label] = None
                self.b.release_pools()


# ---------------------------------------------------------------------- the real run

def device_name(b, measured_name):
    if measured_name:
        return measured_name
    if b.cupy is not None:
        try:
            name = b.cupy.cuda.runtime.getDeviceProperties(0)["name"]
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001
            pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return out.splitlines()[0] if out else "unknown device"
    except (OSError, subprocess.SubprocessError):
        return "unknown device"


def device_tag(name):
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name or "")
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", (name or "cpu").lower())[:20]


def git_revision():
    try:
        out = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown (no git here)"
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git here)"


def flat_copy(args):
    """The copy faiss_ext's GpuIndexFlat keeps: 'float16', 'int8' or None."""
    return "float16" if args.flat_float16_copy else "int8" if args.flat_int8_copy else None


def real_makers(args, ds, b, runner):
    """The systems of each family as (label, constructor) pairs, for the peers that
    loaded; the IVF floors' shared information; and the graph sweeps."""
    fx_res = b.mods["faiss_ext"].GpuResources(device=0) if b.has("faiss_ext") else None
    fres = b.mods["faiss"].StandardGpuResources() if b.has("faiss") else None
    xb, metric = ds.xb, ds.metric
    flat, ivf, graph = [], [], []
    if b.has("faiss_ext"):
        copy = flat_copy(args)
        flat.append(("faiss_ext GpuIndexFlat",
                     lambda: systems.ExtFlat(b, fx_res, xb, metric, copy=copy)))
    if b.has("faiss"):
        flat.append(("FAISS GpuIndexFlat", lambda: systems.FaissFlat(b, fres, xb, metric)))
    if b.has("cuvs"):
        flat.append(("cuVS brute_force", lambda: systems.CuvsFlat(b, xb, metric)))

    shared = None
    wants_ivf = "ivf" in args.families or "filtered" in args.families
    if wants_ivf and (b.has("faiss") or b.has("faiss_ext")):
        trained = None
        if b.has("faiss"):
            say(f"  training one IVF quantizer (nlist={args.nlist}) with FAISS's GPU k-means ...")
            trained, secs = systems.train_shared_ivf(b.mods["faiss"], fres, xb, metric,
                                                     args.nlist)
            runner.systems.append(dict(label=f"shared faiss.IndexIVFFlat quantizer "
                                             f"(nlist {args.nlist})", family="ivf",
                                       build_s=secs, mem=None,
                                       notes=["k-means on the GPU (FAISS clustering_index), "
                                              "copied to FAISS and faiss_ext"]))
            say(f"  trained in {secs:.1f} s")
            max_np = min(max(args.nprobe), args.nlist)
            _, probes = trained.quantizer.search(ds.xq, max_np)
            shared = dict(list_sizes=None, probes=probes)
        if b.has("faiss_ext"):
            ivf.append(("faiss_ext GpuIndexIVFFlat",
                        lambda: systems.ExtIVF(b, fx_res, xb, metric, args.nlist, trained)))
        if trained is not None:
            ivf.append(("FAISS GpuIndexIVFFlat",
                        lambda: systems.FaissIVF(b, fres, xb, trained)))
    if b.has("cuvs"):
        ivf.append(("cuVS ivf_flat", lambda: systems.CuvsIVF(b, xb, metric, args.nlist)))

    unit = True
    if metric == "ip":
        norms = np.linalg.norm(ds.xb[:10_000], axis=1)
        unit = bool(np.all(np.abs(norms - 1) < 1e-3))
    if b.has("faiss_ext"):
        graph.append(("faiss_ext GpuIndexBang",
                      lambda: systems.ExtBang(b, fx_res, xb, metric, args.bang_entry)))
    if b.has("cuvs"):
        graph.append(("cuVS CAGRA", lambda: _cagra(b, xb, metric, unit)))
    if b.has("hnsw"):
        graph.append(("FAISS CPU IndexHNSWFlat", lambda: systems.FaissHNSW(b, xb, metric)))
    sweeps = {"faiss_ext": args.bang_L, "cuvs": args.cagra_itopk, "hnsw": args.hnsw_ef}
    makers = dict(flat=flat, ivf=ivf, graph=graph)
    makers["filtered"] = filtered_entries(makers, args)
    return makers, shared, sweeps


def filtered_entries(makers, args):
    """The filtered family's systems, (family, label, make, params), from the other
    families' makers (FILTERED_SYSTEMS, those that loaded): Flat without a parameter,
    IVF at --filtered-nprobe (at most nlist), Bang at --filtered-L, CAGRA at
    --filtered-itopk (at least k)."""
    params = {"flat": [None], "ivf": [min(args.filtered_nprobe, args.nlist)]}
    out = []
    for family, label in FILTERED_SYSTEMS:
        make = next((m for lab, m in makers[family] if lab == label), None)
        if make is None:
            continue
        if family == "graph":
            values = args.filtered_L if label.startswith("faiss_ext") else [
                v for v in args.filtered_itopk if v >= FILTERED_K]
        else:
            values = params[family]
        out.append((family, label, make, values))
    return out


def _cagra(b, xb, metric, unit):
    """CAGRA with the data set's metric; on unit vectors, if its inner-product build
    fails, by L2 (the same ranking), said in its notes."""
    try:
        return systems.CuvsCagra(b, xb, metric)
    except Exception as e:  # noqa: BLE001
        if metric != "ip" or not unit:
            raise
        say(f"  cuVS CAGRA inner_product build failed ({e}); building it by L2 on the "
            "unit vectors")
        s = systems.CuvsCagra(b, xb, "l2")
        s.notes.append(f"L2 on unit vectors (inner_product build failed: {str(e)[:100]})")
        return s


def run_families(runner, makers, shared, sweeps, after=None):
    """Runs the chosen families in order; after(family) is called after each one (the
    report is rewritten then, so that a run cut short still leaves its tables)."""
    fams = runner.args.families
    if "filtered" in fams:
        runner.keep_labels = {entry[1] for entry in makers.get("filtered", [])}
    if "flat" in fams:
        say("== exact search (Flat)")
        runner.run_flat(makers["flat"])
        runner.b.release_pools()
        if after:
            after("flat")
    if "ivf" in fams:
        say(f"== IVF-Flat (nlist {runner.args.nlist})")
        runner.run_ivf(makers["ivf"], shared)
        runner.b.release_pools()
        if after:
            after("ivf")
    if "graph" in fams:
        say("== graph indexes (k = 10)")
        runner.run_graph(makers["graph"], sweeps)
        if after:
            after("graph")
    if "filtered" in fams:
        say(f"== filtered search (k = {FILTERED_K}; filters of "
            f"{', '.join(f'{100 * f:g}%' for f in runner.args.filtered_fractions)} of the ids)")
        runner.run_filtered(makers.get("filtered", []))
        runner.kept.clear()
        runner.b.release_pools()
        if after:
            after("filtered")


def write_report(runner, args, ds, header, argv, partial=None):
    date = datetime.date.today().isoformat()
    stem = f"{args.name}_{device_tag(header['device'])}_{date}"
    md_path = os.path.join(args.out, stem + ".md")
    png_path = os.path.join(args.out, stem + ".png")
    title = (f"{ds.name}: nb={ds.nb} nq={ds.nq} d={ds.d} {ds.metric}, "
             f"{header['device']}, {date}")
    os.makedirs(args.out, exist_ok=True)
    try:
        plot_note = report.write_plot(runner.rows, png_path, title, runner.big_batch)
    except Exception as e:  # noqa: BLE001  (a plot never costs the table)
        plot_note = f"no plot: {type(e).__name__}: {e}"
    rates, src = header["rates"], header["rate_sources"]
    lines = [
        f"# faiss_ext beside its peers: {ds.name}",
        "",
        f"- device: {header['device']}; host {platform.node()}; {date}",
        f"- command: `{' '.join(shlex.quote(a) for a in argv)}`",
        f"- versions: faiss_ext commit {header['git']}; FAISS "
        f"{runner.b.versions.get('faiss', 'not loaded')}; cuVS "
        f"{runner.b.versions.get('cuvs', 'not loaded')}; CuPy "
        f"{runner.b.versions.get('cupy', 'not loaded')}; numpy {np.__version__}; "
        f"Python {platform.python_version()}",
        f"- data: {ds.source}; nb={ds.nb} nq={ds.nq} d={ds.d} metric={ds.metric}; "
        f"SHA-256 of the float32 base+query {header['sha256'][:16]}",
    ] + [f"- data note: {n}" for n in ds.notes] + [
        f"- ground truth: {header['gt']}",
        f"- device rates for the floors ({header['rates_how']}): DRAM copy "
        f"{rates['dram_Bps'] / 1e12:.2f} TB/s ({src['dram_Bps']}), host->device "
        f"{rates['h2d_Bps'] / 1e9:.1f} GB/s ({src['h2d_Bps']}), device->host "
        f"{rates['d2h_Bps'] / 1e9:.1f} GB/s ({src['d2h_Bps']}), FP32 GEMM "
        f"{rates['fp32_flops'] / 1e12:.1f} TFLOP/s ({src['fp32_flops']}), TF32 GEMM "
        f"{rates['tf32_flops'] / 1e12:.0f} TFLOP/s ({src['tf32_flops']})",
        "- timing: host numpy arrays in and out for every system (cuVS: host->device of "
        "the queries and device->host of the results inside the timed call); batch 1: "
        f"QPS = 1 / p50 latency of up to {args.singles} single queries; larger batches: "
        "batch / median call time after one warm-up. faiss_ext / best peer: faiss_ext QPS "
        "over the faster of FAISS and cuVS at that line.",
        "- floors (per call): DRAM = bytes read once (Flat: the base, or at batch 1 with "
        "--flat-float16-copy / --flat-int8-copy faiss_ext's copy; IVF: the distinct "
        "probed lists + centroids) / DRAM rate; PCIe = queries in + results out; FP32, "
        "TF32 = flops (Flat 2 nq nb d; IVF 2 d (nq nlist + vectors scanned)) / rate; "
        "'% of floor' = (max(DRAM, TF32) + PCIe) / faiss_ext's call time.",
        f"- total run time {runner.elapsed():.0f} s" + (f"; {plot_note}" if plot_note else
                                                         f"; plot {os.path.basename(png_path)}"),
    ]
    if partial:
        lines.append(f"- PARTIAL: written after the {partial} family; the run went on")
    if header["not_loaded"]:
        lines.append("- not loaded: " + "; ".join(header["not_loaded"]))
    sections = [
        ("Indexes", report.systems_table(runner.systems)),
        ("Exact search (Flat)", report.point_table(runner.rows, "flat", runner.floors, None)),
        (f"IVF-Flat, nlist {args.nlist} (FAISS and faiss_ext share one trained quantizer; "
         "cuVS trains its own)",
         report.point_table(runner.rows, "ivf", runner.floors, "nprobe")),
        ("Graph indexes, k = 10", report.graph_table(runner.rows, runner.big_batch)),
        (f"Filtered search, k = {FILTERED_K}", filtered_section(runner, args)),
        ("Not measured", [f"- {s}" for s in runner.skipped]),
    ]
    text = report.write_markdown(md_path, lines, sections)
    return md_path, (None if plot_note else png_path), text


def filtered_section(runner, args):
    """The filtered family's table, what it measured, and one line per filter naming
    the best peer (empty when the family did not run)."""
    table = report.filtered_table(runner.rows, runner.big_batch)
    if not table:
        return []
    lines = [
        "faiss_ext: GpuIndexFlat, GpuIndexIVFFlat and GpuIndexBang searched with "
        "SearchParameters / SearchParametersIVF / SearchParametersBang whose sel is "
        "faiss_ext's IDSelectorBitmap (random ids) or IDSelectorRange (ranges), a host "
        "object made once per filter (faiss_ext turns it into its device filter inside "
        "each search call: in the timed time); cuVS: brute_force.search(prefilter=...), "
        "ivf_flat.search(filter=...), cagra.search(filter=...) with "
        "cuvs.neighbors.filters.from_bitset over a uint32 bitset copied to the device once "
        "per filter, before the timed calls (bit i % 32 of word i // 32 set = id i kept): "
        "each library as its API is meant to be called. Both sides are given "
        "the same allowed ids. Random ids are nested (the 1% set in the 10% one, that in "
        "the 50% one: one permutation, seed 19); ranges are contiguous ids centred in "
        f"[0, {runner.ds.nb}). IVF: nprobe {min(args.filtered_nprobe, args.nlist)} (the "
        f"IVF family's indexes: nlist {args.nlist}, faiss_ext on the shared quantizer "
        "where FAISS loaded); Bang search_L "
        f"{', '.join(map(str, args.filtered_L))}; CAGRA itopk "
        f"{', '.join(map(str, args.filtered_itopk))} (the graph family's build).",
        "x unfiltered: this call time / the same system's unfiltered call time at the same "
        "batch and parameter (> 1: slower under the filter). recall@10: at the big batch "
        "(batch 1 where only that ran), against exact search under the same filter; a "
        "system returning fewer than k allowed ids (IVF with few allowed ids in its "
        "probed lists) loses recall for them.",
        "",
    ] + [f"- ground truth {n}" for n in runner.filtered_notes] + [""] + table + [
        "",
        f"Per filter, at each batch: the fastest faiss_ext point and the fastest peer "
        f"point of recall@10 >= {args.filtered_recall:g}, and faiss_ext / best peer:",
        "",
    ] + report.filtered_summary(runner.rows, runner.two_batches(), args.filtered_recall)
    return lines


def main(argv=None):
    argv = sys.argv if argv is None else argv
    args = parse_args(argv[1:])
    t_start = time.perf_counter()
    say(f"compare_peers: --data {args.data}, peers {','.join(args.systems)}, families "
        f"{','.join(args.families)}{', quick' if args.quick else ''}; budget {args.budget_s:.0f} s")
    b = systems.load_backends(args.systems)
    for name in args.systems:
        if name in b.mods:
            say(f"  loaded {name} {b.versions.get(name if name != 'hnsw' else 'faiss', '')}")
        else:
            say(f"  skipped {name}: {b.why.get(name, 'not loaded')}")
    if not any(b.has(p) for p in ("faiss_ext", "faiss", "cuvs")):
        sys.exit("compare_peers: no GPU system loaded (see the reasons above)")

    t0 = time.perf_counter()
    ds = named_sets.load(args.data, args.data_dir, args.nb, args.nq)
    if args.nlist is None:
        args.nlist = min(ds.nlist, ds.nb)
    sha = ds.sha256()
    say(f"data {ds.name}: nb={ds.nb} nq={ds.nq} d={ds.d} metric={ds.metric} "
        f"({time.perf_counter() - t0:.1f} s); sha256 {sha[:16]}; {ds.source}")

    if args.rates == "measure":
        rates, sources, measured_name, how = measure.measure_rates()
    else:
        rates, sources, measured_name, how = (dict(measure.STATED_RATES),
                                              {k: "stated" for k in measure.STATED_RATES},
                                              None, "stated values (--rates stated)")
    say(f"rates: {how}: " + ", ".join(f"{k} {v:.3g}" for k, v in rates.items()))

    gt, gt_how = ground_truth(ds, b)
    say(f"ground truth: {gt_how}")

    runner = Runner(args, ds, gt, b, rates, t_start)
    header = dict(device=device_name(b, measured_name), git=args.commit or git_revision(),
                  sha256=sha,
                  gt=gt_how, rates=rates, rate_sources=sources, rates_how=how,
                  not_loaded=[f"{n}: {b.why[n]}" for n in args.systems if n in b.why])
    makers, shared, sweeps = real_makers(args, ds, b, runner)
    run_families(runner, makers, shared, sweeps,
                 after=lambda fam: write_report(runner, args, ds, header, argv, partial=fam))
    md_path, png_path, text = write_report(runner, args, ds, header, argv)
    say("\n" + text)
    say(f"wrote {md_path}" + (f" and {png_path}" if png_path else ""))


if __name__ == "__main__":
    main()
