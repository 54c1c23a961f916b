// Exact search on the GPU: a drop-in faiss::Index for faiss::IndexFlat{L2,IP}.
#pragma once

#include <cstdint>
#include <memory>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/IndexConfig.h>

namespace faiss {
struct IndexFlat;
}

namespace faiss_ext {

class FlatStorage;
struct IdFilterBits;

/// Brute-force k-NN (L2 or inner product) over vectors stored on the GPU: batched
/// cuBLAS GEMM tiles with precomputed norms and a fused streaming k-selection, so the
/// full query x base distance matrix never exists. Also usable as the assignment
/// index of faiss::Clustering (GPU k-means) and as the ground-truth engine.
class GpuIndexFlat : public GpuIndex {
   public:
    GpuIndexFlat(
            GpuResources& resources,
            int d,
            faiss::MetricType metric = faiss::METRIC_L2,
            GpuIndexFlatConfig config = GpuIndexFlatConfig());
    /// Builds a copy of a CPU index (see copyFrom).
    GpuIndexFlat(
            GpuResources& resources,
            const faiss::IndexFlat* index,
            GpuIndexFlatConfig config = GpuIndexFlatConfig());
    ~GpuIndexFlat() override;

    /// Replaces this index's contents (dimension, metric, vectors) with the CPU index's.
    void copyFrom(const faiss::IndexFlat* index);
    /// Writes this index's dimension, metric and vectors into a CPU index.
    void copyTo(faiss::IndexFlat* index) const;

    /// As faiss::gpu::GpuIndexFlat::reserveMemory: room for numVecs vectors in all, so
    /// that adds up to that many allocate nothing more (an add past the room grows it,
    /// copying the stored vectors). Never shrinks; the room counts in
    /// deviceMemoryBytes() and reset() frees it.
    void reserveMemory(size_t numVecs);

    void reset() override;
    void reconstruct(int64_t key, float* recons) const override;
    void reconstruct_n(int64_t i0, int64_t ni, float* recons) const override;
    size_t deviceMemoryBytes() const override;

    const GpuIndexFlatConfig& flatConfig() const {
        return flatConfig_;
    }

   protected:
    void addImpl_(int64_t n, const float* x, const int64_t* ids) override;
    void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const override;
    void rangeSearchImpl_(
            int64_t n,
            const float* x,
            float radius,
            faiss::RangeSearchResult* result,
            const faiss::SearchParameters* params) const override;
    /// One to a few queries on the radix path (a large base: the whole row of each
    /// query's distances in one buffer) without a selector.
    SearchGraphShape searchGraphShape_(int64_t n, int k, const faiss::SearchParameters* params)
            const override;
    /// As faiss::IndexFlat: the remaining vectors move down, ids stay 0 .. ntotal - 1.
    size_t removeIdsImpl_(const faiss::IDSelector& sel) override;

   private:
    /// The bitmap of params->sel over the stored vectors (null: no filter).
    std::shared_ptr<IdFilterBits> filterOf_(const faiss::SearchParameters* params) const;

    /// The coarse search of GpuIndexIVFFlat reads its quantizer's centroids in place.
    friend class GpuIndexIVFFlat;
    /// The library's access to the device state (impl/IndexAccess.h: write_index).
    friend struct GpuIndexFlatAccess;

    GpuIndexFlatConfig flatConfig_;
    std::unique_ptr<FlatStorage> storage_;
};

} // namespace faiss_ext
