// RAII device memory from the stream-ordered pool of one GpuResources, and the
// host <-> device copies of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

/// An owning, move-only array of T in device memory. Allocation and release are
/// ordered on `stream` (cudaMallocAsync), so temporaries cost no device-wide sync.
/// Out-of-memory becomes a faiss::FaissException that names the size.
template <typename T>
class DeviceBuffer {
   public:
    DeviceBuffer() = default;
    DeviceBuffer(size_t count, cudaStream_t stream) : stream_(stream) {
        if (count == 0) {
            return;
        }
        void* p = nullptr;
        cudaError_t err = cudaMallocAsync(&p, count * sizeof(T), stream);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            FAISS_THROW_FMT(
                    "cannot allocate %zu bytes of device memory (%s)", count * sizeof(T),
                    cudaGetErrorString(err));
        }
        data_ = static_cast<T*>(p);
        count_ = count;
    }
    ~DeviceBuffer() {
        release();
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept {
        *this = std::move(o);
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            release();
            data_ = std::exchange(o.data_, nullptr);
            count_ = std::exchange(o.count_, 0);
            stream_ = o.stream_;
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* data() {
        return data_;
    }
    const T* data() const {
        return data_;
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
            cudaFreeAsync(data_, stream_);
            data_ = nullptr;
            count_ = 0;
        }
    }

    T* data_ = nullptr;
    size_t count_ = 0;
    cudaStream_t stream_ = nullptr;
};

/// Copies `count` elements to device memory on `stream` (then waits: `src` may be freed
/// next). `src` may be host or device memory (cudaMemcpyDefault: unified addressing).
template <typename T>
void copyToDevice(T* dst, const T* src, size_t count, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyDefault, stream));
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/// Copies `count` elements to host memory on `stream` and waits for them. `src` may be
/// device or host memory (cudaMemcpyDefault).
template <typename T>
void copyToHost(T* dst, const T* src, size_t count, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyDefault, stream));
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/// The first `count` elements of a device array, as a host vector.
template <typename T>
std::vector<T> copyToHostVector(const T* src, size_t count, cudaStream_t stream) {
    std::vector<T> out(count);
    copyToHost(out.data(), src, count, stream);
    return out;
}

} // namespace faiss_ext
