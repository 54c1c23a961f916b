"""The argument rules for device arrays, without a device: objects that describe
themselves through __cuda_array_interface__ (as CuPy arrays or Numba device arrays do)
get numpy's checks and errors, are read in place when they are C-contiguous float32,
and are refused when another framework would have to convert them."""

import numpy as np
import pytest

import faiss_ext


class FakeDeviceArray:
    """A CUDA array interface over a numpy array's memory (never dereferenced here)."""

    def __init__(self, a, strides=None, **extra):
        self.base = a
        self.__cuda_array_interface__ = dict(
            shape=a.shape, typestr=a.dtype.str, data=(a.ctypes.data, False),
            strides=strides, version=2, **extra)


def test_c_contiguous_float32_is_read_in_place():
    a = np.zeros((5, 4), np.float32)
    assert faiss_ext._check_device_vectors(FakeDeviceArray(a), 4) == (a.ctypes.data, 5)
    # Explicit C strides, and any stride on an axis of extent 1.
    assert faiss_ext._check_device_vectors(FakeDeviceArray(a, strides=(16, 4)), 4)[1] == 5
    one = np.zeros((1, 4), np.float32)
    assert faiss_ext._check_device_vectors(FakeDeviceArray(one, strides=(4096, 4)), 4)[1] == 1


@pytest.mark.parametrize("dtype", [bool, np.complex64])
def test_non_real_dtypes_are_type_errors(dtype):
    with pytest.raises(TypeError, match="add: expected float32 vectors, got dtype"):
        faiss_ext._check_device_vectors(FakeDeviceArray(np.zeros((2, 4), dtype)), 4, "add")


def test_shapes_are_value_errors_as_for_numpy():
    with pytest.raises(ValueError, match=r"got shape \(4,\).*reshape\(1, -1\)"):
        faiss_ext._check_device_vectors(FakeDeviceArray(np.zeros(4, np.float32)), 4)
    with pytest.raises(ValueError, match=r"got shape \(2, 2, 1\)"):
        faiss_ext._check_device_vectors(FakeDeviceArray(np.zeros((2, 2, 1), np.float32)), 4)
    with pytest.raises(ValueError, match="search: vectors have dimension 5 but the index has d=4"):
        faiss_ext._check_device_vectors(FakeDeviceArray(np.zeros((3, 5), np.float32)), 4, "search")


def test_conversions_of_unknown_frameworks_are_refused():
    with pytest.raises(TypeError, match="converts CuPy and PyTorch device arrays only"):
        faiss_ext._check_device_vectors(FakeDeviceArray(np.zeros((2, 4), np.float64)), 4)
    with pytest.raises(TypeError, match="not C-contiguous float32"):
        faiss_ext._check_device_vectors(
            FakeDeviceArray(np.zeros((2, 4), np.float32), strides=(4, 8)), 4)


def test_masked_arrays_are_refused():
    with pytest.raises(TypeError, match="masked device arrays are not supported"):
        faiss_ext._check_device_vectors(
            FakeDeviceArray(np.zeros((2, 4), np.float32), mask=(0, False)), 4)
