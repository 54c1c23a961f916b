"""Filtered search, range_search and remove_ids from Python on a CUDA device, against
numpy brute force and, where the `faiss` module is importable, with its selectors."""

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu


def exact(xb, xq, k, allowed):
    """k nearest (squared L2) among the allowed ids, float64; -1 / inf padding."""
    d = ((xq[:, None, :].astype(np.float64) - xb[None].astype(np.float64)) ** 2).sum(-1)
    d[:, ~allowed] = np.inf
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    dist = np.take_along_axis(d, order, 1)
    order[np.isinf(dist)] = -1
    return dist, order


def check(D, I, refD, refI):
    np.testing.assert_allclose(D[np.isfinite(refD)], refD[np.isfinite(refD)], rtol=1e-4, atol=1e-4)
    assert ((I == -1) == (refI == -1)).all()


@pytest.fixture
def data(rng):
    # Under compute-sanitizer 320 vectors (IDSelectorRange(100, 400) still selects 220 of
    # them; 40 a list for the IVF index's 8) and 10 queries: two graph builds here.
    xb = rng.standard_normal((small_under_sanitizer(2000, 320), 16)).astype(np.float32)
    xq = rng.standard_normal((small_under_sanitizer(20, 10), 16)).astype(np.float32)
    return xb, xq


def selectors(n, rng):
    ids = np.flatnonzero(rng.random(n) < 0.3)
    bits = np.zeros((n + 7) // 8, dtype=np.uint8)
    for i in ids:
        bits[i // 8] |= 1 << (i % 8)
    yield faiss_ext.IDSelectorRange(100, 400), None
    yield faiss_ext.IDSelectorBatch(ids), None
    yield faiss_ext.IDSelectorBitmap(bits), None
    yield faiss_ext.IDSelectorBatch(ids[:3]), None


def test_flat_filtered_search(res, data, rng):
    xb, xq = data
    index = faiss_ext.GpuIndexFlat(res, xb.shape[1])
    index.add(xb)
    for sel, _ in selectors(len(xb), rng):
        allowed = np.array([sel.is_member(i) for i in range(len(xb))])
        D, I = index.search(xq, 10, params=faiss_ext.SearchParameters(sel=sel))
        check(D, I, *exact(xb, xq, 10, allowed))


def test_ivf_and_bang_filtered_search(res, data, rng):
    xb, xq = data
    ivf = faiss_ext.GpuIndexIVFFlat(res, xb.shape[1], 8)
    ivf.train(xb)
    ivf.add(xb)
    bang = faiss_ext.GpuIndexBang(res, xb.shape[1])
    bang.add(xb)
    for sel, _ in selectors(len(xb), rng):
        allowed = np.array([sel.is_member(i) for i in range(len(xb))])
        refD, refI = exact(xb, xq, 10, allowed)
        D, I = ivf.search(xq, 10, params=faiss_ext.SearchParametersIVF(nprobe=8, sel=sel))
        check(D, I, refD, refI)  # nprobe = nlist: exact
        D, I = bang.search(xq, 10, params=faiss_ext.SearchParametersBang(search_L=64, sel=sel))
        assert all(i == -1 or allowed[i] for i in I.ravel())
        hits = sum(len(set(a) & set(b) - {-1}) for a, b in zip(I, refI))
        assert hits >= 0.9 * max(1, (refI != -1).sum())


def test_range_search_and_remove_ids(res, data):
    xb, xq = data
    index = faiss_ext.GpuIndexFlat(res, xb.shape[1])
    index.add(xb)
    d = ((xq[:, None, :].astype(np.float64) - xb[None]) ** 2).sum(-1)
    radius = float(np.median(np.sort(d, axis=1)[:, 20]))
    lims, D, I = index.range_search(xq, radius)
    assert lims.shape == (len(xq) + 1,) and lims[-1] == len(D) == len(I)
    for q in range(len(xq)):
        want = np.flatnonzero(d[q] < radius)
        got = np.sort(I[lims[q]:lims[q + 1]])
        close = np.abs(d[q] - radius) <= 1e-4 * radius
        assert set(got) ^ set(want) <= set(np.flatnonzero(close))
    assert index.remove_ids(np.arange(0, len(xb), 2)) == len(xb) // 2
    assert index.ntotal == len(xb) - len(xb) // 2
    np.testing.assert_array_equal(index.reconstruct(0), xb[1])
    bang = faiss_ext.GpuIndexBang(res, xb.shape[1])
    bang.add(xb)
    assert bang.remove_ids(faiss_ext.IDSelectorRange(0, 100)) == 100
    _, I = bang.search(xq, 5)
    assert (I >= 100).all()
    with pytest.raises(RuntimeError):
        bang.range_search(xq, radius)


def test_faiss_module_selectors(res, data, rng):
    faiss = pytest.importorskip("faiss")
    xb, xq = data
    index = faiss_ext.GpuIndexFlat(res, xb.shape[1])
    index.add(xb)
    ids = np.flatnonzero(rng.random(len(xb)) < 0.2).astype(np.int64)
    allowed = np.isin(np.arange(len(xb)), ids)
    batch = faiss.IDSelectorBatch(len(ids), faiss.swig_ptr(ids))
    for sel, mask in [(batch, allowed),
                      (faiss.IDSelectorRange(10, 500), (np.arange(len(xb)) >= 10) & (np.arange(len(xb)) < 500)),
                      (faiss.IDSelectorNot(batch), ~allowed)]:
        params = faiss.SearchParameters()
        params.sel = sel
        D, I = index.search(xq, 10, params=params)
        check(D, I, *exact(xb, xq, 10, mask))
