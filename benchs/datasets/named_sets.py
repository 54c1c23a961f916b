"""The data sets of benchs/compare_peers.py, by name.

    sift            1M x 128 real SIFT descriptors from Debian's wallpapers (L2), files
                    made by make_sift_wallpapers.py (default folder /tmp/sift-wallpapers)
    clustered768    500K x 768 synthetic Gaussian blobs (L2), generated in memory in
                    seconds, the same numbers on every machine (synthetic.clustered)
    minilm          real text embeddings (inner product, unit vectors): all-MiniLM-L6-v2
                    over sentences of Debian's documentation, files made by
                    make_text_corpus.py + embed_text.py (default folder /tmp/minilm-debian)
    clustered:N:D[:NQ]   any synthetic size (tests, smoke runs)

load() returns a DataSet with float32 C-contiguous base and query arrays, the metric
("l2" or "ip"), a suggested nlist and a SHA-256 of the vectors as loaded.
"""

import hashlib
import os
from dataclasses import dataclass, field

import numpy as np

import synthetic
import vecs_io


@dataclass
class DataSet:
    name: str
    xb: np.ndarray
    xq: np.ndarray
    metric: str            # "l2" or "ip"
    nlist: int             # IVF lists used unless the command line says otherwise
    source: str            # one line: what it is and where it came from
    notes: list = field(default_factory=list)

    @property
    def nb(self):
        return self.xb.shape[0]

    @property
    def nq(self):
        return self.xq.shape[0]

    @property
    def d(self):
        return self.xb.shape[1]

    def sha256(self):
        """SHA-256 of the float32 base then query bytes (the vectors the run used)."""
        h = hashlib.sha256()
        for x in (self.xb, self.xq):
            flat = x.reshape(-1)
            step = 1 << 26                      # hash in 256 MiB pieces, no big copy
            for i in range(0, flat.size, step):
                h.update(flat[i:i + step].tobytes())
        return h.hexdigest()


# File sets: file names inside their folder, metric, nlist, description.
FILE_SETS = {
    "sift": dict(folder="/tmp/sift-wallpapers", base=("base.bvecs", "base.fvecs"),
                 query=("query.bvecs", "query.fvecs"), metric="l2", nlist=4096,
                 source="real SIFT descriptors from Debian 12's wallpaper pictures "
                        "(benchs/datasets/README.md, make_sift_wallpapers.py)"),
    "minilm": dict(folder="/tmp/minilm-debian", base=("base.fbin",), query=("query.fbin",),
                   metric="ip", nlist=4096,
                   source="all-MiniLM-L6-v2 embeddings (unit length) of sentences from "
                          "Debian 12 documentation packages (benchs/datasets/README.md, "
                          "make_text_corpus.py + embed_text.py)"),
}

# Synthetic sets: generator arguments. clustered768 is the shape of the issue tables
# (500K x 768) with the blob model of the first peer tables (1000 blobs, spread 0.1, seed 1).
SYNTHETIC_SETS = {
    "clustered768": dict(nb=500_000, nq=10_000, d=768, clusters=1000, spread=0.1, seed=1,
                         nlist=2048),
}

NAMES = sorted(FILE_SETS) + sorted(SYNTHETIC_SETS) + ["clustered:N:D[:NQ]"]


def default_nlist(nb):
    """About 4 sqrt(nb) lists, a power of two, at least 1 and at most nb."""
    n = 1
    while n * 2 <= 4 * np.sqrt(nb):
        n *= 2
    return max(1, min(n, nb))


def _first_existing(folder, names):
    for n in names:
        p = os.path.join(folder, n)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{folder}: none of {', '.join(names)} (see benchs/datasets/README.md)")


def _truncate(x, n):
    return x if n is None or n >= x.shape[0] else x[:n]


def parse_synthetic_spec(name):
    """'clustered:N:D[:NQ]' -> dict of generator arguments, or None for other names."""
    if not name.startswith("clustered:"):
        return None
    parts = name.split(":")[1:]
    if len(parts) not in (2, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"bad synthetic data set {name!r}: use clustered:N:D or clustered:N:D:NQ")
    nb, d = int(parts[0]), int(parts[1])
    nq = int(parts[2]) if len(parts) == 3 else min(10_000, max(1, nb // 10))
    return dict(nb=nb, nq=nq, d=d, clusters=max(1, min(1000, nb // 100)), spread=0.1,
                seed=1, nlist=default_nlist(nb))


def load(name, folder=None, nb=None, nq=None):
    """The data set called name; nb / nq keep only the first vectors of each."""
    if name in FILE_SETS:
        spec = FILE_SETS[name]
        folder = folder or spec["folder"]
        base_path = _first_existing(folder, spec["base"])
        query_path = _first_existing(folder, spec["query"])
        xb = _truncate(vecs_io.read_vectors(base_path, mmap=True), nb)
        xq = _truncate(vecs_io.read_vectors(query_path, mmap=True), nq)
        xb = np.array(xb, dtype=np.float32, order="C")    # in memory, not mapped
        xq = np.array(xq, dtype=np.float32, order="C")
        ds = DataSet(name, xb, xq, spec["metric"], spec["nlist"],
                     f"{spec['source']}: {base_path}, {query_path}")
        if spec["metric"] == "ip":
            norms = np.linalg.norm(xb[:10_000], axis=1)
            ds.notes.append(f"base norms (first 10K) in [{norms.min():.4f}, {norms.max():.4f}]")
        return ds
    spec = SYNTHETIC_SETS.get(name) or parse_synthetic_spec(name)
    if spec is None:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(NAMES)}")
    n_base = spec["nb"] if nb is None else min(nb, spec["nb"])
    n_query = spec["nq"] if nq is None else min(nq, spec["nq"])
    args = dict(clusters=spec["clusters"], spread=spec["spread"], seed=spec["seed"])
    xb = synthetic.clustered(n_base, spec["d"], stream=0, **args)
    xq = synthetic.clustered(n_query, spec["d"], stream=1, **args)
    src = (f"synthetic.clustered(n, d={spec['d']}, clusters={spec['clusters']}, "
           f"spread={spec['spread']}, seed={spec['seed']}), base stream 0, queries stream 1")
    return DataSet(name, xb, xq, "l2", spec["nlist"], src)
