// Keeps one device buffer in the L2 cache for the kernels of one stream: a GEMM's output
// tile that the next kernel reads at once, so that neither goes to DRAM.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace faiss_ext {

/// While alive, accesses of the kernels queued on `stream` to [base, base + bytes)
/// persist in L2 (CUDA's access policy window, over a set-aside of L2 raised for the
/// purpose). The destructor removes the window, demotes the persisting lines and puts
/// the device's set-aside back as it was. Where the device has no such set-aside (or
/// refuses it) the guard does nothing: the same work runs, from DRAM.
class L2Residency {
   public:
    L2Residency(int device, cudaStream_t stream, void* base, size_t bytes);
    ~L2Residency();
    L2Residency(const L2Residency&) = delete;
    L2Residency& operator=(const L2Residency&) = delete;

    /// The largest buffer the device can keep resident (0: none).
    static size_t maxBytes(int device);

    /// Whether the window is in place.
    bool active() const {
        return active_;
    }

   private:
    cudaStream_t stream_;
    size_t previousSetAside_ = 0;
    bool active_ = false;
};

} // namespace faiss_ext
