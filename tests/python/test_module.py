"""The module without a device: import, constants, errors, argument conversion."""

import numpy as np
import pytest

import faiss_ext


def test_constants_match_faiss_values():
    assert faiss_ext.METRIC_L2 == 1
    assert faiss_ext.METRIC_INNER_PRODUCT == 0
    assert faiss_ext.MAX_SEARCH_K == 2048


def test_constants_match_faiss_module():
    faiss = pytest.importorskip("faiss")
    assert faiss_ext.METRIC_L2 == faiss.METRIC_L2
    assert faiss_ext.METRIC_INNER_PRODUCT == faiss.METRIC_INNER_PRODUCT


def test_exception_type():
    assert issubclass(faiss_ext.FaissException, RuntimeError)


def test_gpu_resources_without_device_or_with_one():
    n = faiss_ext.get_num_gpus()
    assert isinstance(n, int) and n >= 0
    if n == 0:
        with pytest.raises(faiss_ext.FaissException, match="no CUDA device is available"):
            faiss_ext.GpuResources()
        return
    res = faiss_ext.GpuResources(device=0, temp_memory_bytes=32 << 20)
    assert res.device == 0 and res.temp_memory_bytes == 32 << 20
    res.synchronize()
    with pytest.raises(faiss_ext.FaissException, match=f"CUDA device {n} does not exist"):
        faiss_ext.GpuResources(device=n)
    with pytest.raises(faiss_ext.FaissException, match="below the 16 MiB minimum"):
        faiss_ext.GpuResources(temp_memory_bytes=1 << 20)


def test_index_constructor_refuses_other_resources_types():
    with pytest.raises(TypeError):
        faiss_ext.GpuIndexFlat(None, 8)
    with pytest.raises(TypeError):
        faiss_ext.GpuIndexFlat("res", 8, faiss_ext.METRIC_L2)


# --- vectors ---------------------------------------------------------------------

def test_check_vectors_keeps_float32_c_contiguous_without_copy():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = faiss_ext._check_vectors(x, 4)
    assert y.dtype == np.float32 and y.shape == (3, 4)
    assert np.shares_memory(x, y)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64, np.uint8])
def test_check_vectors_converts_real_dtypes(dtype):
    x = (np.arange(12).reshape(3, 4) * 3).astype(dtype)
    y = faiss_ext._check_vectors(x, 4)
    assert y.dtype == np.float32 and y.flags.c_contiguous
    np.testing.assert_array_equal(y, x.astype(np.float32))
    assert not np.shares_memory(x, y)


def test_check_vectors_rounds_float64_to_float32():
    x = np.array([[0.1, 1e-40, 1 / 3]], dtype=np.float64)
    np.testing.assert_array_equal(faiss_ext._check_vectors(x, 3), x.astype(np.float32))


def test_check_vectors_converts_layouts():
    base = np.random.default_rng(0).random((6, 10), dtype=np.float32)
    for x in (base[:, ::2], np.asfortranarray(base), base[::-1], base.astype(">f4")):
        y = faiss_ext._check_vectors(x, x.shape[1])
        assert y.flags.c_contiguous and y.dtype == np.float32
        np.testing.assert_array_equal(y, x)


def test_check_vectors_accepts_empty_batch():
    y = faiss_ext._check_vectors(np.zeros((0, 5), np.float32), 5)
    assert y.shape == (0, 5)


@pytest.mark.parametrize("x", [
    np.zeros((2, 4), dtype=bool),
    np.zeros((2, 4), dtype=np.complex64),
    np.zeros((2, 4), dtype=object),
    np.array([["a", "b", "c", "d"]]),
])
def test_check_vectors_refuses_other_dtypes(x):
    with pytest.raises(TypeError, match="expected float32 vectors, got dtype"):
        faiss_ext._check_vectors(x, 4)


@pytest.mark.parametrize("x", [[[0.0] * 4], (1, 2, 3, 4), 3.0, None, b"1234"])
def test_check_vectors_refuses_non_arrays(x):
    with pytest.raises(
            TypeError, match=r"add: expected a numpy array or a CUDA device array of shape \(n, 4\)"):
        faiss_ext._check_vectors(x, 4, "add")


def test_check_vectors_shapes():
    with pytest.raises(ValueError, match=r"got shape \(4,\).*reshape\(1, -1\)"):
        faiss_ext._check_vectors(np.zeros(4, np.float32), 4)
    with pytest.raises(ValueError, match=r"got shape \(2, 2, 1\)"):
        faiss_ext._check_vectors(np.zeros((2, 2, 1), np.float32), 4)
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        faiss_ext._check_vectors(np.array(1.0, np.float32), 4)
    with pytest.raises(ValueError, match="search: vectors have dimension 5 but the index has d=4"):
        faiss_ext._check_vectors(np.zeros((3, 5), np.float32), 4, "search")


# --- ids, k, metric -----------------------------------------------------------------

def test_check_ids():
    ids = np.arange(5, dtype=np.int64)
    assert np.shares_memory(faiss_ext._check_ids(ids, 5), ids)
    for dtype in (np.int32, np.uint16, np.uint64):
        out = faiss_ext._check_ids(np.arange(5, dtype=dtype) * 7, 5)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, np.arange(5) * 7)
    np.testing.assert_array_equal(faiss_ext._check_ids(np.arange(10)[::2], 5), [0, 2, 4, 6, 8])
    with pytest.raises(TypeError, match="expected integer ids, got dtype float64"):
        faiss_ext._check_ids(np.arange(5, dtype=np.float64), 5)
    with pytest.raises(TypeError, match="expected ids as a numpy int64 array"):
        faiss_ext._check_ids(list(range(5)), 5)
    with pytest.raises(ValueError, match=r"expected 5 ids of shape \(5,\), got shape \(4,\)"):
        faiss_ext._check_ids(np.arange(4), 5)
    with pytest.raises(ValueError, match=r"got shape \(5, 1\)"):
        faiss_ext._check_ids(np.arange(5).reshape(5, 1), 5)


def test_check_k():
    faiss_ext._check_k(1)
    faiss_ext._check_k(faiss_ext.MAX_SEARCH_K)
    for k in (0, -1, faiss_ext.MAX_SEARCH_K + 1):
        with pytest.raises(ValueError, match=rf"k={k} is outside \[1, 2048\]"):
            faiss_ext._check_k(k)


def test_check_metric():
    assert faiss_ext._check_metric(faiss_ext.METRIC_L2) == 1
    assert faiss_ext._check_metric(faiss_ext.METRIC_INNER_PRODUCT) == 0
    for metric in (2, 23, -1, 1000):
        with pytest.raises(ValueError, match=f"metric {metric} is not supported"):
            faiss_ext._check_metric(metric)


def test_parts_refuse_bad_devices_before_touching_one():
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.GpuIndexShards.flat([], 8)
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.GpuIndexReplicas.flat([-1], 8)
    with pytest.raises(faiss_ext.FaissException):
        faiss_ext.GpuIndexShards.flat([faiss_ext.get_num_gpus()], 8)
