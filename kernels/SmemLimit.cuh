// Opting a kernel in to more than 48 KiB of dynamic shared memory, safely from several
// host threads.
#pragma once

#include <mutex>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {
namespace kernels {

/// Raises `kernel`'s dynamic shared memory limit on the current device to at least
/// `bytes`, never lowering it. The limit is one process-wide attribute per kernel and
/// device: setting it to each launch's own size lets one host thread lower it between
/// another thread's setting and launch, which then fails with "invalid argument".
template <typename Kernel>
void raiseDynamicSmemLimit(Kernel kernel, size_t bytes) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    cudaFuncAttributes attr;
    FAISS_EXT_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    if (bytes > size_t(attr.maxDynamicSharedSizeBytes)) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    }
}

} // namespace kernels
} // namespace faiss_ext
