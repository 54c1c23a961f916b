// Turning CUDA and cuBLAS failures into faiss::FaissException. Plain C++ over the CUDA
// runtime API: included by kernels/, impl/ and the index classes alike.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <faiss/impl/FaissAssert.h>

/// Throws faiss::FaissException naming the failed call and CUDA's error string.
#define FAISS_EXT_CUDA_CHECK(call)                                                             \
    do {                                                                                       \
        cudaError_t err__ = (call);                                                            \
        if (err__ != cudaSuccess) {                                                            \
            (void)cudaGetLastError(); /* clear a sticky launch error */                        \
            FAISS_THROW_FMT(                                                                   \
                    "CUDA error %d (%s) in %s", int(err__), cudaGetErrorString(err__), #call); \
        }                                                                                      \
    } while (0)

/// Checks the launch that came just before (bad configuration, too much shared memory).
#define FAISS_EXT_CUDA_CHECK_LAUNCH() FAISS_EXT_CUDA_CHECK(cudaGetLastError())

#define FAISS_EXT_CUBLAS_CHECK(call)                                                              \
    do {                                                                                          \
        cublasStatus_t st__ = (call);                                                             \
        if (st__ != CUBLAS_STATUS_SUCCESS) {                                                      \
            FAISS_THROW_FMT(                                                                      \
                    "cuBLAS error %d (%s) in %s", int(st__), cublasGetStatusString(st__), #call); \
        }                                                                                         \
    } while (0)
