// Row-major float vectors and their squared norms in device memory, growable; and, when
// asked for, a float16 copy of the vectors (kernels/Float16Copy.h) kept beside them.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

class FlatStorage {
   public:
    /// float16Copy: also keep the vectors' float16 copy (GpuIndexFlatConfig::float16Copy).
    FlatStorage(const GpuResources& res, int d, bool float16Copy = false)
            : res_(&res), d_(d), float16_(float16Copy) {}

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
        return vectors_.bytes() + norms_.bytes() + rows16_.bytes() + scales16_.bytes() +
                maxNorm16_.bytes() + relError16_.bytes();
    }

    /// Whether the float16 copy is kept.
    bool hasFloat16Copy() const {
        return float16_;
    }
    /// The copy's rows (kernels::float16RowHalves(d) halves each) and scales; null when
    /// it is not kept or the storage is empty.
    const uint16_t* float16Rows() const {
        return rows16_.data();
    }
    const float* float16Scales() const {
        return scales16_.data();
    }
    /// With the copy: a bound on every stored row's |x - copy| / |x| (it may exceed the
    /// current rows' once rows are dropped), and the largest squared norm of the stored
    /// rows (one device float).
    float float16MaxRelError() const {
        return relError16Host_;
    }
    const float* float16MaxSquaredNorm() const {
        return maxNorm16_.data();
    }

   private:
    /// The copy's largest squared norm over all rows, and its error bound to the host.
    void refreshFloat16Bounds_();

    const GpuResources* res_;
    int d_;
    bool float16_;
    int64_t n_ = 0;
    DeviceBuffer<float> vectors_;    ///< capacity x d
    DeviceBuffer<float> norms_;      ///< capacity
    DeviceBuffer<uint16_t> rows16_;  ///< capacity x float16RowHalves(d), with the copy
    DeviceBuffer<float> scales16_;   ///< capacity, with the copy
    DeviceBuffer<float> maxNorm16_;  ///< 1, with the copy
    DeviceBuffer<float> relError16_; ///< 1, with the copy
    float relError16Host_ = 0.f;
};

} // namespace faiss_ext
