#include <faiss_ext/impl/FlatStorage.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/GatherRows.h>

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
    n_ += n;
}

void FlatStorage::reserve(int64_t n) {
    if (n <= int64_t(norms_.size())) {
        return;
    }
    cudaStream_t stream = res_->stream();
    auto v = res_->alloc<float>(size_t(n) * d_);
    auto nr = res_->alloc<float>(size_t(n));
    if (n_ > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                v.data(), vectors_.data(), size_t(n_) * d_ * sizeof(float),
                cudaMemcpyDeviceToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                nr.data(), norms_.data(), size_t(n_) * sizeof(float), cudaMemcpyDeviceToDevice,
                stream));
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
}

void FlatStorage::keepRows(const std::vector<int64_t>& rows) {
    cudaStream_t stream = res_->stream();
    const int64_t m = int64_t(rows.size());
    auto v = res_->alloc<float>(size_t(m) * d_);
    auto nr = res_->alloc<float>(size_t(m));
    if (m > 0) {
        auto idx = res_->alloc<int64_t>(size_t(m));
        copyToDevice(idx.data(), rows.data(), rows.size(), stream);
        kernels::gatherRows(vectors_.data(), idx.data(), m, d_, v.data(), stream);
        kernels::rowSquaredNorms(v.data(), m, d_, nr.data(), stream);
    }
    vectors_ = std::move(v);
    norms_ = std::move(nr);
    n_ = m;
}

void FlatStorage::clear() {
    vectors_ = DeviceBuffer<float>();
    norms_ = DeviceBuffer<float>();
    n_ = 0;
}

void FlatStorage::copyRowsToHost(int64_t i0, int64_t n, float* out) const {
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && n >= 0 && i0 + n <= n_, "rows [%lld, %lld) are outside [0, %lld)",
            (long long)i0, (long long)(i0 + n), (long long)n_);
    copyToHost(out, vectors_.data() + size_t(i0) * d_, size_t(n) * d_, res_->stream());
}

} // namespace faiss_ext
