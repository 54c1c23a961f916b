// Turning CUDA and cuBLAS failures into faiss::FaissException, and the device guard.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <faiss/impl/FaissAssert.h>

/// Throws faiss::FaissException naming the failed call and CUDA's error string.
#define FAISS_EXT_CUDA_CHECK(call)                                         \
    do {                                                                   \
        cudaError_t err__ = (call);                                        \
        if (err__ != cudaSuccess) {                                        \
            (void)cudaGetLastError(); /* clear a sticky launch error */    \
            FAISS_THROW_FMT(                                               \
                    "CUDA error %d (%s) in %s",                            \
                    int(err__),                                            \
                    cudaGetErrorString(err__),                             \
                    #call);                                                \
        }                                                                  \
    } while (0)

/// Checks the launch that came just before (bad configuration, too much shared memory).
#define FAISS_EXT_CUDA_CHECK_LAUNCH() FAISS_EXT_CUDA_CHECK(cudaGetLastError())

#define FAISS_EXT_CUBLAS_CHECK(call)                                       \
    do {                                                                   \
        cublasStatus_t st__ = (call);                                      \
        if (st__ != CUBLAS_STATUS_SUCCESS) {                               \
            FAISS_THROW_FMT(                                               \
                    "cuBLAS error %d (%s) in %s",                          \
                    int(st__),                                             \
                    cublasGetStatusString(st__),                           \
                    #call);                                                \
        }                                                                  \
    } while (0)

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
