"""Deterministic synthetic datasets (numpy), the Python side of Synthetic.h.

Same model as the C++ generator (Gaussian blobs around centres uniform in [0, 1)^d),
but its own random streams: the numbers differ from the C++ ones, and are the same
on every machine for the same arguments (numpy's PCG64).
"""

import numpy as np


def centres(d, clusters=100, seed=1234):
    """The (clusters, d) float32 blob centres; they depend only on (d, clusters, seed)."""
    if d <= 0 or clusters <= 0:
        raise ValueError(f"need d > 0 and clusters > 0, got d={d} clusters={clusters}")
    rng = np.random.Generator(np.random.PCG64([seed, 0]))
    return rng.random((clusters, d), dtype=np.float32)


def clustered(n, d, clusters=100, spread=0.1, seed=1234, stream=0):
    """(n, d) float32 vectors drawn around `clusters` centres with standard deviation
    `spread`. Calls with the same (d, clusters, seed) share their centres; `stream`
    picks independent draws, e.g. stream 0 for the base and 1 for the queries."""
    if n < 0:
        raise ValueError(f"n={n} is negative")
    if stream < 0:
        raise ValueError(f"stream={stream} is negative")
    c = centres(d, clusters, seed)
    rng = np.random.Generator(np.random.PCG64([seed, stream + 1]))
    pick = rng.integers(0, clusters, size=n)
    noise = rng.standard_normal((n, d), dtype=np.float32)
    noise *= np.float32(spread)
    return c[pick] + noise


def uniform(n, d, seed=1234):
    """(n, d) float32 vectors uniform in [0, 1)."""
    if n < 0 or d <= 0:
        raise ValueError(f"need n >= 0 and d > 0, got n={n} d={d}")
    rng = np.random.Generator(np.random.PCG64([seed, 1 << 32]))
    return rng.random((n, d), dtype=np.float32)
