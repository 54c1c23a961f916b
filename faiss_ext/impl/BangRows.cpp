#include <faiss_ext/impl/BangRows.h>

#include <algorithm>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MemorySpace.h>
#include <kernels/Distances.h>
#include <kernels/GatherRows.h>

namespace faiss_ext {

namespace {

/// Rows a float source moves through the device at a time (64 MiB of floats).
int64_t chunkRows(int d) {
    return std::max<int64_t>(1, (int64_t(64) << 20) / (int64_t(d) * 4));
}

} // namespace

bool bangBytesApply(int pqM, faiss::MetricType metric) {
    return pqM == 0 && metric == faiss::METRIC_L2;
}

void BangRows::assign(const std::vector<Source>& sources, BangVectorStorage storage) {
    int64_t total = 0;
    for (const Source& s : sources) {
        total += s.n;
    }
    BangRowsWriter w(*res_, d_, total, storage);
    for (const Source& s : sources) {
        if (s.bytes != nullptr) {
            w.put(s.n, s.bytes);
        } else {
            w.put(s.n, s.floats);
        }
    }
    *this = w.finish();
}

BangRowsWriter::BangRowsWriter(
        const GpuResources& res,
        int d,
        int64_t total,
        BangVectorStorage storage)
        : rows_(res, d), total_(total), storage_(storage) {
    rows_.n_ = total;
    rows_.norms_ = res.alloc<float>(size_t(total));
    if (storage == BangVectorStorage::kFloat) {
        rows_.floats_ = res.alloc<float>(size_t(total) * d);
    } else {
        rows_.bytes_ = res.alloc<uint8_t>(size_t(total) * d);
        notBytes_ = res.alloc<int>(1);
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(notBytes_.data(), 0, sizeof(int), res.stream()));
    }
}

float* BangRowsWriter::stagingRows_() {
    if (staging_.size() == 0) {
        staging_ = rows_.res_->alloc<float>(
                size_t(std::min(chunkRows(rows_.d_), std::max<int64_t>(total_, 1))) * rows_.d_);
    }
    return staging_.data();
}

void BangRowsWriter::put(int64_t n, const float* x) {
    FAISS_ASSERT(at_ + n <= total_);
    const GpuResources& res = *rows_.res_;
    const int d = rows_.d_;
    const bool onDevice =
            n > 0 && memorySpaceOf(x, res.device(), "Bang rows") == MemorySpace::kDevice;
    const int64_t chunk = chunkRows(d);
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
        const int64_t m = std::min(chunk, n - r0);
        const float* rows = x + size_t(r0) * d;
        if (!onDevice) {
            copyToDevice(stagingRows_(), rows, size_t(m) * d, res.stream());
            rows = stagingRows_();
        }
        putDeviceFloats_(m, rows);
    }
}

void BangRowsWriter::put(int64_t n, const uint8_t* bytes) {
    FAISS_ASSERT(at_ + n <= total_);
    const GpuResources& res = *rows_.res_;
    const int d = rows_.d_;
    const int64_t chunk = chunkRows(d);
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
        const int64_t m = std::min(chunk, n - r0);
        kernels::bytesToFloats(bytes + size_t(r0) * d, size_t(m) * d, stagingRows_(), res.stream());
        putDeviceFloats_(m, stagingRows_());
    }
}

void BangRowsWriter::putDeviceFloats_(int64_t m, const float* rows) {
    cudaStream_t stream = rows_.res_->stream();
    const int d = rows_.d_;
    // The norms of the float rows, as FlatStorage computes them.
    kernels::rowSquaredNorms(rows, m, d, rows_.norms_.data() + at_, stream);
    if (rows_.isBytes()) {
        kernels::floatsToBytes(
                rows, size_t(m) * d, rows_.bytes_.data() + size_t(at_) * d, notBytes_.data(),
                stream);
        int flag = 0;
        copyToHost(&flag, notBytes_.data(), 1, stream);
        if (flag == 0) {
            at_ += m;
            return;
        }
        FAISS_THROW_IF_NOT_MSG(
                storage_ != BangVectorStorage::kBytes,
                "GpuIndexBang: vectorStorage=kBytes, but a vector has a component that is not "
                "an integer in [0, 255]");
        switchToFloats_();
    }
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
            rows_.floats_.data() + size_t(at_) * d, rows, size_t(m) * d * sizeof(float),
            cudaMemcpyDeviceToDevice, stream));
    at_ += m;
}

void BangRowsWriter::switchToFloats_() {
    const GpuResources& res = *rows_.res_;
    const int d = rows_.d_;
    auto floats = res.alloc<float>(size_t(total_) * d);
    kernels::bytesToFloats(rows_.bytes_.data(), size_t(at_) * d, floats.data(), res.stream());
    rows_.floats_ = std::move(floats);
    rows_.bytes_ = DeviceBuffer<uint8_t>();
}

BangRows BangRowsWriter::finish() {
    FAISS_ASSERT(at_ == total_);
    return std::move(rows_);
}

void BangRows::clear() {
    floats_ = DeviceBuffer<float>();
    bytes_ = DeviceBuffer<uint8_t>();
    norms_ = DeviceBuffer<float>();
    n_ = 0;
}

BangRowsView BangRows::view(int64_t i0, int64_t n) const {
    FAISS_ASSERT(i0 >= 0 && n >= 0 && i0 + n <= n_);
    BangRowsView v;
    v.res = res_;
    v.d = d_;
    v.n = n;
    v.floatRows = isBytes() ? nullptr : floats_.data() + size_t(i0) * d_;
    v.byteRows = isBytes() ? bytes_.data() + size_t(i0) * d_ : nullptr;
    v.rowNorms = norms_.data() + i0;
    return v;
}

void BangRowsView::toDeviceFloats(int64_t i0, int64_t m, float* out) const {
    FAISS_ASSERT(i0 >= 0 && m >= 0 && i0 + m <= n);
    cudaStream_t stream = res->stream();
    if (isBytes()) {
        kernels::bytesToFloats(byteRows + size_t(i0) * d, size_t(m) * d, out, stream);
    } else if (m > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                out, floatRows + size_t(i0) * d, size_t(m) * d * sizeof(float),
                cudaMemcpyDeviceToDevice, stream));
    }
}

void BangRows::copyRowsToHost(int64_t i0, int64_t n, float* out) const {
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && n >= 0 && i0 + n <= n_, "rows [%lld, %lld) are outside [0, %lld)",
            (long long)i0, (long long)(i0 + n), (long long)n_);
    cudaStream_t stream = res_->stream();
    if (!isBytes()) {
        copyToHost(out, floats_.data() + size_t(i0) * d_, size_t(n) * d_, stream);
        return;
    }
    const int64_t chunk = chunkRows(d_) * 4; // 64 MiB of bytes
    std::vector<uint8_t> piece;
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
        const int64_t m = std::min(chunk, n - r0);
        piece.resize(size_t(m) * d_);
        copyToHost(piece.data(), bytes_.data() + size_t(i0 + r0) * d_, piece.size(), stream);
        std::copy(piece.begin(), piece.end(), out + size_t(r0) * d_);
    }
}

} // namespace faiss_ext
