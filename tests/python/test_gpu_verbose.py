"""`verbose`: off by default; on, train and add print their phases with the fraction
done and the elapsed time."""

import re

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu

LINE = re.compile(r"^(\S+): (.+), (\d+\.\d)% done, (\d+\.\d{3}) s$")


def lines(text):
    parsed = [LINE.match(line) for line in text.splitlines() if line]
    assert all(parsed), text
    return [(m[1], m[2], float(m[3]), float(m[4])) for m in parsed]


def test_ivf_train_and_add_report_when_verbose(res, rng, capfd):
    n = small_under_sanitizer(4000, 1300)
    x = rng.standard_normal((n, 16), dtype=np.float32)
    index = faiss_ext.GpuIndexIVFFlat(res, 16, 32)
    assert index.verbose is False
    index.train(x)
    index.add(x)
    assert capfd.readouterr().out == ""

    index.reset()
    index.verbose = True
    index.train(x)
    train = lines(capfd.readouterr().out)
    assert [c for c, _, _, _ in train] == ["GpuIndexIVFFlat::train"] * len(train)
    assert [p for _, p, _, _ in train[:2]] == ["k-means iteration 1/10", "k-means iteration 2/10"]
    assert train[-1][1:3] == ("centroids stored", 100.0)
    fractions = [f for _, _, f, _ in train]
    times = [t for _, _, _, t in train]
    assert fractions == sorted(fractions) and times == sorted(times)

    index.add(x)
    add = lines(capfd.readouterr().out)
    assert add[0][:3] == ("GpuIndexIVFFlat::add", "assigned to lists", 30.0)
    assert add[-1][1:3] == (f"vectors stored {n}/{n}", 100.0)


def test_bang_build_reports_its_stages(res, rng, capfd):
    x = rng.standard_normal((small_under_sanitizer(2000, 200), 8), dtype=np.float32)
    index = faiss_ext.GpuIndexBang(res, 8, 16, build_passes=1)
    index.verbose = True
    index.add(x)
    out = lines(capfd.readouterr().out)
    phases = [p for _, p, _, _ in out]
    # The four stages in order, each after its own steps.
    assert [p for p in phases if p.startswith("graph: ")] == [
        "graph: exact k-NN candidates, stage 1/4", "graph: first prune, stage 2/4",
        "graph: pass 1 searches, stage 3/4", "graph: pass 1 prune, stage 4/4"]
    assert phases[:5] == ["candidates: exact nearest neighbours",
                          "candidates: each vector's nearest hubs",
                          "candidates: the hubs' nearest hubs", "candidates: lists filled",
                          "graph: exact k-NN candidates, stage 1/4"]
    assert phases.count("prune: out and reverse edges pruned") == 2
    assert "searches: vectors searched" in phases
    fractions = [f for _, _, f, _ in out]
    assert fractions == sorted(fractions) and out[-1][2] == 100.0

    # A second add extends the graph and says so (with the default two passes too).
    extra = small_under_sanitizer(100, 40)
    index.add(x[:extra])
    out = lines(capfd.readouterr().out)
    assert any(p.startswith("extension: ") for _, p, _, _ in out)
    assert [f for _, _, f, _ in out] == sorted(f for _, _, f, _ in out)
    index = faiss_ext.GpuIndexBang(res, 8, 16)
    index.add(x)
    index.verbose = True
    index.add(x[:extra])
    out = lines(capfd.readouterr().out)
    assert any(p.startswith("extension: ") for _, p, _, _ in out)
    assert [f for _, _, f, _ in out] == sorted(f for _, _, f, _ in out)
