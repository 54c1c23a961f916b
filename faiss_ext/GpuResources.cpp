#include <faiss_ext/GpuResources.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <faiss_ext/impl/PinnedStaging.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

int GpuResources::deviceCount() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

GpuResources::GpuResources(GpuResourcesConfig config)
        : config_(config), staging_(std::make_unique<PinnedStaging>()) {
    int n = deviceCount();
    FAISS_THROW_IF_NOT_FMT(
            n > 0, "no CUDA device is available (asked for device %d)", config.device);
    FAISS_THROW_IF_NOT_FMT(
            config.device >= 0 && config.device < n,
            "CUDA device %d does not exist (%d device(s) found)", config.device, n);
    FAISS_THROW_IF_NOT_FMT(
            config.tempMemoryBytes >= (size_t(16) << 20),
            "tempMemoryBytes %zu is below the 16 MiB minimum", config.tempMemoryBytes);
    const char* plain = std::getenv("FAISS_EXT_PLAIN_PRODUCTS");
    if (plain != nullptr && std::strcmp(plain, "1") == 0) {
        config_.plainProducts = true;
    }
    DeviceScope scope(config.device);

    cudaDeviceProp prop;
    FAISS_EXT_CUDA_CHECK(cudaGetDeviceProperties(&prop, config.device));
    smCount_ = prop.multiProcessorCount;
    ccMajor_ = prop.major;
    maxSmemOptin_ = prop.sharedMemPerBlockOptin;

    // Keep freed blocks in the stream-ordered pool: temporaries are then re-used
    // without returning to the driver, which makes the pool our scratch allocator.
    cudaMemPool_t pool;
    FAISS_EXT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, config.device));
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    FAISS_EXT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));

    FAISS_EXT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cublasStatus_t st = cublasCreate(&cublas_);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(stream_);
        FAISS_THROW_FMT("cuBLAS error %d (%s) in cublasCreate", int(st), cublasGetStatusString(st));
    }
    FAISS_EXT_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
}

GpuResources::~GpuResources() {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(config_.device);
    staging_.reset(); // its events and buffers first, while the stream exists
    cudaStreamSynchronize(stream_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
    cudaSetDevice(previous);
}

void GpuResources::synchronize() const {
    DeviceScope scope(config_.device);
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

size_t GpuResources::availableDeviceBytes() const {
    DeviceScope scope(config_.device);
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    size_t free = 0, total = 0;
    FAISS_EXT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    cudaMemPool_t pool;
    FAISS_EXT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, config_.device));
    uint64_t reserved = 0, used = 0;
    FAISS_EXT_CUDA_CHECK(
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    FAISS_EXT_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    return free + size_t(reserved - std::min(reserved, used));
}

} // namespace faiss_ext
