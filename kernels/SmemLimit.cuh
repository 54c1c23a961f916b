// Opting a kernel in to more dynamic shared memory, safely from several host threads.
#pragma once

#include <map>
#include <mutex>
#include <utility>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {
namespace kernels {

/// Lets `kernel` launch with `bytes` of dynamic shared memory on the current device. A
/// kernel's default limit is 48 KiB less its static shared memory (a kernel with 16 KiB
/// of static arrays takes at most 32 KiB more unless raised), so the limit is read from
/// the kernel once and raised when `bytes` is above it, never lowered. The limit is one
/// process-wide attribute per kernel and device: setting it to each launch's own size
/// lets one host thread lower it between another thread's setting and launch, which then
/// fails with "invalid argument". The limit so far is remembered per (kernel, device), so
/// a launch that fits costs a lock and a lookup, not a driver call.
template <typename Kernel>
void raiseDynamicSmemLimit(Kernel kernel, size_t bytes) {
    static std::mutex mutex;
    static std::map<std::pair<const void*, int>, size_t> limits;
    int device = 0;
    FAISS_EXT_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex);
    const std::pair<const void*, int> key{reinterpret_cast<const void*>(kernel), device};
    auto it = limits.find(key);
    if (it == limits.end()) {
        cudaFuncAttributes attr;
        FAISS_EXT_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
        it = limits.emplace(key, size_t(attr.maxDynamicSharedSizeBytes)).first;
    }
    if (bytes > it->second) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
        it->second = bytes;
    }
}

} // namespace kernels
} // namespace faiss_ext
