"""benchs/compare_peers.py without a GPU: argument parsing, data sets, recall, timing,
floors, ground truth, the whole run with stand-in systems (exact numpy search with
recall knobs, and FAISS CPU HNSW where the faiss module loads), the markdown report and
the graceful exit when no GPU peer loads."""

import os
import sys
import time

import numpy as np
import pytest

BENCHS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchs")
sys.path.insert(0, os.path.abspath(BENCHS))

import compare_peers as cp  # noqa: E402
import named_sets  # noqa: E402
from peers import measure, report, systems  # noqa: E402


# ------------------------------------------------------------------ stand-in systems

class Exact(systems.System):
    """Exact numpy search; `drop` replaces that fraction of each result row (from the
    end) with far ids, to fake an approximate index whose recall rises with its
    parameter."""

    def __init__(self, peer, label, family, ds, param_name="", slow=0.0):
        super().__init__()
        self.peer, self.label, self.family, self.param_name = peer, label, family, param_name
        self.ds, self.slow, self.drop = ds, slow, 0.0
        self.build_s, self.mem = 0.01, 1 << 20
        self.calls = 0

    def set_param(self, value):
        self.drop = 1.0 / (1 + value)

    def search(self, x, k):
        self.calls += 1
        if self.slow:
            time.sleep(self.slow)
        D, I = measure.numpy_knn(self.ds.xb, x, k, self.ds.metric)
        n_bad = int(round(self.drop * k))
        if n_bad:
            I = I.copy()
            I[:, k - n_bad:] = self.ds.nb - 1 - np.arange(n_bad)
        return D.astype(np.float32), I


def small_run(tmp_path, extra=()):
    args = cp.parse_args(["--data", "clustered:3000:16:300", "--quick", "--batches",
                          "1,16,128", "--flat-k", "1,10,100", "--nprobe", "1,4",
                          "--bang-L", "8,32", "--singles", "20", "--rates", "stated",
                          "--out", str(tmp_path / "new")] + list(extra))
    ds = named_sets.load(args.data)
    args.nlist = 16
    b = systems.Backends()
    gt, how = cp.ground_truth(ds, b)
    rates = dict(measure.STATED_RATES)
    runner = cp.Runner(args, ds, gt, b, rates)
    mk = lambda peer, label, fam, pname="", slow=0.0: (  # noqa: E731
        label, lambda: Exact(peer, label, fam, ds, pname, slow))
    makers = dict(
        flat=[mk("faiss_ext", "faiss_ext GpuIndexFlat", "flat"),
              mk("faiss", "FAISS GpuIndexFlatL2", "flat", slow=0.001),
              mk("cuvs", "cuVS brute_force", "flat", slow=0.002)],
        ivf=[mk("faiss_ext", "faiss_ext GpuIndexIVFFlat", "ivf", "nprobe"),
             mk("faiss", "FAISS GpuIndexIVFFlat", "ivf", "nprobe"),
             mk("cuvs", "cuVS ivf_flat", "ivf", "nprobe")],
        graph=[mk("faiss_ext", "faiss_ext GpuIndexBang", "graph", "search_L"),
               mk("cuvs", "cuVS CAGRA", "graph", "itopk", slow=0.001)],
    )
    # IVF floors from a real assignment: 16 "lists" by k-means-free nearest centre.
    centres = ds.xb[:16]
    _, assign = measure.numpy_knn(centres, ds.xb, 1, "l2")
    sizes = np.bincount(assign[:, 0], minlength=16)
    _, probes = measure.numpy_knn(centres, ds.xq, 4, "l2")
    shared = dict(list_sizes=sizes, probes=probes)
    sweeps = {"faiss_ext": args.bang_L, "cuvs": args.cagra_itopk, "hnsw": args.hnsw_ef}
    if "hnsw" in args.systems:
        faiss = pytest.importorskip("faiss")
        b.mods["hnsw"] = faiss
        makers["graph"].append(("FAISS CPU IndexHNSWFlat",
                                lambda: systems.FaissHNSW(b, ds.xb, ds.metric, M=16)))
    cp.run_families(runner, makers, shared, sweeps)
    header = dict(device="NVIDIA H100 80GB HBM3", git="test", sha256=ds.sha256(), gt=how,
                  rates=rates, rate_sources={k: "stated" for k in rates},
                  rates_how="stated", not_loaded=["cuvs: CuPy did not load"])
    md, png, text = cp.write_report(runner, args, ds, header, ["compare_peers.py"] + [
        "--data", args.data])
    return runner, md, png, text


# ---------------------------------------------------------------------------- tests

def test_parse_defaults_and_quick():
    a = cp.parse_args(["--data", "sift"])
    assert a.batches == [1, 16, 128, 1024, 10000] and a.flat_k == [1, 10, 100, 1024]
    assert a.nprobe == [1, 4, 16, 32, 64, 128] and a.ivf_k == [10, 100]
    assert a.systems == ["faiss_ext", "faiss", "cuvs"] and a.name == "peers_sift"
    q = cp.parse_args(["--data", "clustered:10:2", "--quick", "--hnsw", "--nprobe", "2,8"])
    assert q.batches == [1, 128, 10000] and q.nprobe == [2, 8] and "hnsw" in q.systems
    assert q.name == "peers_clustered-10-2"
    with pytest.raises(SystemExit):
        cp.parse_args(["--data", "sift", "--systems", "faiss,milvus"])
    with pytest.raises(SystemExit):
        cp.parse_args(["--data", "sift", "--nprobe", "4,x"])


def test_named_sets():
    ds = named_sets.load("clustered:500:8:50")
    assert ds.xb.shape == (500, 8) and ds.xq.shape == (50, 8) and ds.metric == "l2"
    assert ds.xb.dtype == np.float32 and ds.xb.flags.c_contiguous
    assert ds.sha256() == named_sets.load("clustered:500:8:50").sha256()
    assert named_sets.load("clustered:500:8:50", nb=100, nq=10).xb.shape == (100, 8)
    with pytest.raises(ValueError):
        named_sets.load("clustered:5:x")
    with pytest.raises(ValueError):
        named_sets.load("no-such-set")
    with pytest.raises(FileNotFoundError):
        named_sets.load("sift", folder="/nonexistent")
    assert named_sets.default_nlist(1_000_000) == 2048


def test_file_set(tmp_path):
    import vecs_io
    rng = np.random.default_rng(3)
    xb = rng.standard_normal((300, 12)).astype(np.float32)
    xb /= np.linalg.norm(xb, axis=1, keepdims=True)
    vecs_io.write_vectors(str(tmp_path / "base.fbin"), xb)
    vecs_io.write_vectors(str(tmp_path / "query.fbin"), xb[:7])
    ds = named_sets.load("minilm", folder=str(tmp_path))
    assert ds.metric == "ip" and ds.nb == 300 and ds.nq == 7
    np.testing.assert_array_equal(ds.xq, xb[:7])
    assert "norms" in ds.notes[0]


def test_recall():
    gt = np.array([[1, 2, 3], [4, 5, 6]])
    assert measure.recall_at(gt, np.array([[1, 9, 2], [5, 4, 6]]), 1) == 0.5
    assert measure.recall_at(gt, np.array([[3, 2, 1], [7, 8, 9]]), 3) == 0.5
    assert measure.recall_at(gt, np.array([[1], [4]]), 3) is None


def test_time_point_batches():
    xq = np.arange(100, dtype=np.float32).reshape(50, 2)
    seen = []

    def search(x, k):
        seen.append(x.shape[0])
        return np.zeros((len(x), k), np.float32), np.tile(x[:, :1].astype(np.int64), (1, k))
    one = measure.time_point(search, xq, 3, 1, 5, singles=10)
    assert one["calls"] == 10 and one["p50_ms"] > 0 and one["I"].shape == (10, 3)
    np.testing.assert_array_equal(one["I"][:, 0], xq[:10, 0])
    many = measure.time_point(search, xq, 3, 16, reps=5, singles=10)
    assert many["p50_ms"] is None and many["calls"] == 5
    # 3 distinct slices of 16 searched: rows and ids line up
    np.testing.assert_array_equal(many["I"][:, 0], xq[many["rows"], 0])
    assert len(many["rows"]) == 48
    with pytest.raises(ValueError):
        measure.time_point(search, xq, 3, 64, 2, 10)


def test_floors():
    rates = dict(dram_Bps=1e12, h2d_Bps=1e10, d2h_Bps=1e10, fp32_flops=1e13, tf32_flops=1e14)
    nbytes, flops = measure.flat_work(1000, 10, 5)
    assert nbytes == 1000 * 44 and flops == 2 * 5 * 1000 * 10
    # One query over the float16 copy: 16 halves (10 rounded up to 8s), scale and norm.
    assert measure.flat_work(1000, 10, 1, copy="float16")[0] == 1000 * (32 + 8)
    assert measure.flat_work(1000, 10, 1, copy="int8")[0] == 1000 * (16 + 8)
    assert measure.flat_work(1000, 10, 5, copy="int8")[0] == 1000 * 44
    f = measure.floors(rates, 5, 10, 2, nbytes, flops)
    assert f["dram"] == pytest.approx(44e3 / 1e12)
    assert f["pcie"] == pytest.approx(5 * 40 / 1e10 + 5 * 2 * 12 / 1e10)
    assert f["floor"] == pytest.approx(max(f["dram"], f["tf32"]) + f["pcie"])
    sizes = np.array([10, 20, 30, 40])
    nbytes, flops = measure.ivf_work(sizes, np.array([[0, 1], [1, 3]]), 4, 8)
    assert nbytes == (10 + 20 + 40) * (32 + 8) + 4 * 8 * 4
    assert flops == 2 * 8 * (2 * 4 + 10 + 20 + 20 + 40)


def test_ground_truth_numpy_and_check():
    ds = named_sets.load("clustered:1000:8:40")
    gt, how = cp.ground_truth(ds, systems.Backends())
    assert gt.shape == (40, 100) and "numpy" in how
    D, I = measure.numpy_knn(ds.xb, ds.xq, 10, "l2")
    assert measure.check_ground_truth(ds.xb, ds.xq, D, I, "l2", n_check=10) == []
    bad = I.copy()
    bad[:, 0] = bad[:, 9]
    assert measure.check_ground_truth(ds.xb, ds.xq, D, bad, "l2", n_check=40)


def test_whole_run_with_stand_ins(tmp_path):
    runner, md, png, text = small_run(tmp_path)
    flat = [r for r in runner.rows if r["family"] == "flat"]
    assert len(flat) == 3 * 3 * 3               # 3 k x 3 batches x 3 systems
    assert all(r["r1"] == pytest.approx(1.0) for r in flat)
    assert all(r["r10"] is None for r in flat if r["k"] == 1)
    ivf = [r for r in runner.rows if r["family"] == "ivf"]
    assert len(ivf) == 2 * 2 * 3 * 3            # 2 nprobe x 2 k x 3 batches x 3 systems
    assert {("ivf", 4, 10, 128), ("flat", "-", 100, 1)} <= set(runner.floors)
    graph = [r for r in runner.rows if r["family"] == "graph"]
    assert {r["batch"] for r in graph} == {1, 128}
    assert os.path.basename(md) == f"peers_clustered-3000-16-300_h100_{time.strftime('%Y-%m-%d')}.md"
    assert os.path.exists(md) and open(md).read() == text
    for needle in ("## Exact search (Flat)", "## IVF-Flat, nlist 16", "## Graph indexes",
                   "faiss_ext / best peer", "floor ms: DRAM / PCIe / FP32 / TF32",
                   "command: `compare_peers.py --data clustered:3000:16:300`",
                   "not loaded: cuvs: CuPy did not load", "SHA-256"):
        assert needle in text, needle
    # the ratio is faiss_ext's QPS over the faster peer's at that line
    line = next(x for x in text.splitlines() if x.startswith("| 10 | 128 |"))
    ratio = float(line.split("|")[6].strip().strip("*"))
    qps = {r["peer"]: r["qps"] for r in flat if r["k"] == 10 and r["batch"] == 128}
    assert ratio == pytest.approx(qps["faiss_ext"] / max(qps["faiss"], qps["cuvs"]), abs=0.006)
    if png is None:
        assert "no plot: matplotlib did not load" in text
    else:
        assert os.path.getsize(png) > 1000


def test_budget_stops_measuring(tmp_path):
    runner, md, png, text = small_run(tmp_path, ["--budget-s", "0"])
    assert runner.rows == [] and "time budget (0 s) reached" in text


def test_hnsw_cpu_in_graph_table(tmp_path):
    pytest.importorskip("faiss")
    runner, md, png, text = small_run(tmp_path, ["--hnsw", "--hnsw-ef", "16,64"])
    hnsw = [r for r in runner.rows if r["label"] == "FAISS CPU IndexHNSWFlat"]
    assert len(hnsw) == 4 and all(r["r10"] > 0.5 for r in hnsw)
    assert "| FAISS CPU IndexHNSWFlat | 64 |" in text


def test_equal_recall_ratio():
    rows = [dict(family="graph", peer="faiss_ext", label="bang", param=32, k=10, batch=100,
                 qps=1000.0, r10=0.95, r1=1.0, p50_ms=None),
            dict(family="graph", peer="cuvs", label="cagra", param=64, k=10, batch=100,
                 qps=400.0, r10=0.96, r1=1.0, p50_ms=None),
            dict(family="graph", peer="cuvs", label="cagra", param=32, k=10, batch=100,
                 qps=800.0, r10=0.90, r1=1.0, p50_ms=None)]
    best = report.best_peer_at_recall(rows, 0.95, batch=100)
    assert best[0] == 400.0
    lines = report.graph_table(rows, 100)
    assert "2.50 (vs cagra 64, recall 0.960)" in lines[2]
    assert report.best_peer_at_recall(rows, 0.99, batch=100) is None


def test_no_gpu_peer_exits_cleanly(monkeypatch, capsys):
    monkeypatch.setattr(systems, "load_backends", lambda wanted: _no_backends(wanted))
    with pytest.raises(SystemExit) as e:
        cp.main(["compare_peers.py", "--data", "clustered:100:4"])
    assert "no GPU system loaded" in str(e.value)
    out = capsys.readouterr().out
    assert "skipped faiss: the faiss module has no GPU support" in out


def _no_backends(wanted):
    b = systems.Backends()
    b.why = {"faiss_ext": "faiss_ext sees no CUDA device",
             "faiss": "the faiss module has no GPU support",
             "cuvs": "CuPy did not load"}
    return b


def test_load_backends_here():
    """On this machine (no GPU) every GPU peer is skipped with a reason, none raises."""
    b = systems.load_backends(["faiss_ext", "faiss", "cuvs", "hnsw"])
    for name in ("faiss_ext", "faiss", "cuvs"):
        if name not in b.mods:
            assert b.why[name]


def test_device_tag():
    assert cp.device_tag("NVIDIA H100 80GB HBM3") == "h100"
    assert cp.device_tag("NVIDIA H200") == "h200"
    assert cp.device_tag("unknown device") == "unknown-device"


def test_main_with_cpu_stand_ins(monkeypatch, tmp_path, capsys):
    """The whole command, every adapter included, with CPU stand-ins of the GPU peers
    (tests/python/peer_shims.py): FAISS and faiss_ext must share one trained IVF index,
    so their recalls agree at every IVF point."""
    faiss = pytest.importorskip("faiss")
    import peer_shims

    def fake_load(wanted):
        b = systems.Backends()
        b.cupy = peer_shims.cupy()
        b.mods = {"faiss_ext": peer_shims.faiss_ext(faiss), "faiss": peer_shims.faiss_gpu(faiss),
                  "cuvs": peer_shims.cuvs(faiss, measure.numpy_knn), "hnsw": faiss}
        b.mods = {k: v for k, v in b.mods.items() if k in wanted}
        b.versions = {"faiss": faiss.__version__, "cuvs": "shim", "cupy": "shim"}
        return b
    monkeypatch.setattr(systems, "load_backends", fake_load)
    cp.main(["compare_peers.py", "--data", "clustered:4000:16:200", "--quick",
             "--batches", "1,16,128", "--nlist", "16", "--nprobe", "1,4", "--bang-L", "16,32",
             "--bang-entry", "medoid",
             "--cagra-itopk", "16,32", "--hnsw", "--hnsw-ef", "16", "--singles", "10",
             "--rates", "stated", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    md = [p for p in os.listdir(tmp_path) if p.endswith(".md")]
    assert len(md) == 1 and md[0].startswith("peers_clustered-4000-16-200_")
    text = open(tmp_path / md[0]).read()
    assert text in out and "PARTIAL" not in text
    assert "ground truth: exact k=100 by faiss_ext GpuIndexFlat" in text
    assert "| shared faiss.IndexIVFFlat quantizer (nlist 16) | ivf |" in text
    for label in ("faiss_ext GpuIndexFlat", "FAISS GpuIndexFlatL2", "cuVS brute_force",
                  "faiss_ext GpuIndexIVFFlat", "FAISS GpuIndexIVFFlat", "cuVS ivf_flat",
                  "faiss_ext GpuIndexBang", "cuVS CAGRA", "FAISS CPU IndexHNSWFlat"):
        assert f"| {label} |" in text, label
    ivf_lines = [x for x in text.splitlines() if x.startswith(("| 1 | 10 |", "| 4 | 10 |"))]
    assert len(ivf_lines) == 6
    for line in ivf_lines:
        r10 = line.split("|")[9].split("/")
        assert r10[0].strip() == r10[1].strip(), line     # same trained index
        assert line.split("|")[10].strip() != "-"          # floors from the real probes
    assert "no peer point reaches" in text or "(vs " in text
    assert "walks start at the graph's entry point (entry=medoid)" in text


def test_main_inner_product_file_set(monkeypatch, tmp_path, capsys):
    """An inner-product file set (unit vectors, like minilm) through the stand-ins:
    IP metric everywhere, Bang's included."""
    faiss = pytest.importorskip("faiss")
    import peer_shims
    import vecs_io
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2100, 24)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    vecs_io.write_vectors(str(tmp_path / "base.fbin"), x[:2000])
    vecs_io.write_vectors(str(tmp_path / "query.fbin"), x[2000:])

    def fake_load(wanted):
        b = systems.Backends()
        b.cupy = peer_shims.cupy()
        b.mods = {"faiss_ext": peer_shims.faiss_ext(faiss), "faiss": peer_shims.faiss_gpu(faiss),
                  "cuvs": peer_shims.cuvs(faiss, measure.numpy_knn)}
        return b
    monkeypatch.setattr(systems, "load_backends", fake_load)
    cp.main(["compare_peers.py", "--data", "minilm", "--data-dir", str(tmp_path), "--quick",
             "--batches", "1,100", "--flat-k", "10", "--ivf-k", "10", "--nlist", "8",
             "--nprobe", "8", "--bang-L", "64", "--cagra-itopk", "64", "--singles", "5",
             "--rates", "stated", "--out", str(tmp_path / "out")])
    text = capsys.readouterr().out
    assert "metric=ip" in text and "L2 on unit vectors" not in text
    assert any(x.startswith("| faiss_ext GpuIndexBang | 64 |") for x in text.splitlines())
    # nprobe = nlist: every IVF index is exact
    line = next(x for x in text.splitlines() if x.startswith("| 8 | 10 | 100 |"))
    assert line.split("|")[9].strip() == "1.000 / 1.000 / 1.000"


def test_cagra_inner_product_falls_back_to_l2_on_unit_vectors():
    faiss = pytest.importorskip("faiss")
    import peer_shims
    b = systems.Backends()
    b.cupy = peer_shims.cupy()
    cv = peer_shims.cuvs(faiss, measure.numpy_knn)
    real_params = cv.cagra.IndexParams

    def no_ip(**kw):
        if kw.get("metric") == "inner_product":
            raise RuntimeError("inner_product is not supported by this build")
        return real_params(**kw)
    cv.cagra.IndexParams = no_ip
    b.mods["cuvs"] = cv
    x = np.random.default_rng(1).standard_normal((500, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    s = cp._cagra(b, x, "ip", unit=True)
    assert "L2 on unit vectors" in s.notes[-1]
    with pytest.raises(RuntimeError):
        cp._cagra(b, x, "ip", unit=False)


# ------------------------------------------------------------------- filtered family

from peers import filters as peer_filters  # noqa: E402


def test_filters_are_bench_filtereds():
    """Nested random sets and centred ranges of 50% / 10% / 1% of the ids, each also as
    faiss bitmap bytes and cuVS bitset words that select exactly its ids."""
    nb = 1003
    fl = peer_filters.make_filters(nb)
    assert [f.name for f in fl] == ["random 50%", "random 10%", "random 1%",
                                    "range 50%", "range 10%", "range 1%"]
    assert [f.allowed for f in fl] == [502, 100, 10, 502, 100, 10]   # llround(f * nb)
    rnd = {f.fraction: set(f.ids().tolist()) for f in fl if f.kind == "random"}
    assert rnd[0.01] < rnd[0.1] < rnd[0.5]                             # nested
    rng = [f for f in fl if f.kind == "range"]
    assert (rng[1].imin, rng[1].imax) == ((nb - 100) // 2, (nb - 100) // 2 + 100)
    again = peer_filters.make_filters(nb)
    for f, g in zip(fl, again):
        np.testing.assert_array_equal(f.ids(), g.ids())                  # seeded
    for f in fl:
        mask = f.mask()
        assert mask.sum() == f.allowed and np.all(np.diff(f.ids()) > 0)
        bits = f.bitmap()
        assert bits.dtype == np.uint8 and len(bits) == (nb + 7) // 8
        ids = np.arange(nb)
        np.testing.assert_array_equal((bits[ids >> 3] >> (ids & 7)) & 1, mask)
        words = f.bitset_words()
        assert words.dtype == np.uint32 and len(words) == (nb + 31) // 32
        np.testing.assert_array_equal((words[ids >> 5] >> (ids & 31).astype(np.uint32)) & 1,
                                      mask)
        np.testing.assert_array_equal(peer_filters.unpack_words(words, nb), mask)


def test_bitset_word_layout_by_hand():
    mask = np.zeros(70, dtype=bool)
    mask[[0, 31, 32, 69]] = True
    words = peer_filters.bitset_words(mask)
    assert words.tolist() == [1 | (1 << 31), 1, 1 << 5]
    assert peer_filters.pack_bitmap(mask)[:5].tolist() == [1, 0, 0, 128, 1]
    assert peer_filters.allowed_count(0.5, 5) == 3 and peer_filters.allowed_count(0.01, 50) == 1


def test_ground_truth_under_a_filter():
    ds = named_sets.load("clustered:2000:8:30")
    f = peer_filters.make_filters(ds.nb, [0.1])[0]
    D, I = measure.numpy_knn(ds.xb, ds.xq, 10, "l2", chunk=64, ids=f.ids())
    assert np.isin(I, f.ids()).all()
    brute = ((ds.xq[:, None, :].astype(np.float64) - ds.xb[f.ids()][None]) ** 2).sum(-1)
    np.testing.assert_allclose(D, np.sort(brute, axis=1)[:, :10], rtol=1e-9)
    assert measure.check_ground_truth(ds.xb, ds.xq, D, I, "l2", n_check=30, ids=f.ids()) == []
    D0, I0 = measure.numpy_knn(ds.xb, ds.xq, 10, "l2")        # unfiltered: not allowed ids
    fails = measure.check_ground_truth(ds.xb, ds.xq, D0, I0, "l2", n_check=30, ids=f.ids())
    assert fails and "filter does not allow" in fails[0]


def _filtered_rows():
    def row(peer, label, param, fkey, batch, qps, r10, pname=""):
        return dict(family="filtered", peer=peer, label=label, param=param, k=10, batch=batch,
                    qps=qps, p50_ms=None if batch > 1 else 1e3 / qps, r1=r10, r10=r10,
                    calls=3, filter=fkey[0], fraction=fkey[1], pname=pname,
                    allowed=1000 if fkey[0] == "none" else int(1000 * fkey[1]))
    none, r10 = ("none", 1.0), ("random", 0.1)
    return [
        row("faiss_ext", "faiss_ext GpuIndexFlat", "-", none, 100, 1000.0, 1.0),
        row("faiss_ext", "faiss_ext GpuIndexFlat", "-", r10, 100, 800.0, 1.0),
        row("cuvs", "cuVS brute_force", "-", none, 100, 900.0, 1.0),
        row("cuvs", "cuVS brute_force", "-", r10, 100, 400.0, 1.0),
        row("faiss_ext", "faiss_ext GpuIndexBang", 40, r10, 100, 5000.0, 0.97, "search_L"),
        row("cuvs", "cuVS CAGRA", 40, r10, 100, 4000.0, 0.90, "itopk"),
        row("cuvs", "cuVS CAGRA", 80, r10, 100, 2000.0, 0.98, "itopk"),
    ]


def test_filtered_table_and_summary():
    rows = _filtered_rows()
    lines = report.filtered_table(rows, 100)
    assert lines[0].startswith("| index | param | filter | allowed | QPS batch 100 | x unfiltered")
    flat = next(x for x in lines if x.startswith("| faiss_ext GpuIndexFlat | - | random 10% |"))
    cols = [c.strip() for c in flat.split("|")[1:-1]]
    assert cols[3] == "100 (10%)" and cols[5] == "1.25" and cols[6] == "1.000"   # 1000/800
    assert cols[7].startswith("2.00 (vs cuVS brute_force,")                     # 800/400
    bang = next(x for x in lines if x.startswith("| faiss_ext GpuIndexBang | search_L 40 |"))
    assert "2.50 (vs cuVS CAGRA itopk 80, recall 0.980)" in bang   # CAGRA 40 is below 0.97
    assert "| cuVS CAGRA | itopk 40 | random 10% |" in "\n".join(lines)
    summary = report.filtered_summary(rows, [100, 1], 0.95)
    assert summary[0].startswith("- unfiltered (1000 ids): batch 100: faiss_ext GpuIndexFlat "
                                 "1.0K QPS (recall 1.000) / best peer cuVS brute_force 900")
    line = next(x for x in summary if x.startswith("- random 10% (100 ids)"))
    assert ("faiss_ext GpuIndexBang search_L 40 5.0K QPS (recall 0.970) / best peer "
            "cuVS CAGRA itopk 80 2.0K (recall 0.980) = **2.50**") in line
    graphs = [r for r in rows if "Flat" not in r["label"] and "brute" not in r["label"]]
    assert report.filtered_summary(graphs, [100], 0.975) == [
        "- random 10% (100 ids): batch 100: no faiss_ext point reaches recall 0.975 (best "
        "peer cuVS CAGRA itopk 80 2.0K QPS, recall 0.980)"]
    assert report.filtered_table([r for r in rows if r["family"] == "graph"], 100) == []


def test_parse_filtered_options():
    a = cp.parse_args(["--data", "sift"])
    assert "filtered" not in a.families and a.name == "peers_sift"
    f = cp.parse_args(["--data", "sift", "--families", "filtered", "--filtered-L", "40,80"])
    assert f.families == ["filtered"] and f.name == "peers_sift_filtered"
    assert f.filtered_itopk == [40, 80] and f.filtered_nprobe == 32
    assert f.filtered_fractions == [0.5, 0.1, 0.01] and f.filtered_recall == 0.95
    with pytest.raises(SystemExit):
        cp.parse_args(["--data", "sift", "--filtered-fractions", "0.5,2"])


def _shim_loader(faiss):
    import peer_shims

    def fake_load(wanted):
        b = systems.Backends()
        b.cupy = peer_shims.cupy()
        b.mods = {"faiss_ext": peer_shims.faiss_ext(faiss), "faiss": peer_shims.faiss_gpu(faiss),
                  "cuvs": peer_shims.cuvs(faiss, measure.numpy_knn), "hnsw": faiss}
        b.mods = {k: v for k, v in b.mods.items() if k in wanted}
        b.versions = {"faiss": faiss.__version__, "cuvs": "shim", "cupy": "shim"}
        return b
    return fake_load


FILTERED_ARGS = ["--data", "clustered:4000:16:200", "--quick", "--batches", "1,100",
                 "--nlist", "16", "--filtered-nprobe", "16", "--filtered-L", "32,64",
                 "--singles", "10", "--rates", "stated"]


def test_main_filtered_with_cpu_stand_ins(monkeypatch, tmp_path, capsys):
    """--families filtered alone: every faiss_ext and cuVS system built once, searched
    unfiltered and under the six filters at both batches; the exact ones have recall 1
    against the filtered ground truth; one summary line per filter."""
    faiss = pytest.importorskip("faiss")
    monkeypatch.setattr(systems, "load_backends", _shim_loader(faiss))
    closed = []
    monkeypatch.setattr(systems.System, "close", lambda self: closed.append(self.label))
    cp.main(["compare_peers.py"] + FILTERED_ARGS + ["--families", "filtered",
                                                    "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert len(closed) == 6 and len(set(closed)) == 6     # each dropped after its points
    md = [p for p in os.listdir(tmp_path) if p.endswith(".md")]
    assert len(md) == 1 and md[0].startswith("peers_clustered-4000-16-200_filtered_")
    text = open(tmp_path / md[0]).read()
    assert text in out and "## Filtered search, k = 10" in text
    assert "## Exact search" not in text and "## Graph indexes" not in text
    assert "ground truth random 1% (40 ids): exact k=10 by faiss_ext GpuIndexFlat" in text
    labels = ("faiss_ext GpuIndexFlat", "cuVS brute_force", "faiss_ext GpuIndexIVFFlat",
              "cuVS ivf_flat", "faiss_ext GpuIndexBang", "cuVS CAGRA")
    for label in labels:
        assert f"| {label} | filtered |" in text, label            # built here, once
        assert text.count(f"| {label} | filtered |") == 1
    table = [x for x in text.splitlines() if x.startswith("| ") and
             (" | random " in x or " | range " in x or " | none |" in x)]
    # 6 systems, Bang and CAGRA at 2 parameters: 8 points x 7 filters
    assert len([x for x in table if x.startswith("| faiss_ext") or x.startswith("| cuVS")]) == 56
    for x in table:
        if x.startswith(("| faiss_ext GpuIndexFlat |", "| cuVS brute_force |")):
            assert x.split("|")[7].strip() == "1.000", x             # exact under the filter
    assert "| nprobe 16 | range 10% | 400 (10%) |" in text
    summary = [x for x in text.splitlines() if x.startswith("- random ") or
               x.startswith("- range ")]
    assert len(summary) == 6 and all("batch 100:" in x and "batch 1:" in x for x in summary)
    # the exact systems reach any recall: each line has both sides and their ratio
    assert all(x.count("= **") == 2 for x in summary)


def test_filtered_reuses_the_other_families_indexes(monkeypatch, tmp_path, capsys):
    """With the other families in the run, the filtered family builds nothing: it
    searches the indexes they built (kept until it is done)."""
    faiss = pytest.importorskip("faiss")
    monkeypatch.setattr(systems, "load_backends", _shim_loader(faiss))
    closed = []
    monkeypatch.setattr(systems.System, "close", lambda self: closed.append(self.label))
    cp.main(["compare_peers.py"] + FILTERED_ARGS + [
        "--families", "flat,ivf,graph,filtered", "--flat-k", "10", "--ivf-k", "10",
        "--nprobe", "4", "--bang-L", "32", "--cagra-itopk", "32",
        "--filtered-fractions", "0.1", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "| filtered |" not in text                        # nothing built twice
    assert closed == []                  # the graph family left its indexes to it
    for label, param in (("faiss_ext GpuIndexFlat", "-"), ("cuVS brute_force", "-"),
                         ("faiss_ext GpuIndexIVFFlat", "nprobe 16"),
                         ("cuVS ivf_flat", "nprobe 16"), ("faiss_ext GpuIndexBang", "search_L 32"),
                         ("cuVS CAGRA", "itopk 32")):
        assert f"| {label} | {param} | random 10% | 400 (10%) |" in text, label
    assert "## Exact search (Flat)" in text and "## Filtered search, k = 10" in text
    assert "(vs cuVS brute_force, recall 1.000)" in text


def test_filtered_budget(monkeypatch, tmp_path, capsys):
    faiss = pytest.importorskip("faiss")
    monkeypatch.setattr(systems, "load_backends", _shim_loader(faiss))
    cp.main(["compare_peers.py"] + FILTERED_ARGS + ["--families", "filtered", "--budget-s",
                                                    "0", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "time budget (0 s) reached before building faiss_ext GpuIndexFlat" in text
    assert "## Filtered search" not in text
