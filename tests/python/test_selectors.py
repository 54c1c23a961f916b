"""The module's IDSelectors and the `sel` of its SearchParameters (no device needed)."""

import numpy as np
import pytest

import faiss_ext


def test_selectors_select_what_faiss_would():
    assert faiss_ext.IDSelectorRange(3, 6).is_member(3)
    assert not faiss_ext.IDSelectorRange(3, 6).is_member(6)
    batch = faiss_ext.IDSelectorBatch(np.array([5, 9, 1000000007], dtype=np.int64))
    assert [batch.is_member(i) for i in (5, 6, 9, 1000000007)] == [True, False, True, True]
    bits = np.zeros(2, dtype=np.uint8)
    bits[1] = 0b100  # id 10
    bitmap = faiss_ext.IDSelectorBitmap(bits)
    assert [bitmap.is_member(i) for i in (9, 10, 11, 16)] == [False, True, False, False]
    inner = faiss_ext.IDSelectorRange(0, 4)
    assert faiss_ext.IDSelectorNot(inner).is_member(4)
    assert not faiss_ext.IDSelectorNot(inner).is_member(2)
    assert faiss_ext.IDSelectorAll().is_member(123)


def test_selectors_copy_their_arrays():
    ids = np.array([1, 2], dtype=np.int64)
    batch = faiss_ext.IDSelectorBatch(ids)
    ids[:] = 7
    assert batch.is_member(1) and not batch.is_member(7)


def test_bad_selector_arrays_are_refused():
    with pytest.raises(ValueError):
        faiss_ext.IDSelectorBatch(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises((ValueError, TypeError)):
        faiss_ext.IDSelectorBitmap(np.zeros((2, 2), dtype=np.uint8))


def test_search_parameters_keep_their_selector():
    def make():
        return faiss_ext.SearchParametersIVF(nprobe=3, sel=faiss_ext.IDSelectorRange(0, 5))

    params = make()  # the selector has no other reference
    assert params.nprobe == 3 and params.sel.is_member(4) and not params.sel.is_member(5)
    bang = faiss_ext.SearchParametersBang(search_L=20, sel=faiss_ext.IDSelectorRange(1, 2))
    assert bang.sel.is_member(1)
    plain = faiss_ext.SearchParameters()
    assert plain.sel is None
    plain.sel = faiss_ext.IDSelectorRange(0, 1)
    assert plain.sel.is_member(0)
