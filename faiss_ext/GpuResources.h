// One CUDA device as the indexes use it: a stream, a cuBLAS handle, memory limits.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>

#include <faiss_ext/utils/DeviceBuffer.h>

namespace faiss_ext {

class PinnedStaging;

struct GpuResourcesConfig {
    /// CUDA device ordinal the indexes built on these resources run on.
    int device = 0;
    /// Upper bound on device memory that one search or add batch may take for
    /// temporaries (distance tiles, candidates, staged queries). Larger inputs are
    /// processed in pages that fit.
    size_t tempMemoryBytes = size_t(1) << 30;
    /// Computes the searches' query-base products with faiss_ext's own plain CUDA-core
    /// kernel instead of cuBLAS: several times slower, for checking runs under
    /// compute-sanitizer, whose racecheck and initcheck do not follow cuBLAS's Hopper
    /// GEMMs. The environment variable FAISS_EXT_PLAIN_PRODUCTS=1 turns it on for every
    /// GpuResources of the process.
    bool plainProducts = false;
};

/// Owns a non-blocking stream and a cuBLAS handle on one device. Every index keeps a
/// reference to its GpuResources, which must outlive it. Not copyable; not for
/// concurrent use from several host threads.
class GpuResources {
   public:
    explicit GpuResources(GpuResourcesConfig config = GpuResourcesConfig());
    ~GpuResources();
    GpuResources(const GpuResources&) = delete;
    GpuResources& operator=(const GpuResources&) = delete;

    /// Number of CUDA devices usable here; 0 when there is no device or no driver.
    static int deviceCount();

    const GpuResourcesConfig& config() const {
        return config_;
    }
    int device() const {
        return config_.device;
    }
    cudaStream_t stream() const {
        return stream_;
    }
    cublasHandle_t cublas() const {
        return cublas_;
    }
    size_t tempMemoryBytes() const {
        return config_.tempMemoryBytes;
    }
    /// Whether products run on the plain kernel (GpuResourcesConfig::plainProducts, or
    /// FAISS_EXT_PLAIN_PRODUCTS=1 in the environment).
    bool plainProducts() const {
        return config_.plainProducts;
    }
    /// Streaming multiprocessors on the device.
    int multiProcessorCount() const {
        return smCount_;
    }
    /// The device's compute capability, major number (8: Ampere, 9: Hopper).
    int computeCapabilityMajor() const {
        return ccMajor_;
    }
    /// Most dynamic shared memory one block may opt in to (read from the device).
    size_t maxSharedMemoryPerBlock() const {
        return maxSmemOptin_;
    }

    /// A device array of `count` elements, released on this stream.
    template <typename T>
    DeviceBuffer<T> alloc(size_t count) const {
        return DeviceBuffer<T>(count, stream_);
    }

    /// Waits for all work queued on the stream.
    void synchronize() const;

    /// Device memory an allocation could have now: the device's free memory plus what
    /// the stream-ordered pool holds unused.
    size_t availableDeviceBytes() const;

   private:
    friend struct GpuResourcesAccess; // the pinned staging (impl/ResourcesAccess.h)

    GpuResourcesConfig config_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    int smCount_ = 0;
    int ccMajor_ = 0;
    size_t maxSmemOptin_ = 0;
    std::unique_ptr<PinnedStaging> staging_;
};

} // namespace faiss_ext
