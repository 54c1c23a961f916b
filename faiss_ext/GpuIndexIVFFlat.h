// IVF with uncompressed vectors on the GPU: a drop-in faiss::Index for
// faiss::IndexIVFFlat / faiss::gpu::GpuIndexIVFFlat.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <faiss/Clustering.h>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/IndexConfig.h>

namespace faiss {
struct IndexFlat;
struct IndexIVFFlat;
} // namespace faiss

namespace faiss_ext {

namespace kernels {
enum class IvfQueryScanKernel : int;
} // namespace kernels
enum class IvfCoarsePath : int;

class IvfLists;
class IvfCoarseFragments;
struct IvfSearchPlan;
struct IvfSearchInput;
struct IdFilterBits;

/// Inverted file over uncompressed vectors. A GpuIndexFlat holds the nlist centroids
/// (the coarse quantizer); each list keeps its vectors in a warp-interleaved layout and
/// 64-bit ids in device memory. Search: coarse GEMM + top-nprobe, a list scan with a
/// per-chunk top-k, and a merge of the candidates; results follow FAISS conventions.
class GpuIndexIVFFlat : public GpuIndex {
   public:
    GpuIndexIVFFlat(
            GpuResources& resources,
            int d,
            int64_t nlist,
            faiss::MetricType metric = faiss::METRIC_L2,
            GpuIndexIVFFlatConfig config = GpuIndexIVFFlatConfig());
    /// Builds a copy of a CPU index (see copyFrom).
    GpuIndexIVFFlat(
            GpuResources& resources,
            const faiss::IndexIVFFlat* index,
            GpuIndexIVFFlatConfig config = GpuIndexIVFFlatConfig());
    ~GpuIndexIVFFlat() override;

    /// Lists probed per query when search gets no SearchParametersIVF (like FAISS:
    /// clamped to nlist; at most 2048 lists are probed).
    size_t nprobe = 1;
    /// k-means parameters of train (as faiss::IndexIVF: 10 iterations; spherical for
    /// inner product).
    faiss::ClusteringParameters cp;
    /// The coarse search's product (query-centroid distances, which pick the probed
    /// lists). kAuto: 3xTF32 on tensor cores for batches of at least 1024 queries on
    /// devices of compute capability 8.0 and newer (it halves the coarse GEMM), FP32
    /// else. 3xTF32's dot products carry a relative error up to about (3d / 8) 2^-23
    /// (GpuFlatPrecision), so a list whose centroid ties another's to that precision can
    /// be probed in its place; kFloat32 keeps FP32 throughout. A runtime setting like
    /// nprobe (not saved with the index).
    GpuFlatPrecision coarsePrecision = GpuFlatPrecision::kAuto;

    /// Uses the centroids of an already trained quantizer (d dimensions, nlist
    /// vectors) instead of train(); its metric becomes the coarse metric. The index
    /// must be empty.
    void setQuantizer(const faiss::IndexFlat* quantizer);

    /// Replaces everything (dimension, nlist, metric, centroids, lists, ids, nprobe) with
    /// the CPU index's. Its quantizer must be a faiss::IndexFlat; ids must not be -1.
    void copyFrom(const faiss::IndexIVFFlat* index);
    /// Writes everything into a CPU index, replacing its quantizer (a new owned
    /// faiss::IndexFlat), inverted lists (owned ArrayInvertedLists) and direct map.
    void copyTo(faiss::IndexIVFFlat* index) const;

    /// Appends vectors whose lists are already known (listNos[i] in [0, nlist)), with
    /// ids (null: sequential from ntotal).
    void addPreassigned(int64_t n, const float* x, const int64_t* listNos, const int64_t* ids);

    void reset() override;
    /// The vector stored with id `key` (like faiss::IndexIVF with a hash-table direct
    /// map, without having to build one). Throws if key is not stored, or stored more
    /// than once.
    void reconstruct(int64_t key, float* recons) const override;
    /// As faiss::IndexIVF::reconstruct_n: row i gets the vector stored with id i0 + i;
    /// rows of ids that are not stored are left untouched.
    void reconstruct_n(int64_t i0, int64_t ni, float* recons) const override;
    size_t deviceMemoryBytes() const override;

    int64_t nlist() const {
        return nlist_;
    }
    /// The coarse quantizer (nlist centroids once trained).
    const GpuIndexFlat& quantizer() const {
        return *quantizer_;
    }
    int64_t listLength(int64_t list) const;
    /// A list's vectors (row-major, listLength x d) and ids, in stored order.
    std::vector<float> listVectors(int64_t list) const;
    std::vector<int64_t> listIds(int64_t list) const;

    const GpuIndexIVFFlatConfig& ivfConfig() const {
        return ivfConfig_;
    }

   protected:
    void trainImpl_(int64_t n, const float* x) override;
    void addImpl_(int64_t n, const float* x, const int64_t* ids) override;
    bool supportsAddWithIds_() const override {
        return true;
    }
    void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const override;
    /// Searches of at most 1024 queries without a selector, in one pass.
    SearchGraphShape searchGraphShape_(int64_t n, int k, const faiss::SearchParameters* params)
            const override;
    /// As faiss::IndexIVF::range_search: the nprobe probed lists (params as search).
    void rangeSearchImpl_(
            int64_t n,
            const float* x,
            float radius,
            faiss::RangeSearchResult* result,
            const faiss::SearchParameters* params) const override;
    /// As faiss::IndexIVF: the other vectors keep their ids and lists.
    size_t removeIdsImpl_(const faiss::IDSelector& sel) override;

   private:
    /// The pipeline input of a search with these params (nprobe and filter resolved);
    /// `bits` receives the filter's bitmap, which must outlive the search.
    IvfSearchInput searchInput_(
            const faiss::SearchParameters* params,
            std::shared_ptr<IdFilterBits>& bits) const;
    /// nprobe of this call, clamped to nlist; throws if 0 or above 2048.
    int effectiveNprobe_(size_t requested) const;
    /// The nprobe of a search with these params (checked: type, unsupported fields,
    /// range), clamped.
    int searchNprobe_(const faiss::SearchParameters* params) const;
    IvfSearchPlan plan_(int64_t nq, int k, int nprobe) const;
    void checkIds_(int64_t n, const int64_t* ids, const char* what) const;
    /// Takes q as the quantizer, with the split of its centroids for the coarse search.
    void setQuantizer_(std::unique_ptr<GpuIndexFlat> q);

    /// The library's access to the search plan (impl/IndexAccess.h: tests and
    /// benchmarks).
    friend struct GpuIndexIVFFlatAccess;

    GpuIndexIVFFlatConfig ivfConfig_;
    int64_t nlist_;
    std::unique_ptr<GpuIndexFlat> quantizer_;
    /// The quantizer's centroids split for the fused coarse search (empty where it cannot
    /// serve them), rebuilt by setQuantizer_ with every new set of centroids.
    std::unique_ptr<IvfCoarseFragments> coarseFragments_;
    std::unique_ptr<IvfLists> lists_;
    /// The per-query scan's kernel, forced only by tests and benchmarks through
    /// GpuIndexIVFFlatAccess (value-initialised: kAuto).
    kernels::IvfQueryScanKernel queryScanKernel_{};
    /// The coarse search's path, forced only by tests and benchmarks through
    /// GpuIndexIVFFlatAccess (value-initialised: kAuto).
    IvfCoarsePath coarsePath_{};
};

} // namespace faiss_ext
