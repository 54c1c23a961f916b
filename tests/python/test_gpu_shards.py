"""GpuIndexShards / GpuIndexReplicas from Python: two parts on device 0 (any GPU
machine) give the results of one index; the copies of faiss CPU indexes keep their
ids; refused calls leave the index as it was."""

import numpy as np
import pytest

import faiss_ext

pytestmark = pytest.mark.gpu

D = 24
DEVICES = [0, 0]


def data(rng, n):
    return rng.random((n, D), dtype=np.float32)


@pytest.mark.parametrize("cls", [faiss_ext.GpuIndexShards, faiss_ext.GpuIndexReplicas])
def test_flat_parts_equal_one_index(res, rng, cls):
    xb, xq = data(rng, 1001), data(rng, 33)
    one = faiss_ext.GpuIndexFlat(res, D)
    one.add(xb)
    parts = cls.flat(DEVICES, D)
    assert parts.count == 2 and parts.devices == DEVICES and parts.d == D
    parts.add(xb)
    assert parts.ntotal == 1001
    D1, I1 = one.search(xq, 10)
    D2, I2 = parts.search(xq, 10)
    assert I2.dtype == np.int64 and D2.shape == (33, 10)
    np.testing.assert_allclose(D2, D1, rtol=1e-4, atol=1e-4)
    assert (I2 == I1).mean() > 0.99  # ties aside
    parts.reset()
    assert parts.ntotal == 0 and parts.is_trained


def test_ivf_shards_share_centroids_and_keep_ids(res, rng):
    xb, xq = data(rng, 2000), data(rng, 20)
    ids = np.arange(2000, dtype=np.int64) * 5 + 7
    shards = faiss_ext.GpuIndexShards.ivf_flat(DEVICES, D, 16, nprobe=16)
    assert not shards.is_trained
    shards.train(xb)
    shards.add_with_ids(xb, ids)
    _, I = shards.search(xb[:20], 1)
    np.testing.assert_array_equal(I[:, 0], ids[:20])  # nprobe = nlist: exact


def test_cpu_copies(rng):
    faiss = pytest.importorskip("faiss")
    xb, xq = data(rng, 1500), data(rng, 25)
    cpu = faiss.IndexIVFFlat(faiss.IndexFlatL2(D), D, 8)
    cpu.train(xb)
    cpu.add_with_ids(xb, np.arange(1500, dtype=np.int64) + 10**6)
    cpu.nprobe = 8
    Dc, Ic = cpu.search(xq, 5)
    for copy in (faiss_ext.index_cpu_to_gpu_shards, faiss_ext.index_cpu_to_gpu_replicas):
        index = copy(cpu, DEVICES)
        Dg, Ig = index.search(xq, 5)
        np.testing.assert_allclose(Dg, Dc, rtol=1e-4, atol=1e-4)
        assert (Ig == Ic).mean() > 0.99


def test_refusals_leave_it_unchanged(rng):
    xb = data(rng, 500)
    shards = faiss_ext.GpuIndexShards.flat(DEVICES, D)
    shards.add(xb)
    before = shards.search(xb[:3], 4)
    bad = data(rng, 4)
    bad[2, 1] = np.nan
    with pytest.raises(faiss_ext.FaissException):
        shards.add(bad)
    with pytest.raises(faiss_ext.FaissException):
        shards.add_with_ids(xb[:4], np.arange(4))
    with pytest.raises(ValueError):
        shards.search(xb[:3], 0)
    with pytest.raises(ValueError):
        shards.add(np.zeros((3, D + 1), dtype=np.float32))
    after = shards.search(xb[:3], 4)
    assert shards.ntotal == 500
    np.testing.assert_array_equal(after[1], before[1])
