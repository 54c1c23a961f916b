"""Serialized faiss indexes without a device: what the C++ faiss::read_index finds
in them and which faiss_ext class would load them."""

import numpy as np
import pytest

import faiss_ext


def test_serialized_bytes_accepts_bytes_bytearray_and_uint8_arrays():
    data = bytes(range(256)) * 3
    assert faiss_ext._serialized_bytes(data) == data
    assert faiss_ext._serialized_bytes(bytearray(data)) == data
    array = np.frombuffer(data, np.uint8)
    assert faiss_ext._serialized_bytes(array) == data
    assert faiss_ext._serialized_bytes(np.frombuffer(data, np.uint8)[::3]) == data[::3]


@pytest.mark.parametrize("data", [
    np.zeros(8, np.int8), np.zeros(8, np.float32), np.zeros((2, 4), np.uint8),
    "IxF2", [1, 2, 3], None,
])
def test_serialized_bytes_refuses_other_types(data):
    with pytest.raises(TypeError, match="serialized index: expected"):
        faiss_ext._serialized_bytes(data)


def test_serialized_bytes_refuses_empty():
    with pytest.raises(ValueError, match="no bytes"):
        faiss_ext._serialized_bytes(b"")


def test_malformed_bytes_raise_faiss_exception():
    with pytest.raises(faiss_ext.FaissException, match="not recognized"):
        faiss_ext.faiss_bytes_info(b"garbage!")
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.faiss_bytes_info(b"IxF2\x08\x00")


@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_info_of_faiss_flat_index(metric, rng):
    faiss = pytest.importorskip("faiss")
    d, n = 12, 37
    index = faiss.IndexFlatL2(d) if metric == "L2" else faiss.IndexFlatIP(d)
    index.add(rng.random((n, d), dtype=np.float32))
    info = faiss_ext.faiss_bytes_info(faiss.serialize_index(index))
    assert info == {
        "faiss_class": "faiss::IndexFlatL2" if metric == "L2" else "faiss::IndexFlatIP",
        "d": d, "ntotal": n, "metric_type": index.metric_type, "is_trained": True,
        "faiss_ext_class": "GpuIndexFlat",
    }


def test_info_of_unsupported_faiss_index():
    faiss = pytest.importorskip("faiss")
    info = faiss_ext.faiss_bytes_info(faiss.serialize_index(faiss.IndexHNSWFlat(16, 8)))
    assert info["faiss_class"] == "faiss::IndexHNSWFlat"
    assert info["faiss_ext_class"] is None


def test_info_of_faiss_ivf_index(rng):
    faiss = pytest.importorskip("faiss")
    d, nlist = 8, 4
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    x = rng.random((200, d), dtype=np.float32)
    index.train(x)
    index.add(x)
    info = faiss_ext.faiss_bytes_info(faiss.serialize_index(index))
    assert info["faiss_class"] == "faiss::IndexIVFFlat"
    assert (info["d"], info["ntotal"], info["metric_type"]) == (d, 200, faiss.METRIC_INNER_PRODUCT)
    assert info["faiss_ext_class"] == "GpuIndexIVFFlat"


def test_loader_doc_lists_the_loadable_types():
    assert "GpuIndexFlat, GpuIndexIVFFlat" in faiss_ext.index_from_faiss_bytes.__doc__
