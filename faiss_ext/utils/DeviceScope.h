// The device guard every public method starts with.
#pragma once

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

/// Sets the current CUDA device for the lifetime of the guard, then restores it.
class DeviceScope {
   public:
    explicit DeviceScope(int device) {
        FAISS_EXT_CUDA_CHECK(cudaGetDevice(&previous_));
        if (previous_ != device) {
            FAISS_EXT_CUDA_CHECK(cudaSetDevice(device));
        }
        device_ = device;
    }
    ~DeviceScope() {
        if (previous_ != device_) {
            cudaSetDevice(previous_);
        }
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

   private:
    int previous_ = 0;
    int device_ = 0;
};

} // namespace faiss_ext
