// Row-major float vectors and their squared norms in device memory, growable.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

class FlatStorage {
   public:
    FlatStorage(const GpuResources& res, int d) : res_(&res), d_(d) {}

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
        return vectors_.bytes() + norms_.bytes();
    }

   private:
    const GpuResources* res_;
    int d_;
    int64_t n_ = 0;
    DeviceBuffer<float> vectors_; ///< capacity x d
    DeviceBuffer<float> norms_;   ///< capacity
};

} // namespace faiss_ext
