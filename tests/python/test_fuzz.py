"""Seeded fuzz of the module's edges: random shapes, dtypes, strides, k, params and
file bytes. Every call either succeeds with a correct answer or raises TypeError,
ValueError or FaissException; after a failure the index answers as before. Without a
device it exercises the argument checks and the file parsing (inspect_index, on files
written here from the format's description); with one, real indexes of every type.
FAISS_EXT_FUZZ_ROUNDS sets the number of calls per test (default 300, 30 under
compute-sanitizer, whose indexes are smaller too); FAISS_EXT_TEST_SEED replays a run."""

import os
import struct
import warnings

import numpy as np
import pytest

import faiss_ext
from conftest import small_under_sanitizer

ROUNDS = int(os.environ.get("FAISS_EXT_FUZZ_ROUNDS", small_under_sanitizer(300, 30)))
REFUSALS = (TypeError, ValueError, faiss_ext.FaissException)
MAX_K = faiss_ext.MAX_SEARCH_K


# --- random arguments ------------------------------------------------------------

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.uint16,
          np.bool_, np.complex64, object, ">f4", "<f8", "U3"]


def random_values(rng, shape):
    """Moderate values with, now and then, NaN, infinities, or float64 values past
    float32's range (infinite once converted)."""
    x = rng.standard_normal(shape) * rng.choice([0.1, 1.0, 30.0])
    if x.size and rng.random() < 0.3:
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, rng.integers(1, 4))] = rng.choice(
            [np.nan, np.inf, -np.inf, 1e300, -1e300])
    return x


def random_layout(rng, x):
    """The same values as C, Fortran, strided, reversed or a sliced view."""
    choice = rng.integers(0, 5)
    if choice == 1 and x.ndim >= 2:
        return np.asfortranarray(x)
    if choice == 2 and x.ndim >= 1:
        wide = np.repeat(x, 2, axis=0)
        return wide[::2]
    if choice == 3 and x.ndim >= 1:
        return x[::-1]
    if choice == 4 and x.ndim == 2:
        padded = np.concatenate([x, x[:, :1]], axis=1)
        return padded[:, :-1] if padded.shape[1] > 1 else padded
    return x


def random_vectors(rng, d, n_max=60):
    """A vectors argument: often a valid (n, d) array, else a wrong shape, dtype or
    Python type."""
    n = int(rng.integers(0, n_max))
    shapes = [(n, d)] * 6 + [(n, d + 1), (n, max(d - 1, 0)), (d,), (n, d, 1), (), (0, d)]
    shape = shapes[rng.integers(0, len(shapes))]
    r = rng.random()
    if r < 0.05:
        return [[0.0] * d] * max(n, 1)
    if r < 0.08:
        return rng.choice([None, 3.0, "x", b"1234"])
    dtype = DTYPES[rng.integers(0, len(DTYPES))] if rng.random() < 0.4 else np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow and NaN casts
        values = np.asarray(random_values(rng, shape))  # 0-d arrays stay arrays
        if dtype in (np.bool_, np.uint8, np.uint16, np.int32, np.int64):
            values = np.nan_to_num(values, nan=0, posinf=7, neginf=-7).clip(0, 200)
        x = values.astype(dtype) if dtype != "U3" else np.full(shape, "abc", dtype="U3")
    return random_layout(rng, x)


def vectors_accepted(x, d):
    """Whether _check_vectors(x, d) must accept x (the module's documented rules)."""
    return (isinstance(x, np.ndarray) and x.dtype.kind in "fiu" and x.ndim == 2
            and x.shape[1] == d)


def as_float32(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.ascontiguousarray(x, dtype=np.float32)


def random_k(rng):
    return rng.choice([1, 2, 10, 100, int(rng.integers(-3, MAX_K + 3)), 0, MAX_K, MAX_K + 1,
                       2.5, "3", None, 2**70])


# --- the file format, written here from its description (impl/IndexImage.h) ------

def _crc32c_table():
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def flat_file(x, metric, version):
    """A GpuIndexFlat file of format version 1 (no config, no checksums) or 4."""
    n, d = x.shape
    vectors = np.ascontiguousarray(x, dtype="<f4").tobytes()
    if version == 1:
        return (b"FXEXTIDX" + struct.pack("<IIiiq", 1, 1, d, metric, n) + vectors
                + b"FXEXTEND")
    header = b"FXEXTIDX" + struct.pack("<II", 4, 1)
    header += struct.pack("<I", crc32c(header))
    fields = struct.pack("<iiQIq", d, metric, 256 << 20, 0, n)

    def section(b):
        return struct.pack("<QI", len(b), crc32c(b + struct.pack("<Q", len(b)))) + b

    return header + section(fields) + section(vectors) + b"FXEXTEND"


def mutate(rng, data):
    """data with one random change: a flipped byte, a cut, bytes added or spliced."""
    b = bytearray(data)
    r = rng.integers(0, 5)
    if r == 0 and b:
        b[rng.integers(0, len(b))] ^= int(rng.integers(1, 256))
    elif r == 1:
        b = b[: rng.integers(0, len(b) + 1)]
    elif r == 2:
        b += bytes(rng.integers(0, 256, rng.integers(1, 9), dtype=np.uint8))
    elif r == 3 and len(b) > 8:
        i = int(rng.integers(0, len(b) - 8))
        b[i:i + 8] = rng.integers(0, 256, 8, dtype=np.uint8).tobytes()
    else:
        b = bytearray(rng.integers(0, 256, rng.integers(0, 200), dtype=np.uint8).tobytes())
    return bytes(b)


# --- without a device: argument checks and file parsing ---------------------------

def test_crc32c_here_matches_the_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_fuzz_argument_checks(rng):
    for _ in range(ROUNDS):
        d = int(rng.integers(1, 20))
        x = random_vectors(rng, d)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy's overflow in the float32 cast
                y = faiss_ext._check_vectors(x, d)
        except REFUSALS:
            assert not vectors_accepted(x, d), f"refused: {type(x)} {getattr(x, 'dtype', '')}"
        else:
            assert vectors_accepted(x, d), f"accepted: {type(x)} {getattr(x, 'dtype', '')}"
            assert y.dtype == np.float32 and y.flags.c_contiguous and y.shape == x.shape
            np.testing.assert_array_equal(y, as_float32(x))

        n = int(rng.integers(0, 10))
        ids = random_layout(rng, (np.arange(n + int(rng.integers(-1, 2))) * 3).astype(
            DTYPES[rng.integers(0, 8)]))
        try:
            out = faiss_ext._check_ids(ids, n)
        except REFUSALS:
            assert not (ids.dtype.kind in "iu" and ids.shape == (n,))
        else:
            assert ids.dtype.kind in "iu" and ids.shape == (n,)
            np.testing.assert_array_equal(out, ids.astype(np.int64))

        k = random_k(rng)
        try:
            faiss_ext._check_k(k)
        except REFUSALS:
            assert not (isinstance(k, (int, np.integer)) and 1 <= k <= MAX_K)
        else:
            assert isinstance(k, (int, np.integer)) and 1 <= k <= MAX_K


def test_fuzz_file_bytes_without_device(rng):
    for _ in range(ROUNDS // 3):
        n, d = int(rng.integers(0, 6)), int(rng.integers(1, 9))
        metric = int(rng.choice([faiss_ext.METRIC_L2, faiss_ext.METRIC_INNER_PRODUCT]))
        x = rng.standard_normal((n, d)).astype(np.float32)
        for version in (1, 4):
            data = flat_file(x, metric, version)
            info = faiss_ext.inspect_index(data)
            assert info == {"kind": "GpuIndexFlat", "version": version, "d": d,
                            "metric": metric, "ntotal": n}
            container = [bytes, bytearray, lambda b: np.frombuffer(b, np.uint8)][
                rng.integers(0, 3)]
            bad = mutate(rng, data)
            try:
                info = faiss_ext.inspect_index(container(bad))
            except REFUSALS as e:
                # Empty bytes are a ValueError of the argument; any other bytes are
                # parsed and refused by the format's checks.
                assert isinstance(e, faiss_ext.FaissException) or not bad, e
                continue
            # Accepted: a file without checksums whose change still makes sense, or
            # bytes equal to the original.
            assert version == 1 or bad == data, "a changed version 4 file was accepted"
            assert info["kind"] == "GpuIndexFlat" and 1 <= info["d"] <= 1 << 20
            if info["version"] in (1, 2):  # the same layout: header, 3 fields, vectors, end
                assert 16 + 16 + info["ntotal"] * info["d"] * 4 + 8 == len(bad)
        # Every single flipped byte of the version 4 file is refused.
        data = flat_file(x, metric, 4)
        pos = int(rng.integers(0, len(data)))
        flipped = bytearray(data)
        flipped[pos] ^= int(rng.integers(1, 256))
        with pytest.raises(faiss_ext.FaissException):
            faiss_ext.inspect_index(bytes(flipped))
    for wrong in ([1, 2, 3], "FXEXTIDX", None, np.zeros((2, 3), np.uint8),
                  np.zeros(4, np.float32)):
        with pytest.raises(REFUSALS):
            faiss_ext.inspect_index(wrong)


# --- with a device: real indexes --------------------------------------------------

class Fuzzed:
    """One index and what it must hold, with a fixed probe search to show that a
    failed call left it as it was."""

    def __init__(self, res, rng, kind, metric):
        self.kind, self.metric = kind, metric
        self.d = int(rng.integers(1, 40))
        nb = int(rng.integers(200, small_under_sanitizer(1500, 400)))
        xb = rng.random((nb, self.d), dtype=np.float32)
        if kind == "flat":
            self.index = faiss_ext.GpuIndexFlat(res, self.d, metric)
        elif kind == "ivf":
            self.nlist = int(rng.integers(1, 20))
            self.index = faiss_ext.GpuIndexIVFFlat(res, self.d, self.nlist, metric)
            self.index.train(xb)
            self.index.nprobe = self.nlist
        else:
            self.index = faiss_ext.GpuIndexBang(res, self.d, 24, build_candidates=24)
        self.index.add(xb)
        self.xb, self.ids = xb, np.arange(nb, dtype=np.int64)
        self.next_id = 10**9
        self.probe = rng.random((5, self.d), dtype=np.float32)
        self.snapshot()

    def snapshot(self):
        self.before = (self.index.ntotal,) + self.index.search(self.probe, 7)

    def expect_unchanged(self, what):
        after = (self.index.ntotal,) + self.index.search(self.probe, 7)
        assert after[0] == self.before[0], f"{what}: ntotal changed"
        np.testing.assert_array_equal(after[1], self.before[1], err_msg=what)
        np.testing.assert_array_equal(after[2], self.before[2], err_msg=what)

    def missing(self):
        return np.inf if self.metric == faiss_ext.METRIC_L2 else -np.inf


def check_answer(f, xq, k, D, I, exact):
    """The answer of a successful search: non-finite queries get only missing
    results; the others stored ids, sorted, at their true distances, and the exact
    k best when `exact`."""
    from test_gpu_flat import brute_force

    nq = len(xq)
    assert D.shape == I.shape == (nq, k) and D.dtype == np.float32 and I.dtype == np.int64
    finite = np.isfinite(xq).all(axis=1)
    assert (I[~finite] == -1).all() and (D[~finite] == f.missing()).all()
    if not finite.any():
        return
    xq, D, I = xq[finite], D[finite], I[finite]
    ref_d, _, dist = brute_force(f.xb, xq, min(k, len(f.xb)), f.metric)
    row_of = {int(i): r for r, i in enumerate(f.ids)}
    for q in range(len(xq)):
        found = I[q] >= 0
        kk = int(found.sum())
        assert found[:kk].all() and (D[q, kk:] == f.missing()).all(), "holes in a row"
        rows = [row_of[int(i)] for i in I[q, :kk]]  # KeyError: an id never stored
        assert len(set(rows)) == kk, "repeated id"
        scale = 1e-3 * (1 + np.abs(dist[q]).max())
        np.testing.assert_allclose(D[q, :kk], dist[q, rows], atol=scale, rtol=1e-4)
        order = D[q, :kk] if f.metric == faiss_ext.METRIC_L2 else -D[q, :kk]
        assert (np.diff(order) >= -scale).all(), "not sorted best first"
        if exact:
            assert kk == min(k, len(f.xb))
            np.testing.assert_allclose(D[q, :kk], ref_d[q, :kk], atol=scale, rtol=1e-4)


def random_params(rng, f):
    r = rng.integers(0, 6)
    if r == 0:
        return faiss_ext.SearchParameters(), True
    if r == 1:
        nprobe = int(rng.integers(0, 30))
        return faiss_ext.SearchParametersIVF(nprobe=nprobe), f.kind != "ivf" or nprobe >= f.nlist
    if r == 2:
        return faiss_ext.SearchParametersBang(search_L=int(rng.integers(-2, 3000))), True
    if r == 3:
        return rng.choice(["nprobe=3", 5]), True
    return None, True


def fuzz_one_call(f, rng, res):
    op = rng.integers(0, 10)
    if op < 5:  # search
        x, k = random_vectors(rng, f.d), random_k(rng)
        params, exact = random_params(rng, f)
        exact = exact and f.kind != "bang"
        try:
            D, I = f.index.search(x, k, params=params)
        except REFUSALS:
            f.expect_unchanged("failed search")
            return
        assert vectors_accepted(x, f.d), "search accepted a bad array"
        assert isinstance(k, int) and 1 <= k <= MAX_K, f"search accepted k={k!r}"
        check_answer(f, as_float32(x), int(k), D, I, exact)
    elif op < 8:  # add / add_with_ids
        x = random_vectors(rng, f.d, n_max=40)
        with_ids = rng.random() < 0.5
        try:
            if with_ids:
                n = len(x) if isinstance(x, np.ndarray) and x.ndim else 0
                ids = np.arange(f.next_id, f.next_id + n, dtype=np.int64)
                if n and rng.random() < 0.2:
                    ids[rng.integers(0, n)] = -1
                f.index.add_with_ids(x, ids)
            else:
                f.index.add(x)
        except REFUSALS:
            f.expect_unchanged("failed add")
            return
        x = as_float32(x)
        assert np.isfinite(x).all(), "add accepted a non-finite vector"
        assert not with_ids or f.kind == "ivf" or len(x) == 0, "add_with_ids accepted"
        new_ids = ids if with_ids else np.arange(len(f.ids), len(f.ids) + len(x))
        assert (new_ids != -1).all()
        f.next_id += len(x)
        f.xb, f.ids = np.concatenate([f.xb, x]), np.concatenate([f.ids, new_ids])
        f.snapshot()
    else:  # file bytes
        data = faiss_ext.serialize_index(f.index)
        bad = mutate(rng, data)
        try:
            loaded = faiss_ext.deserialize_index(bad, res)
        except REFUSALS as e:
            assert isinstance(e, faiss_ext.FaissException) or not bad, e
            f.expect_unchanged("failed load")
            return
        assert bad == data, "changed bytes were loaded"
        np.testing.assert_array_equal(loaded.search(f.probe, 7)[1], f.before[2])


@pytest.mark.gpu
@pytest.mark.parametrize("kind,metric", [
    ("flat", faiss_ext.METRIC_L2), ("flat", faiss_ext.METRIC_INNER_PRODUCT),
    ("ivf", faiss_ext.METRIC_L2), ("ivf", faiss_ext.METRIC_INNER_PRODUCT),
    ("bang", faiss_ext.METRIC_L2)])
def test_fuzz_indexes(res, rng, kind, metric):
    f = Fuzzed(res, rng, kind, metric)
    print(f"{kind} d={f.d} ntotal={f.index.ntotal}")
    for _ in range(ROUNDS // 3 if kind == "bang" else ROUNDS):
        fuzz_one_call(f, rng, res)
