// Arrays in CUDA device memory handed to the module: objects with DLPack
// (__dlpack__ / __dlpack_device__: PyTorch, CuPy, JAX, ...) or
// __cuda_array_interface__ (CuPy, Numba, ...), read in place; and the result arrays
// made by the caller's framework (CuPy in, CuPy out; PyTorch in, PyTorch out). No
// framework is imported unless the caller hands in one of its arrays.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>

#include "numpy_util.h"

namespace faiss_ext {
namespace python {

namespace py = pybind11;

/// A caller's array in device memory: described and pointed at, not copied.
struct DeviceArray {
    py::object object;  ///< the array read (the caller's, or its converted copy)
    py::object capsule; ///< the DLPack capsule keeping the memory alive, if read by DLPack
    ArrayDesc desc;
    void* data = nullptr;
    int itemsize = 0;
    bool cContiguous = true;
};

/// Whether x lies in CUDA memory: its __dlpack_device__ is CUDA (or CUDA managed), or
/// it has __cuda_array_interface__.
bool isDeviceArray(py::handle x);

/// Reads x (isDeviceArray) through __cuda_array_interface__ where it names the
/// producer's stream (`stream` then waits for it), else through DLPack where x offers
/// it (the producer orders its pending work before `stream`), else through the
/// interface alone.
DeviceArray readDeviceArray(py::handle x, cudaStream_t stream);

/// x as C-contiguous float32 (n, d) vectors under the numpy rules (checkVectorsDesc);
/// another real dtype or layout is converted on the device by x's own framework (CuPy
/// or PyTorch; TypeError for an array of another framework).
DeviceArray deviceVectors(py::handle x, int64_t d, cudaStream_t stream, const char* what);

/// x as C-contiguous int64 (n,) ids under the numpy rules (checkIdsDesc), converted
/// likewise.
DeviceArray deviceIds(py::handle x, int64_t n, cudaStream_t stream, const char* what);

/// An uninitialised C-contiguous (n, k) array of `dtype` ("float32" or "int64") on CUDA
/// device `device`, made by the framework `like` comes from (CuPy or PyTorch; TypeError
/// for others).
py::object emptyDeviceLike(
        py::handle like,
        int64_t n,
        int64_t k,
        const char* dtype,
        int device,
        const char* what);

} // namespace python
} // namespace faiss_ext
