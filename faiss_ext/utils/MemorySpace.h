// Where a caller's array lives: the one test every entry point that takes host or
// device memory makes (cudaPointerGetAttributes, as FAISS's GPU indexes do).
#pragma once

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

enum class MemorySpace {
    kHost,   ///< pageable or pinned host memory: copied through device pages
    kDevice, ///< device (or managed) memory that kernels on `device` read in place
};

/// The memory space of p for an index on CUDA device `device`. Throws when p is
/// device memory of another device (`what` names the argument in the message).
inline MemorySpace memorySpaceOf(const void* p, int device, const char* what) {
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        (void)cudaGetLastError(); // plain host memory on old drivers
        return MemorySpace::kHost;
    }
    if (attr.type == cudaMemoryTypeManaged) {
        return MemorySpace::kDevice;
    }
    if (attr.type != cudaMemoryTypeDevice) {
        return MemorySpace::kHost;
    }
    FAISS_THROW_IF_NOT_FMT(
            attr.device == device,
            "%s: device memory of CUDA device %d, but the index is on device %d", what, attr.device,
            device);
    return MemorySpace::kDevice;
}

} // namespace faiss_ext
