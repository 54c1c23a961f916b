"""make_groundtruth.py end to end on a small dataset."""

import numpy as np
import pytest

import make_groundtruth
import synthetic
import vecs_io
from conftest import small_under_sanitizer

pytestmark = pytest.mark.gpu


def test_make_groundtruth(tmp_path):
    nb, nq = small_under_sanitizer(20000, 4000), small_under_sanitizer(300, 100)
    xb = synthetic.clustered(nb, 32, clusters=50, seed=11)
    xq = synthetic.clustered(nq, 32, clusters=50, seed=11, stream=1)
    vecs_io.write_fvecs(str(tmp_path / "base.fvecs"), xb)
    vecs_io.write_fbin(str(tmp_path / "query.fbin"), xq)
    make_groundtruth.main([
        "--base", str(tmp_path / "base.fvecs"), "--query", str(tmp_path / "query.fbin"),
        "--k", "20", "--out", str(tmp_path / "gt.ivecs"),
        "--distances", str(tmp_path / "gt.fvecs"), "--check", str(nq)])
    ids = vecs_io.read_ivecs(str(tmp_path / "gt.ivecs"))
    dist = vecs_io.read_fvecs(str(tmp_path / "gt.fvecs"))
    assert ids.shape == dist.shape == (nq, 20)
    b, q = xb.astype(np.float64), xq.astype(np.float64)
    exact = (q ** 2).sum(1)[:, None] - 2 * q @ b.T + (b ** 2).sum(1)[None]
    np.testing.assert_allclose(dist, np.sort(exact, axis=1)[:, :20], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.take_along_axis(exact, ids, 1), dist, rtol=1e-4, atol=1e-4)
