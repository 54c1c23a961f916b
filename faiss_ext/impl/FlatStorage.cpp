#include <faiss_ext/impl/FlatStorage.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/GatherRows.h>
#include <kernels/SearchCopy.h>
#include <kernels/ThresholdFilter.h>

namespace faiss_ext {

void FlatStorage::append(int64_t n, const float* x) {
    cudaStream_t stream = res_->stream();
    const int64_t capacity = int64_t(norms_.size());
    if (n_ + n > capacity) {
        // Grow by a quarter at least, so that many small adds stay linear.
        reserve(std::max(n_ + n, capacity + capacity / 4));
    }
    float* dst = vectors_.data() + size_t(n_) * d_;
    copyToDevice(dst, x, size_t(n) * d_, stream);
    kernels::rowSquaredNorms(dst, n, d_, norms_.data() + n_, stream);
    if (copy_) {
        kernels::copyRows(
                *copy_, dst, n, d_,
                copyRows_.data() + size_t(n_) * size_t(kernels::copyRowBytes(*copy_, d_)),
                copyScales_.data() + n_, copyRelError_.data(), stream);
    }
    n_ += n;
    if (copy_) {
        refreshCopyBounds_();
    }
}

void FlatStorage::reserve(int64_t n) {
    if (n <= int64_t(norms_.size())) {
        return;
    }
    cudaStream_t stream = res_->stream();
    const size_t rowBytes = copy_ ? size_t(kernels::copyRowBytes(*copy_, d_)) : 0;
    auto v = res_->alloc<float>(size_t(n) * d_);
    auto nr = res_->alloc<float>(size_t(n));
    auto r16 = res_->alloc<uint8_t>(size_t(n) * rowBytes);
    auto s16 = res_->alloc<float>(copy_ ? size_t(n) : 0);
    DeviceBuffer<float> m16, e16;
    if (copy_ && copyRelError_.size() == 0) {
        m16 = res_->alloc<float>(1);
        e16 = res_->alloc<float>(1);
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(m16.data(), 0, sizeof(float), stream));
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(e16.data(), 0, sizeof(float), stream));
    }
    if (n_ > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                v.data(), vectors_.data(), size_t(n_) * d_ * sizeof(float),
                cudaMemcpyDeviceToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                nr.data(), norms_.data(), size_t(n_) * sizeof(float), cudaMemcpyDeviceToDevice,
                stream));
        if (copy_) {
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    r16.data(), copyRows_.data(), size_t(n_) * rowBytes, cudaMemcpyDeviceToDevice,
                    stream));
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    s16.data(), copyScales_.data(), size_t(n_) * sizeof(float),
                    cudaMemcpyDeviceToDevice, stream));
        }
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
    if (copy_) {
        copyRows_ = std::move(r16);
        copyScales_ = std::move(s16);
        if (m16.size() > 0) {
            copyMaxNorm_ = std::move(m16);
            copyRelError_ = std::move(e16);
        }
    }
}

void FlatStorage::keepRows(const std::vector<int64_t>& rows) {
    cudaStream_t stream = res_->stream();
    const int64_t m = int64_t(rows.size());
    // The copy's rows move as floats: copyRowBytes is a multiple of 16.
    const int copyRowFloats = copy_ ? int(kernels::copyRowBytes(*copy_, d_) / 4) : 0;
    auto v = res_->alloc<float>(size_t(m) * d_);
    auto nr = res_->alloc<float>(size_t(m));
    auto r16 = res_->alloc<uint8_t>(size_t(m) * copyRowFloats * 4);
    auto s16 = res_->alloc<float>(copy_ ? size_t(m) : 0);
    if (m > 0) {
        auto idx = res_->alloc<int64_t>(size_t(m));
        copyToDevice(idx.data(), rows.data(), rows.size(), stream);
        kernels::gatherRows(vectors_.data(), idx.data(), m, d_, v.data(), stream);
        kernels::rowSquaredNorms(v.data(), m, d_, nr.data(), stream);
        if (copy_) {
            kernels::gatherRows(
                    reinterpret_cast<const float*>(copyRows_.data()), idx.data(), m, copyRowFloats,
                    reinterpret_cast<float*>(r16.data()), stream);
            kernels::gatherRows(copyScales_.data(), idx.data(), m, 1, s16.data(), stream);
        }
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
    n_ = m;
    if (copy_) {
        copyRows_ = std::move(r16);
        copyScales_ = std::move(s16);
        refreshCopyBounds_();
    }
}

void FlatStorage::clear() {
    vectors_ = DeviceBuffer<float>();
    norms_ = DeviceBuffer<float>();
    copyRows_ = DeviceBuffer<uint8_t>();
    copyScales_ = DeviceBuffer<float>();
    copyMaxNorm_ = DeviceBuffer<float>();
    copyRelError_ = DeviceBuffer<float>();
    copyRelErrorHost_ = 0.f;
    n_ = 0;
}

void FlatStorage::copyRowsToHost(int64_t i0, int64_t n, float* out) const {
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && n >= 0 && i0 + n <= n_, "rows [%lld, %lld) are outside [0, %lld)",
            (long long)i0, (long long)(i0 + n), (long long)n_);
    copyToHost(out, vectors_.data() + size_t(i0) * d_, size_t(n) * d_, res_->stream());
}

void FlatStorage::refreshCopyBounds_() {
    cudaStream_t stream = res_->stream();
    if (copyRelError_.size() == 0) {
        return; // nothing was ever stored
    }
    if (n_ > 0) {
        kernels::maxSquaredNorm(
                vectors_.data(), norms_.data(), n_, d_, copyMaxNorm_.data(), stream);
    }
    copyToHost(&copyRelErrorHost_, copyRelError_.data(), 1, stream);
}

} // namespace faiss_ext
