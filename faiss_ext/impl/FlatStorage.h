// Row-major float vectors and their squared norms in device memory, growable; and, when
// asked for, a low-precision copy of the vectors (kernels/SearchCopy.h) kept beside them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <kernels/SearchCopy.h>

namespace faiss_ext {

class FlatStorage {
   public:
    /// copy: also keep the vectors' copy of that kind (GpuIndexFlatConfig::float16Copy,
    /// int8Copy).
    FlatStorage(
            const GpuResources& res,
            int d,
            std::optional<kernels::CopyCode> copy = std::nullopt)
            : res_(&res), d_(d), copy_(copy) {}

    /// Appends n vectors (host or device memory). Allocates first, so a failure leaves
    /// the storage as it was.
    void append(int64_t n, const float* x);
    /// Room for n vectors in all, so that appends up to n allocate nothing more.
    void reserve(int64_t n);
    void clear();
    /// Keeps rows rows[0], rows[1], ... (ascending) in that order and drops the others.
    /// Builds the new arrays first, so a failure leaves the storage as it was.
    void keepRows(const std::vector<int64_t>& rows);
    /// Copies rows [i0, i0 + n) to host memory.
    void copyRowsToHost(int64_t i0, int64_t n, float* out) const;

    int64_t size() const {
        return n_;
    }
    int dim() const {
        return d_;
    }
    const float* vectors() const {
        return vectors_.data();
    }
    const float* norms() const {
        return norms_.data();
    }
    size_t deviceBytes() const {
        return vectors_.bytes() + norms_.bytes() + copyRows_.bytes() + copyScales_.bytes() +
                copyMaxNorm_.bytes() + copyRelError_.bytes();
    }

    /// The kind of copy kept, if any.
    std::optional<kernels::CopyCode> copyCode() const {
        return copy_;
    }
    /// The copy's rows (kernels::copyRowBytes(code, d) bytes each) and scales; null when
    /// it is not kept or the storage is empty.
    const void* copyRows() const {
        return copyRows_.data();
    }
    const float* copyScales() const {
        return copyScales_.data();
    }
    /// With the copy: a bound on every stored row's |x - copy| / |x| (it may exceed the
    /// current rows' once rows are dropped), and the largest squared norm of the stored
    /// rows (one device float).
    float copyMaxRelError() const {
        return copyRelErrorHost_;
    }
    const float* copyMaxSquaredNorm() const {
        return copyMaxNorm_.data();
    }

   private:
    /// The copy's largest squared norm over all rows, and its error bound to the host.
    void refreshCopyBounds_();

    const GpuResources* res_;
    int d_;
    std::optional<kernels::CopyCode> copy_;
    int64_t n_ = 0;
    DeviceBuffer<float> vectors_;      ///< capacity x d
    DeviceBuffer<float> norms_;        ///< capacity
    DeviceBuffer<uint8_t> copyRows_;   ///< capacity x copyRowBytes, with the copy
    DeviceBuffer<float> copyScales_;   ///< capacity, with the copy
    DeviceBuffer<float> copyMaxNorm_;  ///< 1, with the copy
    DeviceBuffer<float> copyRelError_; ///< 1, with the copy
    float copyRelErrorHost_ = 0.f;
};

} // namespace faiss_ext
