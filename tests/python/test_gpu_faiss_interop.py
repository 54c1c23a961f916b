"""Moving indexes between faiss_ext and faiss through faiss's serialized bytes."""

import numpy as np
import pytest

import faiss_ext

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("metric", [faiss_ext.METRIC_L2, faiss_ext.METRIC_INNER_PRODUCT])
def test_bytes_round_trip_without_faiss_module(res, rng, metric):
    x = rng.standard_normal((500, 20), dtype=np.float32)
    index = faiss_ext.GpuIndexFlat(res, 20, metric)
    index.add(x)
    data = faiss_ext.index_to_faiss_bytes(index)
    assert data.dtype == np.uint8 and data.ndim == 1
    info = faiss_ext.faiss_bytes_info(data)
    assert (info["d"], info["ntotal"], info["metric_type"]) == (20, 500, metric)
    assert info["faiss_ext_class"] == "GpuIndexFlat"
    for payload in (data, data.tobytes(), bytearray(data.tobytes())):
        copy = faiss_ext.index_from_faiss_bytes(res, payload)
        assert isinstance(copy, faiss_ext.GpuIndexFlat)
        assert (copy.d, copy.ntotal, copy.metric_type) == (20, 500, metric)
        np.testing.assert_array_equal(copy.reconstruct_n(0, 500), x)


def test_faiss_index_in_and_out(res, rng):
    faiss = pytest.importorskip("faiss")
    d, nb, nq, k = 64, 3000, 200, 10
    xb = rng.standard_normal((nb, d), dtype=np.float32)
    xq = rng.standard_normal((nq, d), dtype=np.float32)
    cpu = faiss.IndexFlatL2(d)
    cpu.add(xb)
    ref_d, ref_i = cpu.search(xq, k)

    gpu = faiss_ext.index_from_faiss_bytes(res, faiss.serialize_index(cpu))
    D, I = gpu.search(xq, k)
    np.testing.assert_allclose(D, ref_d, rtol=1e-4, atol=1e-3)
    assert (I == ref_i).mean() > 0.999  # ties may order differently

    back = faiss.deserialize_index(faiss_ext.index_to_faiss_bytes(gpu))
    assert back.ntotal == nb and back.d == d and back.metric_type == faiss.METRIC_L2
    np.testing.assert_array_equal(back.reconstruct_n(0, nb), xb)

    gpu2 = faiss_ext.index_cpu_to_gpu(res, cpu)
    assert gpu2.ntotal == nb
    cpu2 = faiss_ext.index_gpu_to_cpu(gpu2)
    np.testing.assert_array_equal(cpu2.search(xq, k)[1], ref_i)


def test_unsupported_faiss_index_is_refused(res):
    faiss = pytest.importorskip("faiss")
    data = faiss.serialize_index(faiss.IndexHNSWFlat(16, 8))
    with pytest.raises(ValueError, match="cannot load a faiss::IndexHNSWFlat"):
        faiss_ext.index_from_faiss_bytes(res, data)
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.index_from_faiss_bytes(res, b"garbage!")


def test_faiss_l1_flat_index_is_refused(res):
    faiss = pytest.importorskip("faiss")
    data = faiss.serialize_index(faiss.IndexFlat(8, faiss.METRIC_L1))
    with pytest.raises(faiss_ext.FaissException, match="metric 2 is not supported"):
        faiss_ext.index_from_faiss_bytes(res, data)
