// Base of the faiss_ext GPU indexes: argument checks, device scope and paging of
// host arrays through bounded device memory. Subclasses implement the device side.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss/Index.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/ArgChecks.h>

namespace faiss_ext {

/// A faiss::Index whose data lives on one GPU. Every array passed to the public
/// methods is host memory (a device pointer is refused with an exception).
class GpuIndex : public faiss::Index {
   public:
    GpuIndex(GpuResources& resources, int d, faiss::MetricType metric, GpuIndexConfig config);

    void train(int64_t n, const float* x) override;
    void add(int64_t n, const float* x) override;
    void add_with_ids(int64_t n, const float* x, const int64_t* ids) override;
    void search(
            int64_t n,
            const float* x,
            int64_t k,
            float* distances,
            int64_t* labels,
            const faiss::SearchParameters* params = nullptr) const override;

    GpuResources& resources() const {
        return res_;
    }
    const GpuIndexConfig& config() const {
        return config_;
    }
    /// Device memory the index holds (stored vectors and structures, not temporaries).
    virtual size_t deviceMemoryBytes() const = 0;

   protected:
    /// n > 0 finite host vectors, index trained. Default: nothing to learn.
    virtual void trainImpl_(int64_t n, const float* x);
    /// n > 0 finite host vectors; ids is null for sequential ids. Must leave the index
    /// unchanged if it throws.
    virtual void addImpl_(int64_t n, const float* x, const int64_t* ids) = 0;
    /// Whether add_with_ids is meaningful (faiss::IndexFlat refuses it too).
    virtual bool supportsAddWithIds_() const {
        return false;
    }
    /// n > 0 queries in device memory; writes n x k results to device memory.
    virtual void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const = 0;
    /// Refuses search parameters this index cannot honour (an IDSelector, a foreign type).
    virtual void checkSearchParams_(const faiss::SearchParameters* params) const;
    /// Throws if p points to device (or managed) memory.
    static void checkHostPointer(const void* p, const char* what);

    GpuResources& res_;
    GpuIndexConfig config_;
};

} // namespace faiss_ext
