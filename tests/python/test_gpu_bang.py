"""GpuIndexBang from Python: build, search with search_L (attribute and per-call
parameters), the graph, save / load."""

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu


def clustered(rng, n, d, centres):
    return (centres[rng.integers(0, len(centres), n)]
            + 0.05 * rng.standard_normal((n, d), dtype=np.float32)).astype(np.float32)


def recall_at_10(I, gt):
    return np.mean([len(set(I[i]) & set(gt[i])) / 10 for i in range(len(gt))])


def test_build_search_and_params(res, rng):
    d, nb, nq = 24, small_under_sanitizer(8000, 300), small_under_sanitizer(200, 50)
    centres = rng.random((30, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    flat = faiss_ext.GpuIndexFlat(res, d)
    flat.add(xb)
    _, gt = flat.search(xq, 10)

    index = faiss_ext.GpuIndexBang(res, d, R=32)
    assert index.is_trained and index.R == 32 and index.search_L == 64
    index.add(xb)
    assert index.ntotal == nb
    g = index.graph()
    assert g.shape == (nb, 32) and g.dtype == np.int32
    assert ((g >= -1) & (g < nb)).all()
    assert 0 <= index.entry_point < nb

    D, I = index.search(xq, 10)
    assert np.all(np.diff(D, axis=1) >= 0)
    r64 = recall_at_10(I, gt)
    print(f"recall@10 at L=64: {r64:.3f}")
    assert r64 >= 0.95

    # First candidates from IVF lists (forced at this size): the same recall.
    lists = small_under_sanitizer(90, 17)
    ivf_built = faiss_ext.GpuIndexBang(res, d, R=32, build_lists=lists, build_probes=8)
    ivf_built.add(xb)
    r_ivf = recall_at_10(ivf_built.search(xq, 10)[1], gt)
    print(f"recall@10 at L=64, IVF candidates: {r_ivf:.3f}")
    assert r_ivf >= r64 - 0.01
    with pytest.raises(faiss_ext.FaissException, match="candidateProbes=0"):
        faiss_ext.GpuIndexBang(res, d, build_probes=0)

    index.search_L = 10
    D10, I10 = index.search(xq, 10)
    D2, I2 = index.search(xq, 10, params=faiss_ext.SearchParametersBang(search_L=64))
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)
    assert index.search_L == 10
    # k above search_L raises L to k.
    _, Ik = index.search(xq, 20)
    _, Ik2 = index.search(xq, 20, params=faiss_ext.SearchParametersBang(search_L=20))
    np.testing.assert_array_equal(Ik, Ik2)
    with pytest.raises(faiss_ext.FaissException, match="search_L=2000"):
        index.search(xq, 10, params=faiss_ext.SearchParametersBang(search_L=2000))
    # Walks start at each query's nearest hub by default; from the medoid on these blobs
    # about as good.
    assert faiss_ext.SearchParametersBang().entry == "nearest_hub"
    hub = faiss_ext.SearchParametersBang(search_L=64, entry="nearest_hub")
    np.testing.assert_array_equal(index.search(xq, 10, params=hub)[1], I2)
    medoid = faiss_ext.SearchParametersBang(search_L=64, entry="medoid")
    assert medoid.entry == "medoid"
    r_medoid = recall_at_10(index.search(xq, 10, params=medoid)[1], gt)
    print(f"recall@10 at L=64 from the medoid: {r_medoid:.3f}")
    assert r_medoid >= min(r64, 0.95) - 0.02
    with pytest.raises(ValueError, match="nearest_hub"):
        faiss_ext.SearchParametersBang(entry="random")

    np.testing.assert_array_equal(index.reconstruct(5), xb[5])
    index.reset()
    assert index.ntotal == 0
    _, I = index.search(xq[:3], 4)
    assert (I == -1).all()


def test_save_load_and_errors(res, rng, tmp_path):
    d, nb = 16, small_under_sanitizer(3000, 200)
    xb = rng.random((nb, d), dtype=np.float32)
    xq = rng.random((small_under_sanitizer(50, 20), d), dtype=np.float32)
    a = faiss_ext.GpuIndexBang(res, d, R=24, search_L=40)
    a.add(xb)
    _, Ia = a.search(xq, 10)

    path = str(tmp_path / "bang.fx")
    faiss_ext.write_index(a, path)
    loaded = faiss_ext.read_index(path, res)
    assert isinstance(loaded, faiss_ext.GpuIndexBang)
    assert loaded.search_L == 40 and loaded.ntotal == nb
    np.testing.assert_array_equal(loaded.graph(), a.graph())
    D, I = loaded.search(xq, 10)
    np.testing.assert_array_equal(I, Ia)

    with pytest.raises(faiss_ext.FaissException, match="graphDegree=0"):
        faiss_ext.GpuIndexBang(res, d, R=0)
    with pytest.raises(faiss_ext.FaissException, match="add"):
        bad = xb[:10].copy()
        bad[3, 2] = np.nan
        a.add(bad)
    assert a.ntotal == nb


def test_pq_mode(res, rng, tmp_path):
    # Under compute-sanitizer M = 2: each codebook is 25 k-means iterations.
    d, nb, nq = 24, small_under_sanitizer(6000, 300), small_under_sanitizer(100, 20)
    M = small_under_sanitizer(6, 2)
    centres = rng.random((300, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    flat = faiss_ext.GpuIndexFlat(res, d)
    flat.add(xb)
    _, gt = flat.search(xq, 10)

    index = faiss_ext.GpuIndexBang(res, d, R=32, pq_subquantizers=M, search_L=100)
    assert index.pq_subquantizers == M
    assert faiss_ext.GpuIndexBang(res, d).pq_subquantizers == 0
    index.add(xb)
    D, I = index.search(xq, 10)
    # Distances are exact after the re-rank.
    exact = ((xb[I] - xq[:, None, :]) ** 2).sum(-1)
    np.testing.assert_allclose(D, exact, rtol=1e-4, atol=1e-5)
    r = recall_at_10(I, gt)
    print(f"PQ mode recall@10 at L=100: {r:.3f}")
    assert r >= 0.8

    path = str(tmp_path / "bang_pq.fx")
    faiss_ext.write_index(index, path)
    loaded = faiss_ext.read_index(path, res)
    assert loaded.pq_subquantizers == M
    D2, I2 = loaded.search(xq, 10)
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)

    with pytest.raises(faiss_ext.FaissException, match="pqSubquantizers=5"):
        faiss_ext.GpuIndexBang(res, d, pq_subquantizers=5)
    with pytest.raises(faiss_ext.FaissException, match="256"):
        faiss_ext.GpuIndexBang(res, d, pq_subquantizers=6).add(xb[:100])


def test_pq_mode_with_the_vectors_in_host_memory(res, rng, tmp_path):
    d, nb, nq = 24, small_under_sanitizer(4000, 300), small_under_sanitizer(100, 20)
    M = small_under_sanitizer(6, 1)
    centres = rng.random((200, d), dtype=np.float32)
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    device = faiss_ext.GpuIndexBang(res, d, R=32, pq_subquantizers=M, search_L=64)
    host = faiss_ext.GpuIndexBang(res, d, R=32, pq_subquantizers=M, search_L=64,
                                  vector_placement="host")
    assert device.vector_placement == "device" and host.vector_placement == "host"
    device.add(xb)
    host.add(xb)
    assert host.host_memory_bytes() == nb * d * 4
    assert device.host_memory_bytes() == 0
    assert device.device_memory_bytes() >= host.device_memory_bytes() + nb * d * 4
    D, I = device.search(xq, 10)
    Dh, Ih = host.search(xq, 10)
    np.testing.assert_array_equal(Ih, I)
    np.testing.assert_array_equal(Dh, D)
    np.testing.assert_array_equal(host.reconstruct_n(0, nb), xb)

    path = str(tmp_path / "bang_host.fx")
    faiss_ext.write_index(host, path)
    loaded = faiss_ext.read_index(path, res)
    assert loaded.vector_placement == "host"
    assert loaded.host_memory_bytes() == nb * d * 4
    D2, I2 = loaded.search(xq, 10)
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)

    # The estimate names what the built index holds.
    est = host.estimate_memory(nb)
    assert est["device_bytes"] == host.device_memory_bytes()
    assert est["host_bytes"] == host.host_memory_bytes()
    assert est["build_device_bytes"] > est["device_bytes"]
    assert device.estimate_memory(nb)["device_bytes"] == device.device_memory_bytes()
    with pytest.raises(faiss_ext.FaissException, match="n=0"):
        host.estimate_memory(0)

    with pytest.raises(faiss_ext.FaissException, match="vectorPlacement"):
        faiss_ext.GpuIndexBang(res, d, vector_placement="host")
    with pytest.raises(ValueError, match="vector_placement"):
        faiss_ext.GpuIndexBang(res, d, pq_subquantizers=M, vector_placement="disk")


def test_byte_valued_vectors_are_stored_as_bytes(res, rng, tmp_path):
    d, nb, nq = 32, small_under_sanitizer(4000, 300), small_under_sanitizer(100, 20)
    centres = rng.random((50, d), dtype=np.float32)
    xb = np.round(clustered(rng, nb, d, centres) * 200).clip(0, 255).astype(np.float32)
    xq = clustered(rng, nq, d, centres) * 200
    auto = faiss_ext.GpuIndexBang(res, d, R=32, search_L=64)
    floats = faiss_ext.GpuIndexBang(res, d, R=32, search_L=64, vector_storage="float")
    assert auto.vector_storage == "auto" and floats.vector_storage == "float"
    auto.add(xb)
    floats.add(xb)
    assert auto.stores_bytes and not floats.stores_bytes
    assert floats.device_memory_bytes() - auto.device_memory_bytes() == nb * d * 3
    D, I = auto.search(xq, 10)
    Df, If = floats.search(xq, 10)
    np.testing.assert_array_equal(I, If)
    np.testing.assert_array_equal(D, Df)
    np.testing.assert_array_equal(auto.reconstruct_n(0, nb), xb)

    path = str(tmp_path / "bang_bytes.fx")
    faiss_ext.write_index(auto, path)
    loaded = faiss_ext.read_index(path, res)
    assert loaded.stores_bytes and loaded.vector_storage == "auto"
    D2, I2 = loaded.search(xq, 10)
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)

    strict = faiss_ext.GpuIndexBang(res, d, vector_storage="bytes")
    with pytest.raises(faiss_ext.FaissException, match="kBytes"):
        strict.add(xb + 0.5)
    assert strict.ntotal == 0
    with pytest.raises(ValueError, match="vector_storage"):
        faiss_ext.GpuIndexBang(res, d, vector_storage="half")


def test_inner_product_on_unit_vectors(res, rng):
    d, nb, nq = 24, small_under_sanitizer(8000, 300), small_under_sanitizer(200, 30)
    centres = rng.random((30, d), dtype=np.float32) - 0.5
    xb, xq = clustered(rng, nb, d, centres), clustered(rng, nq, d, centres)
    xb /= np.linalg.norm(xb, axis=1, keepdims=True)
    xq /= np.linalg.norm(xq, axis=1, keepdims=True)
    flat = faiss_ext.GpuIndexFlat(res, d, faiss_ext.METRIC_INNER_PRODUCT)
    flat.add(xb)
    _, gt = flat.search(xq, 10)

    index = faiss_ext.GpuIndexBang(res, d, R=32, metric=faiss_ext.METRIC_INNER_PRODUCT)
    assert index.metric_type == faiss_ext.METRIC_INNER_PRODUCT
    index.add(xb)
    D, I = index.search(xq, 10)
    assert recall_at_10(I, gt) >= 0.95
    assert np.all(np.diff(D, axis=1) <= 0)            # largest inner product first
    np.testing.assert_allclose(D, np.einsum("qd,qkd->qk", xq, xb[I]), atol=1e-4)
    # PQ mode codes the transformed rows (M + 1 sub-quantizers) and re-ranks exactly.
    # (Coarse codes walk less well than exact distances: 0.89 with M = 4 here.) Under
    # compute-sanitizer M = 2: 3 codebooks to train instead of 9.
    pq = faiss_ext.GpuIndexBang(res, d, R=32, metric=faiss_ext.METRIC_INNER_PRODUCT,
                                pq_subquantizers=small_under_sanitizer(8, 2), search_L=100)
    pq.add(xb)
    Dp, Ip = pq.search(xq, 10)
    assert recall_at_10(Ip, gt) >= 0.85
    np.testing.assert_allclose(Dp, np.einsum("qd,qkd->qk", xq, xb[Ip]), atol=1e-4)
