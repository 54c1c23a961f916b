"""Device arrays from CuPy and PyTorch: train / add / add_with_ids / search read them
in place and search answers in the caller's framework on the device, with the answers
of numpy arrays and the same argument errors. Skipped where CuPy or PyTorch (with CUDA)
is not installed."""

import subprocess
import sys

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu


class Framework:
    """The little the tests need of CuPy or PyTorch."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            self.mod = pytest.importorskip("cupy")
        else:
            self.mod = pytest.importorskip("torch")
            if not self.mod.cuda.is_available():
                pytest.skip("PyTorch without CUDA")

    def to_device(self, a):
        if self.name == "cupy":
            return self.mod.asarray(a)
        return self.mod.as_tensor(a, device="cuda:0")

    def to_numpy(self, a):
        if self.name == "cupy":
            return self.mod.asnumpy(a)
        return a.cpu().numpy()

    def is_on_device(self, a):
        if self.name == "cupy":
            return isinstance(a, self.mod.ndarray) and a.device.id == 0
        return isinstance(a, self.mod.Tensor) and a.is_cuda and a.device.index == 0

    def transpose(self, a):
        return a.T


@pytest.fixture(params=["cupy", "torch"])
def fw(request):
    return Framework(request.param)


def make(kind, res, d):
    if kind == "flat":
        return faiss_ext.GpuIndexFlat(res, d)
    index = faiss_ext.GpuIndexIVFFlat(res, d, 16)
    index.nprobe = 4
    return index


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_device_arrays_answer_as_numpy(res, rng, fw, kind):
    d, n, nq, k = 24, small_under_sanitizer(3000, 600), small_under_sanitizer(200, 30), 10
    xb = rng.standard_normal((n, d), dtype=np.float32)
    xq = rng.standard_normal((nq, d), dtype=np.float32)
    host, dev = make(kind, res, d), make(kind, res, d)
    if kind == "ivf":
        host.train(xb)
        dev.train(fw.to_device(xb))   # the same k-means on the same vectors
    host.add(xb)
    dev.add(fw.to_device(xb))
    assert dev.ntotal == n
    np.testing.assert_array_equal(dev.reconstruct_n(0, n), host.reconstruct_n(0, n))

    D_ref, I_ref = host.search(xq, k)
    D, I = dev.search(fw.to_device(xq), k)
    assert fw.is_on_device(D) and fw.is_on_device(I)
    assert D.shape == (nq, k) and I.shape == (nq, k)
    np.testing.assert_array_equal(fw.to_numpy(I), I_ref)
    np.testing.assert_array_equal(fw.to_numpy(D), D_ref)
    # numpy queries still give numpy results.
    D2, I2 = dev.search(xq, k)
    assert isinstance(D2, np.ndarray) and isinstance(I2, np.ndarray)
    np.testing.assert_array_equal(I2, I_ref)


def test_other_dtypes_and_layouts_are_converted_on_the_device(res, rng, fw):
    d, n, k = 16, 500, 5
    xb = rng.standard_normal((n, d), dtype=np.float32)
    index = faiss_ext.GpuIndexFlat(res, d)
    index.add(fw.to_device(xb.astype(np.float64)))
    index.add(fw.transpose(fw.to_device(np.ascontiguousarray(xb.T))))  # not C order
    assert index.ntotal == 2 * n
    np.testing.assert_array_equal(index.reconstruct_n(n, n), xb)
    D, I = index.search(fw.to_device(xb[:7].astype(np.float16)), k)
    assert fw.is_on_device(I)
    assert fw.to_numpy(I).shape == (7, k)


def test_device_ids(res, rng, fw):
    d, n = 8, 400
    xb = rng.standard_normal((n, d), dtype=np.float32)
    ids = np.arange(n, dtype=np.int32) * 5 + 1000
    index = faiss_ext.GpuIndexIVFFlat(res, d, 4)
    index.train(xb)
    index.add_with_ids(fw.to_device(xb), fw.to_device(ids))   # int32: converted
    np.testing.assert_array_equal(index.reconstruct(int(ids[17])), xb[17])
    with pytest.raises(ValueError, match=r"expected 400 ids of shape \(400,\), got shape \(399,\)"):
        index.add_with_ids(fw.to_device(xb), fw.to_device(ids[:-1]))
    with pytest.raises(TypeError, match="expected integer ids, got dtype float32"):
        index.add_with_ids(fw.to_device(xb), fw.to_device(ids.astype(np.float32)))
    assert index.ntotal == n


def test_argument_errors_match_numpy(res, fw):
    index = faiss_ext.GpuIndexFlat(res, 4)
    index.add(np.zeros((3, 4), np.float32))
    cases = [
        (np.zeros((2, 4), dtype=bool), TypeError, "expected float32 vectors, got dtype bool"),
        (np.zeros((2, 4), dtype=np.complex64), TypeError, "expected float32 vectors, got dtype complex64"),
        (np.zeros(4, np.float32), ValueError, r"got shape \(4,\).*reshape\(1, -1\)"),
        (np.zeros((2, 2, 1), np.float32), ValueError, r"got shape \(2, 2, 1\)"),
        (np.zeros((3, 5), np.float32), ValueError, "vectors have dimension 5 but the index has d=4"),
    ]
    for x, error, message in cases:
        for call in (index.add, lambda v: index.search(v, 2)):
            with pytest.raises(error, match=message):
                call(x)
            with pytest.raises(error, match=message):
                call(fw.to_device(x))
    with pytest.raises(ValueError, match=r"k=0 is outside \[1, 2048\]"):
        index.search(fw.to_device(np.zeros((1, 4), np.float32)), 0)
    with pytest.raises(faiss_ext.FaissException, match="vector 1 has a NaN or infinite component"):
        index.add(fw.to_device(np.array([[0, 0, 0, 0], [0, np.nan, 0, 0]], np.float32)))
    assert index.ntotal == 3


def test_empty_batches(res, fw):
    index = faiss_ext.GpuIndexFlat(res, 4)
    index.add(fw.to_device(np.zeros((0, 4), np.float32)))
    assert index.ntotal == 0
    D, I = index.search(fw.to_device(np.zeros((0, 4), np.float32)), 3)
    assert fw.is_on_device(D) and tuple(I.shape) == (0, 3)


def test_device_search_stages_nothing_through_host_pages(res, rng, fw):
    """Host queries are copied into device pages (queries and results, allocated from
    the library's pool); device queries and results are used in place, so the pool's
    peak stays below the host search's by at least those pages."""
    d, n, nq, k = 64, small_under_sanitizer(2000, 1000), small_under_sanitizer(20000, 500), 8
    index = faiss_ext.GpuIndexFlat(res, d)
    index.add(rng.standard_normal((n, d), dtype=np.float32))
    xq = rng.standard_normal((nq, d), dtype=np.float32)
    xq_dev = fw.to_device(xq)
    index.search(xq_dev, k)                 # warm-up: cuBLAS workspace and the like
    index.search(xq, k)
    res._pool_peak_bytes(reset=True)
    index.search(xq, k)
    host_peak = res._pool_peak_bytes(reset=True)
    D, I = index.search(xq_dev, k)
    device_peak = res._pool_peak_bytes(reset=True)
    pages = nq * d * 4 + nq * k * (4 + 8)
    print(f"pool peak: host queries {host_peak}, device queries {device_peak}, pages {pages}")
    assert host_peak - device_peak >= pages
    assert fw.is_on_device(D)


def test_numpy_calls_import_no_array_framework(res):
    code = (
        "import sys, numpy as np, faiss_ext\n"
        "res = faiss_ext.GpuResources()\n"
        "index = faiss_ext.GpuIndexFlat(res, 4)\n"
        "index.add(np.eye(4, dtype=np.float32))\n"
        "index.search(np.eye(4, dtype=np.float32), 2)\n"
        "print(sorted({'cupy', 'torch'} & set(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
