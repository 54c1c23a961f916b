"""benchs/datasets Python tools: vecs_io round trips and byte layout, synthetic data,
and the image selection / split logic of make_sift_wallpapers."""

import os
import struct

import numpy as np
import pytest

import make_sift_wallpapers as msw
import synthetic
import vecs_io

FORMATS = {"fvecs": np.float32, "ivecs": np.int32, "bvecs": np.uint8,
           "fbin": np.float32, "ibin": np.int32}


def sample(dtype, n, d, rng):
    if dtype == np.float32:
        return rng.standard_normal((n, d), dtype=np.float32)
    if dtype == np.int32:
        return rng.integers(-2**31, 2**31, size=(n, d), dtype=np.int32)
    return rng.integers(0, 256, size=(n, d), dtype=np.uint8)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip(fmt, mmap, tmp_path, rng):
    n, d = int(rng.integers(1, 300)), int(rng.integers(1, 70))
    x = sample(FORMATS[fmt], n, d, rng)
    path = str(tmp_path / f"x.{fmt}")
    vecs_io.write_vectors(path, x)
    y = vecs_io.read_vectors(path, mmap=mmap)
    assert y.shape == (n, d) and y.dtype == FORMATS[fmt]
    np.testing.assert_array_equal(y, x)
    if not mmap:
        assert y.flags.c_contiguous and y.flags.writeable


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_round_trip_across_write_chunks(fmt, tmp_path, monkeypatch, rng):
    monkeypatch.setattr(vecs_io, "_CHUNK_BYTES", 100)
    x = sample(FORMATS[fmt], 53, 7, rng)
    path = str(tmp_path / f"x.{fmt}")
    vecs_io.write_vectors(path, x)
    np.testing.assert_array_equal(vecs_io.read_vectors(path), x)


def test_byte_layout(tmp_path):
    x = np.array([[1.5, -2.0], [3.0, 4.25]], np.float32)
    vecs_io.write_fvecs(str(tmp_path / "a.fvecs"), x)
    assert (tmp_path / "a.fvecs").read_bytes() == struct.pack("<iffiff", 2, 1.5, -2.0, 2, 3.0, 4.25)
    vecs_io.write_bvecs(str(tmp_path / "a.bvecs"), np.array([[1, 255, 7]], np.uint8))
    assert (tmp_path / "a.bvecs").read_bytes() == struct.pack("<iBBB", 3, 1, 255, 7)
    vecs_io.write_ibin(str(tmp_path / "a.ibin"), np.array([[5], [-6], [7]], np.int32))
    assert (tmp_path / "a.ibin").read_bytes() == struct.pack("<iiiii", 3, 1, 5, -6, 7)
    (tmp_path / "b.fvecs").write_bytes(struct.pack("<ifffiff", 3, 1, 2, 3, 3, 4, 5) + struct.pack("<f", 6))
    np.testing.assert_array_equal(vecs_io.read_fvecs(str(tmp_path / "b.fvecs")), [[1, 2, 3], [4, 5, 6]])


def test_write_converts_and_refuses(tmp_path):
    path = str(tmp_path / "a.fvecs")
    vecs_io.write_fvecs(path, np.arange(6, dtype=np.float64).reshape(2, 3))
    np.testing.assert_array_equal(vecs_io.read_fvecs(path), np.arange(6).reshape(2, 3))
    vecs_io.write_bvecs(str(tmp_path / "a.bvecs"), np.arange(6, dtype=np.int64).reshape(2, 3))
    with pytest.raises(ValueError, match="outside the range of uint8"):
        vecs_io.write_bvecs(str(tmp_path / "b.bvecs"), np.array([[256]]))
    with pytest.raises(TypeError, match="expected integers"):
        vecs_io.write_ivecs(str(tmp_path / "a.ivecs"), np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        vecs_io.write_fvecs(path, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="unknown vector format .npy"):
        vecs_io.write_vectors(str(tmp_path / "a.npy"), np.zeros((1, 1)))


def test_corrupt_files_are_refused(tmp_path):
    bad = tmp_path / "bad.fvecs"
    bad.write_bytes(struct.pack("<iff", 2, 1, 2) + struct.pack("<i", 2))
    with pytest.raises(ValueError, match="not a whole number of rows"):
        vecs_io.read_fvecs(str(bad))
    bad.write_bytes(struct.pack("<iffiff", 2, 1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="row 1 has dimension 3, not 2"):
        vecs_io.read_fvecs(str(bad))
    bad.write_bytes(struct.pack("<i", -4))
    with pytest.raises(ValueError, match="bad dimension -4"):
        vecs_io.read_fvecs(str(bad))
    short = tmp_path / "short.fbin"
    short.write_bytes(struct.pack("<iif", 2, 2, 1.0))
    with pytest.raises(ValueError, match="does not match the header n=2 d=2"):
        vecs_io.read_fbin(str(short))
    short.write_bytes(b"\x01")
    with pytest.raises(ValueError, match="shorter than the 8-byte header"):
        vecs_io.read_fbin(str(short))


def test_empty_vecs_file(tmp_path):
    path = tmp_path / "empty.fvecs"
    path.write_bytes(b"")
    assert vecs_io.read_fvecs(str(path)).shape == (0, 0)


# --- synthetic ---------------------------------------------------------------------

def test_synthetic_is_deterministic_and_seeded():
    a = synthetic.clustered(500, 16, clusters=10, seed=7)
    assert a.dtype == np.float32 and a.shape == (500, 16)
    np.testing.assert_array_equal(a, synthetic.clustered(500, 16, clusters=10, seed=7))
    assert not np.array_equal(a, synthetic.clustered(500, 16, clusters=10, seed=8))
    assert not np.array_equal(a, synthetic.clustered(500, 16, clusters=10, seed=7, stream=1))
    np.testing.assert_array_equal(synthetic.uniform(10, 3, seed=2), synthetic.uniform(10, 3, seed=2))


def test_synthetic_streams_share_centres():
    spread = 0.01
    centres = synthetic.centres(8, clusters=5, seed=3)
    for stream in (0, 1):
        x = synthetic.clustered(400, 8, clusters=5, spread=spread, seed=3, stream=stream)
        nearest = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        offsets = x - centres[nearest]
        # Gaussian noise of standard deviation `spread` around the shared centres.
        assert abs(offsets.std() - spread) < 0.1 * spread
        assert np.abs(offsets).max() < 6 * spread


def test_synthetic_arguments():
    assert synthetic.clustered(0, 4).shape == (0, 4)
    u = synthetic.uniform(1000, 4, seed=1)
    assert u.min() >= 0 and u.max() < 1
    with pytest.raises(ValueError):
        synthetic.clustered(10, 0)
    with pytest.raises(ValueError):
        synthetic.clustered(-1, 4)


# --- make_sift_wallpapers ------------------------------------------------------------

def test_variant_groups():
    g = msw.variant_group
    assert g("/w/Altai/contents/images/5120x2880.png") == g("/w/Altai/contents/images_dark/1080x1920.png") == "/w/Altai"
    assert g("/b/mate/Elephants.jpg") == g("/b/mate/Elephants_3840x2160.jpg") == "/b/mate/Elephants"
    assert g("/b/sway/Blue_1136x640_Portrait.png") == g("/b/sway/Blue_2048x1536.png") == "/b/sway/Blue"
    assert g("/b/gnome/adwaita-d.webp") == g("/b/gnome/adwaita-l.webp") == "/b/gnome/adwaita"
    assert g("/b/calla.png") != g("/b/city.png")


def test_select_variants_keeps_largest_of_each_picture():
    sizes = {
        "/w/A/contents/images/1080x1920.png": (1920, 1080),
        "/w/A/contents/images/5120x2880.png": (2880, 5120),
        "/b/E.jpg": (1080, 1920),
        "/b/E_5640x3172.jpg": (3172, 5640),
        "/b/small.png": (480, 640),
        "/b/other.jpg": (1200, 1600),
    }
    assert msw.select_variants(sizes, 1.0) == [
        "/b/E_5640x3172.jpg", "/b/other.jpg", "/w/A/contents/images/5120x2880.png"]
    assert "/b/small.png" in msw.select_variants(sizes, 0.1)


def test_find_images(tmp_path):
    (tmp_path / "A" / "contents").mkdir(parents=True)
    for name in ("A/contents/screenshot.png", "A/contents/x.JPG", "b.webp", "c.svg", "d.txt"):
        (tmp_path / name).write_bytes(b"")
    os.symlink(tmp_path / "b.webp", tmp_path / "link.webp")
    found = msw.find_images([str(tmp_path)])
    assert found == sorted(os.path.realpath(tmp_path / n) for n in ("A/contents/x.JPG", "b.webp"))
    with pytest.raises(FileNotFoundError):
        msw.find_images([str(tmp_path / "missing")])


def test_split_images_holds_out_whole_images(seed):
    rng = np.random.default_rng(seed)
    counts = [int(c) for c in rng.integers(0, 5000, size=40)]
    query, base = msw.split_images(counts, nq=10_000, query_images=4, seed=seed)
    assert set(query).isdisjoint(base) and sorted(query + base) == list(range(40))
    assert sum(counts[i] for i in query) >= 10_000 and len(query) >= 4
    assert all(counts[i] > 0 for i in query)
    assert msw.split_images(counts, 10_000, 4, seed) == (query, base)
    with pytest.raises(ValueError, match="fewer than nq"):
        msw.split_images([10, 20], nq=100, query_images=1, seed=0)
    with pytest.raises(ValueError, match="no image is left"):
        msw.split_images([10, 20], nq=25, query_images=1, seed=0)


def test_sample_rows(seed):
    rows = msw.sample_rows(100, 30, np.random.default_rng(seed))
    assert len(np.unique(rows)) == 30 and np.all(np.diff(rows) > 0) and rows.max() < 100
    with pytest.raises(ValueError):
        msw.sample_rows(10, 11, np.random.default_rng(seed))


def test_sift_descriptors_of_a_drawn_image(tmp_path):
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(5)
    image = np.full((480, 640), 128, np.uint8)
    for _ in range(60):
        x, y, r = int(rng.integers(20, 620)), int(rng.integers(20, 460)), int(rng.integers(4, 30))
        cv2.circle(image, (x, y), r, int(rng.integers(0, 256)), -1)
    path = str(tmp_path / "shapes.png")
    cv2.imwrite(path, image)
    des = msw.sift_descriptors(path, 0.01)
    assert des.dtype == np.uint8 and des.shape[1] == 128 and len(des) > 50
    strongest = msw.sift_descriptors(path, 0.01, max_keypoints=20)
    assert 0 < len(strongest) <= 22  # OpenCV keeps ties with the 20th response
    assert msw.image_size(path) == (480, 640)
    flat = str(tmp_path / "flat.png")
    cv2.imwrite(flat, np.zeros((64, 64), np.uint8))
    assert msw.sift_descriptors(flat, 0.01).shape == (0, 128)


# --- make_groundtruth (its numpy check; the GPU run is in test_gpu_groundtruth.py) ----

@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_groundtruth_numpy_knn_and_check(metric, rng):
    import faiss_ext
    import make_groundtruth as mg
    m = faiss_ext.METRIC_L2 if metric == "l2" else faiss_ext.METRIC_INNER_PRODUCT
    xb = rng.standard_normal((500, 6), dtype=np.float32)
    xq = rng.standard_normal((20, 6), dtype=np.float32)
    D, I = mg.numpy_knn(xb, xq, 10, m, chunk=77)
    full = ((xq[:, None].astype(np.float64) - xb[None]) ** 2).sum(-1) if metric == "l2" \
        else -(xq.astype(np.float64) @ xb.T.astype(np.float64))
    np.testing.assert_array_equal(I, np.argsort(full, axis=1, kind="stable")[:, :10])
    D32 = D.astype(np.float32)
    assert mg.check(xb, xq, D32, I, 10, m, n_check=20, seed=1) == []
    wrong_id = I.copy()
    wrong_id[4, 0] = I[4, 9] if I[4, 0] != I[4, 9] else I[4, 1]
    assert any("query 4: returned distances" in f for f in mg.check(xb, xq, D32, wrong_id, 10, m, 20, 1))
    shifted = I.copy()
    shifted[7] = np.argsort(full[7], kind="stable")[1:11]
    d_shifted = np.take_along_axis(full if metric == "l2" else -full, shifted, 1).astype(np.float32)
    D_bad = D32.copy()
    D_bad[7] = d_shifted[7]
    assert any("query 7: distances differ" in f for f in mg.check(xb, xq, D_bad, shifted, 10, m, 20, 1))


# --- carry_parts -------------------------------------------------------------------

def test_carry_parts_round_trip(tmp_path, rng):
    import shutil
    import carry_parts
    src = tmp_path / "dataset"
    src.mkdir()
    vecs_io.write_bvecs(str(src / "base.bvecs"), rng.integers(0, 256, (3000, 128), dtype=np.uint8))
    (src / "manifest.json").write_text('{"nb": 3000}')
    n = carry_parts.pack(str(src), str(tmp_path / "carry"), part_bytes=100_000)
    assert n == len(list((tmp_path / "carry").iterdir())) and n >= 3
    joined = tmp_path / "joined"
    joined.mkdir()
    for part in sorted((tmp_path / "carry").iterdir()):
        for f in part.iterdir():
            shutil.copy(f, joined / f.name)
    assert carry_parts.unpack(str(joined), str(tmp_path / "out")) == ["base.bvecs", "manifest.json"]
    for name in ("base.bvecs", "manifest.json"):
        assert (tmp_path / "out" / name).read_bytes() == (src / name).read_bytes()

    data = bytearray((joined / "data.01").read_bytes())
    data[10] ^= 1
    (joined / "data.01").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        carry_parts.unpack(str(joined), str(tmp_path / "out2"))
    (joined / "data.01").unlink()
    with pytest.raises(FileNotFoundError, match="missing parts data.01"):
        carry_parts.unpack(str(joined), str(tmp_path / "out3"))
