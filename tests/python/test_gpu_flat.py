"""GpuIndexFlat from Python on a CUDA device: results against numpy brute force,
argument handling, errors, lifetime and threads."""

import gc
import threading

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu


def brute_force(xb, xq, k, metric):
    """Exact (distances, ids) in float64: squared L2 ascending or inner product
    descending."""
    xb64, xq64 = xb.astype(np.float64), xq.astype(np.float64)
    if metric == faiss_ext.METRIC_L2:
        dist = (xq64 ** 2).sum(1)[:, None] - 2 * xq64 @ xb64.T + (xb64 ** 2).sum(1)[None]
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    else:
        dist = xq64 @ xb64.T
        order = np.argsort(-dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, order, 1), order, dist


def check_results(D, I, xb, xq, k, metric):
    """Same k-NN as brute force up to ties: each returned distance matches the true
    one of its id, the distances equal the exact k best, and ids are distinct."""
    ref_d, _, dist = brute_force(xb, xq, k, metric)
    assert D.shape == I.shape == (len(xq), k)
    assert D.dtype == np.float32 and I.dtype == np.int64
    kk = min(k, len(xb))
    assert np.all((I[:, :kk] >= 0) & (I[:, :kk] < len(xb)))
    scale = 1e-4 * (1 + np.abs(ref_d[:, :kk]).max())
    np.testing.assert_allclose(D[:, :kk], ref_d[:, :kk], atol=scale, rtol=1e-4)
    np.testing.assert_allclose(np.take_along_axis(dist, I[:, :kk], 1), D[:, :kk], atol=scale, rtol=1e-4)
    for row in I[:, :kk]:
        assert len(np.unique(row)) == kk


@pytest.mark.parametrize("metric", [faiss_ext.METRIC_L2, faiss_ext.METRIC_INNER_PRODUCT])
def test_search_matches_numpy(res, rng, metric):
    d = int(rng.integers(1, 130))
    nb = int(rng.integers(1, small_under_sanitizer(5000, 1000)))
    nq = int(rng.integers(1, small_under_sanitizer(300, 50)))
    k = int(rng.choice([1, 5, 32, 100, 1000]))
    print(f"d={d} nb={nb} nq={nq} k={k} metric={metric}")
    xb = rng.standard_normal((nb, d), dtype=np.float32)
    xq = rng.standard_normal((nq, d), dtype=np.float32)
    index = faiss_ext.GpuIndexFlat(res, d, metric)
    assert (index.d, index.ntotal, index.metric_type, index.is_trained) == (d, 0, metric, True)
    index.add(xb[: nb // 2])
    index.add(xb[nb // 2:])
    assert index.ntotal == nb
    D, I = index.search(xq, k)
    check_results(D, I, xb, xq, k, metric)
    if k > nb:
        assert np.all(I[:, nb:] == -1)
        missing = np.inf if metric == faiss_ext.METRIC_L2 else -np.inf
        assert np.all(D[:, nb:] == missing)


def test_inputs_are_converted(res, rng):
    d = 24
    xb = rng.standard_normal((700, d))  # float64
    xq = rng.standard_normal((50, 2 * d), dtype=np.float32)[:, ::2]  # strided
    index = faiss_ext.GpuIndexFlat(res, d)
    index.add(xb)
    D, I = index.search(xq, 10)
    check_results(D, I, xb.astype(np.float32), np.ascontiguousarray(xq), 10, faiss_ext.METRIC_L2)
    D2, I2 = index.search(np.asfortranarray(xq).astype(np.float64), 10)
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)


def test_search_parameters_and_empty_batches(res, rng):
    index = faiss_ext.GpuIndexFlat(res, 8, faiss_ext.METRIC_INNER_PRODUCT)
    x = rng.standard_normal((100, 8), dtype=np.float32)
    index.add(np.zeros((0, 8), np.float32))
    assert index.ntotal == 0
    index.add(x)
    D, I = index.search(x[:5], 3)
    D2, I2 = index.search(x[:5], 3, params=faiss_ext.SearchParameters())
    np.testing.assert_array_equal(I, I2)
    with pytest.raises(TypeError):
        index.search(x[:5], 3, params=3)
    D0, I0 = index.search(np.zeros((0, 8), np.float32), 4)
    assert D0.shape == I0.shape == (0, 4)


def test_reconstruct_reset_memory(res, rng):
    d = 16
    x = rng.standard_normal((300, d), dtype=np.float32)
    index = faiss_ext.GpuIndexFlat(res, d)
    empty_bytes = index.device_memory_bytes()
    index.add(x)
    assert index.device_memory_bytes() >= empty_bytes + x.nbytes
    np.testing.assert_array_equal(index.reconstruct(7), x[7])
    np.testing.assert_array_equal(index.reconstruct_n(10, 50), x[10:60])
    assert index.reconstruct_n(3, 0).shape == (0, d)
    with pytest.raises(faiss_ext.FaissException, match=r"keys \[300, 301\) are outside \[0, 300\)"):
        index.reconstruct(300)
    with pytest.raises(faiss_ext.FaissException, match="outside"):
        index.reconstruct_n(290, 20)
    index.reset()
    assert index.ntotal == 0
    D, I = index.search(x[:2], 4)
    assert np.all(I == -1) and np.all(D == np.inf)


def test_errors_reach_python(res, rng):
    index = faiss_ext.GpuIndexFlat(res, 4)
    x = rng.standard_normal((10, 4), dtype=np.float32)
    index.add(x)
    with pytest.raises(faiss_ext.FaissException, match="add_with_ids is not supported"):
        index.add_with_ids(x, np.arange(10))
    bad = x.copy()
    bad[3, 2] = np.nan
    with pytest.raises(faiss_ext.FaissException, match="add: vector 3 has a NaN or infinite"):
        index.add(bad)
    assert index.ntotal == 10
    with pytest.raises(ValueError, match="vectors have dimension 5 but the index has d=4"):
        index.add(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="reshape"):
        index.search(x[0], 1)
    with pytest.raises(ValueError, match=r"k=2049 is outside \[1, 2048\]"):
        index.search(x, 2049)
    with pytest.raises(TypeError, match="got dtype complex128"):
        index.search(x.astype(np.complex128), 1)
    with pytest.raises(faiss_ext.FaissException, match="dimension d=0 must be > 0"):
        faiss_ext.GpuIndexFlat(res, 0)
    with pytest.raises(ValueError, match="metric 2 is not supported"):
        faiss_ext.GpuIndexFlat(res, 4, 2)
    with pytest.raises(faiss_ext.FaissException, match="pageBytes"):
        faiss_ext.GpuIndexFlat(res, 4, page_bytes=1024)


def test_index_keeps_its_resources_alive(rng):
    res = faiss_ext.GpuResources()
    index = faiss_ext.GpuIndexFlat(res, 8)
    assert index.resources is res
    del res
    gc.collect()
    x = rng.standard_normal((64, 8), dtype=np.float32)
    index.add(x)
    _, I = index.search(x, 1)
    np.testing.assert_array_equal(I[:, 0], np.arange(64))


def test_threads_share_resources(res, rng):
    d = 32
    xb = rng.standard_normal((small_under_sanitizer(20000, 2000), d), dtype=np.float32)
    xq = rng.standard_normal((small_under_sanitizer(500, 100), d), dtype=np.float32)
    indexes = [faiss_ext.GpuIndexFlat(res, d) for _ in range(2)]
    for index in indexes:
        index.add(xb)
    expected = indexes[0].search(xq, 20)
    results, errors = [], []

    def work(index):
        try:
            for _ in range(5):
                results.append(index.search(xq, 20))
        except Exception as e:  # reported below; a thread cannot fail the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(indexes[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 20

    def canonical(D, I):
        # Equal distances may come in either id order (the library's contract: ids equal
        # except ties); seed 950185368 gives one exact float32 tie whose order differs
        # between these searches and the serial one (benchs/NOTES.md).
        order = np.lexsort((I, D), axis=-1)
        return np.take_along_axis(D, order, -1), np.take_along_axis(I, order, -1)

    want = canonical(*expected)
    for D, I in results:
        np.testing.assert_array_equal(D, expected[0])
        got = canonical(D, I)
        np.testing.assert_array_equal(got[1], want[1])


def test_search_releases_the_gil(res, rng):
    """While one thread searches, another runs Python code: the longest pause the
    main thread sees stays far below the search time (it would equal it if the
    search held the GIL). The batch doubles until a search takes 0.2 s: under
    compute-sanitizer far fewer vectors and queries take that long."""
    import time
    d = 64
    index = faiss_ext.GpuIndexFlat(res, d)
    index.add(rng.standard_normal((small_under_sanitizer(200_000, 20_000), d), dtype=np.float32))
    xq = rng.standard_normal((small_under_sanitizer(2_000, 200), d), dtype=np.float32)
    while True:
        t0 = time.perf_counter()
        index.search(xq, 100)
        search_s = time.perf_counter() - t0
        if search_s >= 0.2 or len(xq) >= 256_000:
            break
        xq = np.concatenate([xq, xq])
    print(f"nq={len(xq)}: search {search_s:.3f} s")
    assert search_s >= 0.1

    done = threading.Event()
    worker = threading.Thread(target=lambda: (index.search(xq, 100), done.set()))
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    print(f"longest pause of the main thread: {longest:.4f} s")
    assert longest < search_s / 4


def test_repr(res):
    index = faiss_ext.GpuIndexFlat(res, 8, faiss_ext.METRIC_INNER_PRODUCT)
    assert repr(index) == "<faiss_ext.GpuIndexFlat d=8 ntotal=0 metric=INNER_PRODUCT>"
    assert repr(res).startswith("<faiss_ext.GpuResources device=0")


def test_precisions_give_the_same_results(res, rng):
    d, nb, nq, k = 64, small_under_sanitizer(4000, 1000), small_under_sanitizer(200, 50), 3
    xb = rng.random((nb, d), dtype=np.float32)
    xq = rng.random((nq, d), dtype=np.float32)
    results = []
    for precision in ("auto", "fp32", "tf32x3"):
        index = faiss_ext.GpuIndexFlat(res, d, precision=precision)
        index.add(xb)
        results.append(index.search(xq, k))
    for D, I in results[1:]:
        check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)
        np.testing.assert_allclose(D, results[0][0], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="precision must be"):
        faiss_ext.GpuIndexFlat(res, d, precision="fp16")


def test_plain_products_match_numpy(rng):
    res = faiss_ext.GpuResources(plain_products=True)
    assert res.plain_products
    d, nb, nq, k = 40, 3000, 50, 10
    xb = rng.standard_normal((nb, d), dtype=np.float32)
    xq = rng.standard_normal((nq, d), dtype=np.float32)
    for precision in ("fp32", "tf32x3"):
        index = faiss_ext.GpuIndexFlat(res, d, precision=precision)
        index.add(xb)
        D, I = index.search(xq, k)
        check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)


def test_one_query_searches_replay_cuda_graphs(res, rng):
    # One query against a base large enough for the radix path (65536 vectors or more):
    # direct, captured, then replayed, each with a query of its own.
    d, k, nb = 8, 10, 70000
    xb = rng.random((nb, d), dtype=np.float32)
    index = faiss_ext.GpuIndexFlat(res, d)
    index.add(xb)
    assert index.use_search_graphs and index.search_graph_count == 0
    for _ in range(3):
        xq = rng.random((1, d), dtype=np.float32)
        D, I = index.search(xq, k)
        check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)
    assert index.search_graph_count == 1
    # New contents drop the graph; the next searches see the new vectors.
    more = rng.random((100, d), dtype=np.float32)
    index.add(more)
    assert index.search_graph_count == 0
    xb = np.vstack([xb, more])
    index.use_search_graphs = False
    for _ in range(3):
        xq = rng.random((1, d), dtype=np.float32)
        D, I = index.search(xq, k)
        check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)
    assert index.search_graph_count == 0


def test_copies_give_exact_results_and_are_saved(res, rng):
    # One query against a base large enough for the radix path reads the float16 or int8
    # copy (direct, captured, replayed); the results are the exact ones, in both metrics.
    # The copy costs device memory and survives a save and load; both at once are refused.
    d, k, nb = 20, 10, 70000
    xb = rng.standard_normal((nb, d), dtype=np.float32)
    with pytest.raises(faiss_ext.FaissException, match="exclusive"):
        faiss_ext.GpuIndexFlat(res, d, float16_copy=True, int8_copy=True)
    for copy in ("float16_copy", "int8_copy"):
        for metric in (faiss_ext.METRIC_L2, faiss_ext.METRIC_INNER_PRODUCT):
            plain = faiss_ext.GpuIndexFlat(res, d, metric)
            index = faiss_ext.GpuIndexFlat(res, d, metric, **{copy: True})
            assert getattr(index, copy) and not plain.float16_copy and not plain.int8_copy
            plain.add(xb)
            index.add(xb)
            assert index.device_memory_bytes() > plain.device_memory_bytes()
            for _ in range(3):
                xq = rng.standard_normal((1, d), dtype=np.float32)
                D, I = index.search(xq, k)
                check_results(D, I, xb, xq, k, metric)
            assert index.search_graph_count == 1
            back = faiss_ext.deserialize_index(faiss_ext.serialize_index(index), res)
            assert getattr(back, copy)
            xq = rng.standard_normal((1, d), dtype=np.float32)
            D, I = back.search(xq, k)
            check_results(D, I, xb, xq, k, metric)
