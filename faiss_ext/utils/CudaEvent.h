// An owned CUDA event for ordering work across streams (no timing).
#pragma once

#include <cuda_runtime_api.h>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

class CudaEvent {
   public:
    CudaEvent() {
        FAISS_EXT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    }
    ~CudaEvent() {
        cudaEventDestroy(event_);
    }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    /// Marks the point `stream` has reached.
    void record(cudaStream_t stream) const {
        FAISS_EXT_CUDA_CHECK(cudaEventRecord(event_, stream));
    }
    /// Work queued on `stream` after this waits for the last recorded point.
    void waitOn(cudaStream_t stream) const {
        FAISS_EXT_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
    }

   private:
    cudaEvent_t event_ = nullptr;
};

} // namespace faiss_ext
