// Opting a kernel in to more dynamic shared memory, safely from several host threads.
#pragma once

#include <map>
#include <mutex>
#include <utility>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {
namespace kernels {

/// Lets `kernel` launch with `bytes` of dynamic shared memory on the current device:
/// nothing to do up to 48 KiB (every kernel's default); above, raises its limit to at
/// least `bytes`, never lowering it. The limit is one process-wide attribute per kernel and
/// device: setting it to each launch's own size lets one host thread lower it between
/// another thread's setting and launch, which then fails with "invalid argument". The
/// limit set so far is remembered per (kernel, device), so a launch that fits costs a
/// lock and a lookup, not a driver call.
template <typename Kernel>
void raiseDynamicSmemLimit(Kernel kernel, size_t bytes) {
    constexpr size_t kDefaultLimit = 48 * 1024;
    if (bytes <= kDefaultLimit) {
        return;
    }
    static std::mutex mutex;
    static std::map<std::pair<const void*, int>, size_t> raised;
    int device = 0;
    FAISS_EXT_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex);
    size_t& limit = raised[{reinterpret_cast<const void*>(kernel), device}];
    if (bytes > limit) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
        limit = bytes;
    }
}

} // namespace kernels
} // namespace faiss_ext
