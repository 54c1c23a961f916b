"""GpuIndexIVFFlat from Python, faiss interop of IVF indexes, and faiss_ext's own
index files (write_index / read_index)."""

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer
from test_gpu_flat import check_results

pytestmark = pytest.mark.gpu


def clustered(rng, n, d, centres):
    return (centres[rng.integers(0, len(centres), n)]
            + 0.05 * rng.standard_normal((n, d), dtype=np.float32)).astype(np.float32)


@pytest.mark.parametrize("metric", [faiss_ext.METRIC_L2, faiss_ext.METRIC_INNER_PRODUCT])
def test_all_lists_probed_is_exact(res, rng, metric):
    # Under compute-sanitizer 10 to 20 vectors a list (2 to 39 lists), 20 queries.
    d, nlist = int(rng.integers(4, 70)), int(rng.integers(2, 40))
    low, high = small_under_sanitizer((nlist * 40, 6000), (nlist * 10, nlist * 20))
    nb = int(rng.integers(low, high))
    nq, k = small_under_sanitizer(100, 20), int(rng.choice([1, 10, 100]))
    print(f"d={d} nlist={nlist} nb={nb} k={k} metric={metric}")
    centres = rng.random((nlist, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    index = faiss_ext.GpuIndexIVFFlat(res, d, nlist, metric)
    assert not index.is_trained and index.nlist == nlist
    with pytest.raises(faiss_ext.FaissException, match="not trained"):
        index.add(xb)
    index.train(xb)
    assert index.is_trained
    index.add(xb)
    assert index.ntotal == nb
    assert sum(index.list_length(i) for i in range(nlist)) == nb
    index.nprobe = nlist
    D, I = index.search(xq, k)
    check_results(D, I, xb, xq, k, metric)
    index.nprobe = 1
    D2, I2 = index.search(xq, k, params=faiss_ext.SearchParametersIVF(nprobe=nlist))
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)
    assert index.nprobe == 1


def test_add_with_ids_and_reconstruct(res, rng):
    d, nlist, n = 16, 8, small_under_sanitizer(1000, 400)
    x = rng.random((n, d), dtype=np.float32)
    ids = rng.permutation(10**6)[:n].astype(np.int64)
    index = faiss_ext.GpuIndexIVFFlat(res, d, nlist)
    index.train(x)
    index.add_with_ids(x, ids.astype(np.int32))
    index.nprobe = nlist
    _, I = index.search(x[:50], 1)
    np.testing.assert_array_equal(I[:, 0], ids[:50])
    np.testing.assert_array_equal(index.reconstruct(int(ids[3])), x[3])
    with pytest.raises(ValueError, match=rf"expected {n} ids"):
        index.add_with_ids(x, ids[:10])


def test_faiss_ivf_index_in_and_out(res, rng):
    faiss = pytest.importorskip("faiss")
    # 500 queries whatever the base (the share of equal ids below counts 5000 of them).
    d, nlist, nb, nq, k = 32, 64, small_under_sanitizer(20000, 2600), 500, 10
    centres = rng.random((200, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    cpu = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist)
    cpu.train(xb)
    cpu.add(xb)
    gpu = faiss_ext.index_from_faiss_bytes(res, faiss.serialize_index(cpu))
    assert isinstance(gpu, faiss_ext.GpuIndexIVFFlat)
    assert (gpu.ntotal, gpu.nlist) == (nb, nlist)
    for nprobe in (1, 8, nlist):
        cpu.nprobe = nprobe
        ref_d, ref_i = cpu.search(xq, k)
        D, I = gpu.search(xq, k, params=faiss_ext.SearchParametersIVF(nprobe=nprobe))
        np.testing.assert_allclose(D, ref_d, rtol=1e-4, atol=1e-4)
        assert (I == ref_i).mean() > 0.999, f"nprobe={nprobe}"
    back = faiss.deserialize_index(faiss_ext.index_to_faiss_bytes(gpu))
    assert back.ntotal == nb and back.nlist == nlist
    back.nprobe = 8
    cpu.nprobe = 8
    np.testing.assert_array_equal(back.search(xq, k)[1], cpu.search(xq, k)[1])


def test_ivf_bytes_round_trip_without_faiss_module(res, rng):
    d, nlist = 8, 4
    x = rng.random((400, d), dtype=np.float32)
    index = faiss_ext.GpuIndexIVFFlat(res, d, nlist)
    index.train(x)
    index.add(x)
    index.nprobe = 2
    data = faiss_ext.index_to_faiss_bytes(index)
    info = faiss_ext.faiss_bytes_info(data)
    assert info["faiss_class"] == "faiss::IndexIVFFlat"
    assert (info["d"], info["ntotal"], info["faiss_ext_class"]) == (d, 400, "GpuIndexIVFFlat")
    copy = faiss_ext.index_from_faiss_bytes(res, data)
    params = faiss_ext.SearchParametersIVF(nprobe=2)
    for a, b in zip(copy.search(x[:20], 5, params), index.search(x[:20], 5, params)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_write_and_read_index(res, rng, tmp_path, kind):
    d = 12
    x = rng.random((500, d), dtype=np.float32)
    if kind == "flat":
        index = faiss_ext.GpuIndexFlat(res, d, faiss_ext.METRIC_INNER_PRODUCT)
    else:
        index = faiss_ext.GpuIndexIVFFlat(res, d, 5)
        index.train(x)
        index.nprobe = 3
    index.add(x)
    expected = index.search(x[:30], 7)
    path = str(tmp_path / "index.bin")
    faiss_ext.write_index(index, path)
    for loaded in (faiss_ext.read_index(path, res),
                   faiss_ext.deserialize_index(faiss_ext.serialize_index(index), res)):
        assert type(loaded) is type(index)
        assert (loaded.d, loaded.ntotal, loaded.metric_type) == (d, 500, index.metric_type)
        for a, b in zip(loaded.search(x[:30], 7), expected):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.deserialize_index(b"not an index", res)


def test_scan_paths_are_exact_with_every_list_probed(res, rng):
    d, nlist, k = 32, 16, 10
    nb, nq = small_under_sanitizer(5000, 640), small_under_sanitizer(400, 40)
    centres = rng.random((nlist, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    for path in ("per_query", "list_major", "list_major_keys", "auto"):
        index = faiss_ext.GpuIndexIVFFlat(res, d, nlist, scan_path=path)
        index.train(xb)
        index.add(xb)
        index.nprobe = nlist
        D, I = index.search(xq, k)
        check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)
    with pytest.raises(ValueError, match="scan_path must be"):
        faiss_ext.GpuIndexIVFFlat(res, d, nlist, scan_path="rows")


def test_coarse_precisions_agree(res, rng):
    # Under compute-sanitizer the fewest queries "auto" takes 3xTF32 for.
    d, nlist, k = 48, 64, 10
    nb, nq = small_under_sanitizer(20000, 2600), small_under_sanitizer(2048, 1024)
    centres = rng.random((nlist, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    index = faiss_ext.GpuIndexIVFFlat(res, d, nlist)
    index.train(xb)
    index.add(xb)
    index.nprobe = 4
    assert index.coarse_precision == "auto"
    results = {}
    for name in ("fp32", "tf32x3", "auto"):
        index.coarse_precision = name
        assert index.coarse_precision == name
        results[name] = index.search(xq, k)
    # Only a centroid tied to 3xTF32's rounding could be probed in another's place.
    for name in ("tf32x3", "auto"):
        same = (results[name][1] == results["fp32"][1]).all(axis=1)
        assert same.mean() > 0.99, name
    with pytest.raises(ValueError, match="precision must be"):
        index.coarse_precision = "fp16"


def test_small_searches_replay_cuda_graphs(res, rng):
    d, nlist, k = 12, 16, 7
    centres = rng.random((nlist, d), dtype=np.float32)
    xb = clustered(rng, small_under_sanitizer(4000, 1000), d, centres)
    index = faiss_ext.GpuIndexIVFFlat(res, d, nlist)
    index.train(xb)
    index.add(xb)
    index.nprobe = nlist
    assert index.use_search_graphs and index.search_graph_count == 0
    xq = clustered(rng, 5, d, centres)
    D, I = index.search(xq, k)  # direct
    check_results(D, I, xb, xq, k, faiss_ext.METRIC_L2)
    for _ in range(2):  # captured, then replayed
        D2, I2 = index.search(xq, k)
        np.testing.assert_array_equal(I2, I)
        np.testing.assert_array_equal(D2, D)
    assert index.search_graph_count == 1
    index.use_search_graphs = False
    for _ in range(2):
        D3, I3 = index.search(xq[:3], k)
        np.testing.assert_array_equal(I3, I[:3])
    assert index.search_graph_count == 1
