#include <faiss_ext/impl/FlatStorage.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/Float16Copy.h>
#include <kernels/GatherRows.h>
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
    if (float16_) {
        kernels::float16CopyRows(
                dst, n, d_, rows16_.data() + size_t(n_) * kernels::float16RowHalves(d_),
                scales16_.data() + n_, relError16_.data(), stream);
    }
    n_ += n;
    if (float16_) {
        refreshFloat16Bounds_();
    }
}

void FlatStorage::reserve(int64_t n) {
    if (n <= int64_t(norms_.size())) {
        return;
    }
    cudaStream_t stream = res_->stream();
    const size_t halves = float16_ ? size_t(kernels::float16RowHalves(d_)) : 0;
    auto v = res_->alloc<float>(size_t(n) * d_);
    auto nr = res_->alloc<float>(size_t(n));
    auto r16 = res_->alloc<uint16_t>(size_t(n) * halves);
    auto s16 = res_->alloc<float>(float16_ ? size_t(n) : 0);
    DeviceBuffer<float> m16, e16;
    if (float16_ && relError16_.size() == 0) {
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
        if (float16_) {
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    r16.data(), rows16_.data(), size_t(n_) * halves * sizeof(uint16_t),
                    cudaMemcpyDeviceToDevice, stream));
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    s16.data(), scales16_.data(), size_t(n_) * sizeof(float),
                    cudaMemcpyDeviceToDevice, stream));
        }
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
    if (float16_) {
        rows16_ = std::move(r16);
        scales16_ = std::move(s16);
        if (m16.size() > 0) {
            maxNorm16_ = std::move(m16);
            relError16_ = std::move(e16);
        }
    }
}

void FlatStorage::keepRows(const std::vector<int64_t>& rows) {
    cudaStream_t stream = res_->stream();
    const int64_t m = int64_t(rows.size());
    // The copy's rows move as floats: float16RowHalves(d) is a multiple of 8 halves.
    const int halfRowFloats = float16_ ? int(kernels::float16RowHalves(d_) / 2) : 0;
    auto v = res_->alloc<float>(size_t(m) * d_);
    auto nr = res_->alloc<float>(size_t(m));
    auto r16 = res_->alloc<uint16_t>(size_t(m) * halfRowFloats * 2);
    auto s16 = res_->alloc<float>(float16_ ? size_t(m) : 0);
    if (m > 0) {
        auto idx = res_->alloc<int64_t>(size_t(m));
        copyToDevice(idx.data(), rows.data(), rows.size(), stream);
        kernels::gatherRows(vectors_.data(), idx.data(), m, d_, v.data(), stream);
        kernels::rowSquaredNorms(v.data(), m, d_, nr.data(), stream);
        if (float16_) {
            kernels::gatherRows(
                    reinterpret_cast<const float*>(rows16_.data()), idx.data(), m, halfRowFloats,
                    reinterpret_cast<float*>(r16.data()), stream);
            kernels::gatherRows(scales16_.data(), idx.data(), m, 1, s16.data(), stream);
        }
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
    n_ = m;
    if (float16_) {
        rows16_ = std::move(r16);
        scales16_ = std::move(s16);
        refreshFloat16Bounds_();
    }
}

void FlatStorage::clear() {
    vectors_ = DeviceBuffer<float>();
    norms_ = DeviceBuffer<float>();
    rows16_ = DeviceBuffer<uint16_t>();
    scales16_ = DeviceBuffer<float>();
    maxNorm16_ = DeviceBuffer<float>();
    relError16_ = DeviceBuffer<float>();
    relError16Host_ = 0.f;
    n_ = 0;
}

void FlatStorage::copyRowsToHost(int64_t i0, int64_t n, float* out) const {
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && n >= 0 && i0 + n <= n_, "rows [%lld, %lld) are outside [0, %lld)",
            (long long)i0, (long long)(i0 + n), (long long)n_);
    copyToHost(out, vectors_.data() + size_t(i0) * d_, size_t(n) * d_, res_->stream());
}

void FlatStorage::refreshFloat16Bounds_() {
    cudaStream_t stream = res_->stream();
    if (relError16_.size() == 0) {
        return; // nothing was ever stored
    }
    if (n_ > 0) {
        kernels::maxSquaredNorm(vectors_.data(), norms_.data(), n_, d_, maxNorm16_.data(), stream);
    }
    copyToHost(&relError16Host_, relError16_.data(), 1, stream);
}

} // namespace faiss_ext
