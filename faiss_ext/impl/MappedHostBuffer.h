// RAII page-locked host memory that kernels read directly over the bus (mapped,
// unified addressing): GpuIndexBang's full vectors under BangVectorPlacement::kHost.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include <faiss/impl/FaissAssert.h>

namespace faiss_ext {

/// An owning, move-only array of T in pinned, mapped host memory: data() is a host
/// pointer, deviceData() the same memory as kernels address it. Kernels on `stream`
/// may read it: release waits for that stream first. Allocation failure (a
/// locked-memory limit, too little host memory) is a faiss::FaissException naming the
/// size.
template <typename T>
class MappedHostBuffer {
   public:
    MappedHostBuffer() = default;
    MappedHostBuffer(size_t count, cudaStream_t stream) : stream_(stream) {
        if (count == 0) {
            return;
        }
        void* p = nullptr;
        cudaError_t err =
                cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocMapped | cudaHostAllocPortable);
        void* dev = nullptr;
        if (err == cudaSuccess) {
            err = cudaHostGetDevicePointer(&dev, p, 0);
            if (err != cudaSuccess) {
                cudaFreeHost(p);
            }
        }
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            FAISS_THROW_FMT(
                    "cannot allocate %zu bytes of page-locked host memory (%s)", count * sizeof(T),
                    cudaGetErrorString(err));
        }
        data_ = static_cast<T*>(p);
        deviceData_ = static_cast<T*>(dev);
        count_ = count;
    }
    ~MappedHostBuffer() {
        release();
    }
    MappedHostBuffer(MappedHostBuffer&& o) noexcept {
        *this = std::move(o);
    }
    MappedHostBuffer& operator=(MappedHostBuffer&& o) noexcept {
        if (this != &o) {
            release();
            data_ = std::exchange(o.data_, nullptr);
            deviceData_ = std::exchange(o.deviceData_, nullptr);
            count_ = std::exchange(o.count_, 0);
            stream_ = o.stream_;
        }
        return *this;
    }
    MappedHostBuffer(const MappedHostBuffer&) = delete;
    MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;

    T* data() {
        return data_;
    }
    const T* data() const {
        return data_;
    }
    T* deviceData() {
        return deviceData_;
    }
    const T* deviceData() const {
        return deviceData_;
    }
    size_t size() const {
        return count_;
    }
    size_t bytes() const {
        return count_ * sizeof(T);
    }

   private:
    void release() {
        if (data_) {
            // Kernels queued on the stream may still read it.
            cudaStreamSynchronize(stream_);
            cudaFreeHost(data_);
            data_ = nullptr;
            deviceData_ = nullptr;
            count_ = 0;
        }
    }

    T* data_ = nullptr;
    T* deviceData_ = nullptr;
    size_t count_ = 0;
    cudaStream_t stream_ = nullptr;
};

} // namespace faiss_ext
