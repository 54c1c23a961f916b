"""The id filters of compare_peers.py's filtered family, and each one in the form every
system takes it.

The filters are bench_filtered.cpp's: for each fraction of the nb ids (50%, 10%, 1%)
a random set (nested: each a prefix of one seeded permutation, so the 1% set lies in the
10% one and that in the 50% one) and a contiguous range centred in [0, nb). The random
sets are numpy's permutation, not bench_filtered's std::shuffle: the same construction,
other ids.

One filter, three forms of the same allowed ids:
  faiss_ext  IDSelectorBitmap: uint8 bytes, id i allowed when bit i % 8 of byte i // 8 is
             set (faiss's layout); IDSelectorRange(imin, imax) for a range
  cuVS       cuvs.neighbors.filters.from_bitset: uint32 words on the device, id i
             allowed when bit i % 32 of word i // 32 is set (1 = kept, 0 = filtered out)
  host       the sorted int64 ids, for the exact ground truth and its check
On a little-endian host the cuVS words are the faiss bytes read four at a time, so both
come from one np.packbits(bitorder="little").

Pure numpy: the tests run it without a GPU (tests/python/test_compare_peers.py).
"""

import math

import numpy as np

FRACTIONS = (0.5, 0.1, 0.01)
KINDS = ("random", "range")
RANDOM_SEED = 19          # bench_filtered's seed (its generator differs: other ids)


def allowed_count(fraction, nb):
    """round(fraction * nb), halves up, as bench_filtered's std::llround."""
    return int(math.floor(fraction * nb + 0.5))


def fmt_fraction(fraction):
    return f"{100 * fraction:g}%"


class Filter:
    """One filter: kind ("random" or "range"), fraction, allowed (count); ids() the sorted
    allowed ids; for a range, imin / imax (allowed: imin <= id < imax)."""

    def __init__(self, kind, fraction, nb, ids=None, imin=None, imax=None):
        self.kind, self.fraction, self.nb = kind, fraction, nb
        self._ids, self.imin, self.imax = ids, imin, imax
        self.allowed = len(ids) if ids is not None else imax - imin

    @property
    def name(self):
        return f"{self.kind} {fmt_fraction(self.fraction)}"

    @property
    def key(self):
        """(kind, fraction): how rows of the report name their filter."""
        return (self.kind, self.fraction)

    def ids(self):
        if self._ids is None:
            return np.arange(self.imin, self.imax, dtype=np.int64)
        return self._ids

    def mask(self):
        """nb booleans, True where the id is allowed."""
        m = np.zeros(self.nb, dtype=bool)
        m[self.ids()] = True
        return m

    def bitmap(self):
        """faiss (and faiss_ext) IDSelectorBitmap bytes."""
        return pack_bitmap(self.mask())

    def bitset_words(self):
        """cuVS bitset words (uint32, on the host: the caller copies them to the device)."""
        return bitset_words(self.mask())


def make_filters(nb, fractions=FRACTIONS, kinds=KINDS, seed=RANDOM_SEED):
    """The random filters (nested, one permutation) then the ranges (centred), each in
    the order of `fractions`, as bench_filtered's table."""
    out = []
    if "random" in kinds:
        perm = np.random.default_rng(seed).permutation(nb).astype(np.int64)
        for f in fractions:
            out.append(Filter("random", f, nb, ids=np.sort(perm[:allowed_count(f, nb)])))
    if "range" in kinds:
        for f in fractions:
            n = allowed_count(f, nb)
            imin = (nb - n) // 2
            out.append(Filter("range", f, nb, imin=imin, imax=imin + n))
    return out


def pack_bitmap(mask):
    """Bit i % 8 of byte i // 8 set where mask[i] (faiss's IDSelectorBitmap)."""
    return np.packbits(np.asarray(mask, dtype=bool), bitorder="little")


def bitset_words(mask):
    """Bit i % 32 of uint32 word i // 32 set where mask[i] (cuVS's bitset: 1 = kept);
    ceil(n / 32) words."""
    b = pack_bitmap(mask)
    pad = (-len(b)) % 4
    if pad:
        b = np.concatenate([b, np.zeros(pad, dtype=np.uint8)])
    return b.view("<u4").astype(np.uint32)


def unpack_words(words, n):
    """The n booleans of a cuVS bitset (the inverse of bitset_words)."""
    w = np.asarray(words, dtype="<u4")
    return np.unpackbits(w.view(np.uint8), bitorder="little")[:n].astype(bool)
