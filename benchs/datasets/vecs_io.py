"""Readers and writers for the vector file formats of ANN benchmarks, with numpy.

- .fvecs / .ivecs / .bvecs (TEXMEX, e.g. SIFT1M): every vector is a little-endian
  int32 dimension d followed by d components (float32 / int32 / uint8).
- .fbin / .ibin (big-ann-benchmarks): int32 n, int32 d, then n x d components
  (float32 / int32), row-major.

Readers return (n, d) arrays. With ``mmap=True`` the file is mapped, not read: the
result is a read-only view (for *vecs, a strided one that skips the per-row
dimension; ``np.ascontiguousarray`` makes a compact copy). Writers accept any 2-D
array of a dtype that converts to the format's without loss of meaning and write
in chunks, so a memory-mapped input is never loaded whole. Same layout as the C++
readers in VecsIO.h.
"""

import os

import numpy as np

_CHUNK_BYTES = 64 << 20


def _read_vecs(path, dtype, mmap):
    dtype = np.dtype(dtype)
    size = os.path.getsize(path)
    if size == 0:
        return np.zeros((0, 0), dtype)
    if size < 4:
        raise ValueError(f"{path}: {size} bytes is not a whole vector")
    d = int(np.fromfile(path, dtype="<i4", count=1)[0])
    if d <= 0 or d > (1 << 20):
        raise ValueError(f"{path}: bad dimension {d} in the first row")
    row = 4 + d * dtype.itemsize
    if size % row != 0:
        raise ValueError(
            f"{path}: size {size} is not a whole number of rows of {row} bytes (d={d})")
    n = size // row
    raw = np.memmap(path, dtype=np.uint8, mode="r") if mmap else np.fromfile(path, np.uint8)
    rows = raw.reshape(n, row)
    dims = rows[:, :4].view("<i4").ravel()
    bad = np.flatnonzero(dims != d)
    if bad.size:
        raise ValueError(f"{path}: row {bad[0]} has dimension {dims[bad[0]]}, not {d}")
    x = rows[:, 4:].view(dtype.newbyteorder("<"))
    return x if mmap else np.ascontiguousarray(x, dtype=dtype)


def _as_matrix(x, dtype, fmt):
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{fmt}: expected a 2-D array (n, d), got shape {x.shape}")
    dtype = np.dtype(dtype)
    if x.dtype != dtype:
        if dtype.kind == "f" and x.dtype.kind not in "fiu":
            raise TypeError(f"{fmt}: cannot write dtype {x.dtype} as {dtype}")
        if dtype.kind in "iu":
            if x.dtype.kind not in "iu":
                raise TypeError(f"{fmt}: expected integers, got dtype {x.dtype}")
            info = np.iinfo(dtype)
            if x.size and (x.min() < info.min or x.max() > info.max):
                raise ValueError(f"{fmt}: values outside the range of {dtype}")
    return x


def _write_vecs(path, x, dtype, fmt):
    x = _as_matrix(x, dtype, fmt)
    n, d = x.shape
    if n > 0 and d == 0:
        raise ValueError(f"{fmt}: vectors of dimension 0")
    dtype = np.dtype(dtype).newbyteorder("<")
    row = 4 + d * dtype.itemsize
    step = max(1, _CHUNK_BYTES // max(row, 1))
    header = np.array([d], "<i4").view(np.uint8)
    with open(path, "wb") as f:
        for i0 in range(0, n, step):
            chunk = np.asarray(x[i0:i0 + step], dtype=dtype)
            out = np.empty((len(chunk), row), np.uint8)
            out[:, :4] = header
            out[:, 4:] = chunk.view(np.uint8).reshape(len(chunk), -1)
            out.tofile(f)


def _read_bin(path, dtype, mmap):
    dtype = np.dtype(dtype).newbyteorder("<")
    size = os.path.getsize(path)
    if size < 8:
        raise ValueError(f"{path}: {size} bytes is shorter than the 8-byte header")
    n, d = (int(v) for v in np.fromfile(path, dtype="<i4", count=2))
    if n < 0 or d <= 0:
        raise ValueError(f"{path}: bad header n={n} d={d}")
    if size != 8 + n * d * dtype.itemsize:
        raise ValueError(f"{path}: size {size} does not match the header n={n} d={d}")
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, d))
    return np.fromfile(path, dtype=dtype, offset=8).reshape(n, d)


def _write_bin(path, x, dtype, fmt):
    x = _as_matrix(x, dtype, fmt)
    n, d = x.shape
    if n >= 2**31 or d >= 2**31:
        raise ValueError(f"{fmt}: shape {x.shape} does not fit the int32 header")
    dtype = np.dtype(dtype).newbyteorder("<")
    step = max(1, _CHUNK_BYTES // max(d * dtype.itemsize, 1))
    with open(path, "wb") as f:
        np.array([n, d], "<i4").tofile(f)
        for i0 in range(0, n, step):
            np.asarray(x[i0:i0 + step], dtype=dtype).tofile(f)


def read_fvecs(path, mmap=False):
    """(n, d) float32 array from an .fvecs file."""
    return _read_vecs(path, np.float32, mmap)


def read_ivecs(path, mmap=False):
    """(n, d) int32 array from an .ivecs file (e.g. ground-truth ids)."""
    return _read_vecs(path, np.int32, mmap)


def read_bvecs(path, mmap=False):
    """(n, d) uint8 array from a .bvecs file."""
    return _read_vecs(path, np.uint8, mmap)


def read_fbin(path, mmap=False):
    """(n, d) float32 array from an .fbin file."""
    return _read_bin(path, np.float32, mmap)


def read_ibin(path, mmap=False):
    """(n, d) int32 array from an .ibin file."""
    return _read_bin(path, np.int32, mmap)


def write_fvecs(path, x):
    _write_vecs(path, x, np.float32, "fvecs")


def write_ivecs(path, x):
    _write_vecs(path, x, np.int32, "ivecs")


def write_bvecs(path, x):
    _write_vecs(path, x, np.uint8, "bvecs")


def write_fbin(path, x):
    _write_bin(path, x, np.float32, "fbin")


def write_ibin(path, x):
    _write_bin(path, x, np.int32, "ibin")


def read_vectors(path, mmap=False):
    """Reads any of the formats, chosen by the file extension."""
    ext = os.path.splitext(path)[1].lstrip(".")
    readers = {"fvecs": read_fvecs, "ivecs": read_ivecs, "bvecs": read_bvecs,
               "fbin": read_fbin, "ibin": read_ibin}
    if ext not in readers:
        raise ValueError(f"{path}: unknown vector format .{ext} "
                         f"(expected one of {', '.join(sorted(readers))})")
    return readers[ext](path, mmap=mmap)


def write_vectors(path, x):
    """Writes any of the formats, chosen by the file extension."""
    ext = os.path.splitext(path)[1].lstrip(".")
    writers = {"fvecs": write_fvecs, "ivecs": write_ivecs, "bvecs": write_bvecs,
               "fbin": write_fbin, "ibin": write_ibin}
    if ext not in writers:
        raise ValueError(f"{path}: unknown vector format .{ext} "
                         f"(expected one of {', '.join(sorted(writers))})")
    writers[ext](path, x)
