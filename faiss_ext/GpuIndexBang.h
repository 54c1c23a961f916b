// BANG graph search on the GPU: a Vamana graph built in add, greedy beam search with
// one thread block per query. A faiss::Index with sequential ids, L2 only.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss/Index.h>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <faiss_ext/impl/FlatStorage.h>

namespace faiss_ext {

/// Which kernel runs the search loop.
enum class BangKernel {
    /// one launch; each block iterates until its query converges (default)
    kPersistent,
    /// one fused kernel launch per iteration from a host loop (the seed's design), the
    /// state in global memory; for comparison
    kStepwise,
};

struct GpuIndexBangConfig : GpuIndexConfig {
    /// R: most neighbours per vector, in [1, 128].
    int graphDegree = 64;
    /// RobustPrune's alpha (>= 1; larger keeps more long edges).
    float alpha = 1.2f;
    /// Exact nearest neighbours of each vector in the first graph's candidates, in
    /// [1, 1024].
    int buildCandidates = 64;
    /// Evenly spaced hub vectors linked into the first graph (0: 4 sqrt(ntotal)).
    int64_t buildHubs = 0;
    /// Vamana refinement passes after the first graph, in [0, 16] (see BangBuild.h).
    int buildPasses = 2;
    /// Worklist of the refinement passes' searches, in [1, 1024].
    int buildL = 64;
    /// Kernel of search() (searchDevice takes it per call).
    BangKernel kernel = BangKernel::kPersistent;
    /// BANG's PQ mode: M sub-quantizers of 8 bits each (faiss::ProductQuantizer,
    /// trained at every add on up to 65536 evenly spaced stored vectors with k-means on
    /// the GPU; impl/BangPq.h). The search walks the graph with ADC distances from the
    /// codes (M bytes per vector) and a per-query table in shared memory (M KiB), then
    /// re-ranks its final worklist with exact distances from the full vectors, which
    /// stay on the GPU. The graph is built with exact distances either way. 0: exact
    /// distances throughout (default); else in [1, 128], dividing d, and add needs at
    /// least 256 vectors in all.
    int pqSubquantizers = 0;
};

/// Per-call parameters of GpuIndexBang::search.
struct SearchParametersBang : faiss::SearchParameters {
    /// Worklist size L (as faiss::SearchParametersHNSW::efSearch, raised to k when
    /// smaller); at most GpuIndexBang::kMaxSearchL.
    int search_L = 64;
};

/// Vectors and graph live on the GPU. add() (re)builds the graph over every stored
/// vector (impl/BangBuild.h): a first graph from exact k-NN candidates (GPU) pruned by
/// RobustPrune (host), then Vamana passes whose searches run on the GPU.
/// A later add() rebuilds the whole graph over old and new vectors (the ids stay
/// sequential). Search (exact mode): exact squared L2 distances throughout, so the final
/// worklist is already exactly ranked; the k best of it are returned (k <= L; L =
/// max(search_L, k)). PQ mode (GpuIndexBangConfig::pqSubquantizers): the worklist is
/// ranked by ADC distances, and its L nodes are re-ranked exactly before the k best are
/// returned.
class GpuIndexBang : public GpuIndex {
   public:
    /// Largest worklist.
    static constexpr int kMaxSearchL = 1024;

    GpuIndexBang(
            GpuResources& resources,
            int d,
            faiss::MetricType metric = faiss::METRIC_L2,
            GpuIndexBangConfig config = GpuIndexBangConfig());

    /// Worklist size of search() without SearchParametersBang.
    int search_L = 64;

    /// Replaces the vectors and graph with given ones (n x d vectors, n x R ids in
    /// [-1, n), no id twice in a row; -1 entries are skipped) and the entry point.
    /// Used by read_index, and to search a graph built elsewhere. PQ mode: with
    /// pqCentroids (M x 256 x d / M) and pqCodes (n x M) given, those are used (as
    /// read_index does); with both null the PQ is trained and the vectors encoded as
    /// add does. Exact mode refuses them.
    void setGraph(
            int64_t n,
            const float* x,
            const int32_t* graph,
            int64_t entry,
            const float* pqCentroids = nullptr,
            const uint8_t* pqCodes = nullptr);

    void reset() override;
    void reconstruct(int64_t key, float* recons) const override;
    void reconstruct_n(int64_t i0, int64_t ni, float* recons) const override;
    size_t deviceMemoryBytes() const override;

    /// The graph (ntotal x R, -1 padded), copied to the host.
    std::vector<int32_t> graph() const;
    int64_t entryPoint() const {
        return entry_;
    }
    int graphDegree() const {
        return bangConfig_.graphDegree;
    }
    const GpuIndexBangConfig& bangConfig() const {
        return bangConfig_;
    }
    /// Whether the search walks with PQ (ADC) distances.
    bool pqMode() const {
        return bangConfig_.pqSubquantizers > 0;
    }
    /// PQ mode with vectors: the codebooks (M x 256 x d / M) and codes (ntotal x M),
    /// copied to the host; else empty.
    std::vector<float> pqCentroids() const;
    std::vector<uint8_t> pqCodes() const;
    /// Bytes of each vector the search loop reads to get its traversal distance: the
    /// full vector (4 d) in exact mode, its code (M) in PQ mode.
    size_t traversalBytesPerVector() const;
    /// Timings of the last graph build (add), in seconds.
    double lastBuildKnnSeconds() const {
        return lastKnnSeconds_;
    }
    double lastBuildSearchSeconds() const {
        return lastSearchSeconds_;
    }
    double lastBuildPruneSeconds() const {
        return lastPruneSeconds_;
    }

    /// Search with every array in device memory (on resources().stream()), with an
    /// explicit worklist size L (>= k) and kernel; iterationsDevice (nullable) gets the
    /// parents expanded per query. The stepwise kernel synchronises once per iteration.
    void searchDevice(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            int L,
            BangKernel kernel,
            int32_t* iterationsDevice = nullptr) const;
    /// The worklist size a search with search_L = requested and k uses (max of the two);
    /// throws if it is outside [1, kMaxSearchL].
    static int effectiveL(int requested, int64_t k);

   protected:
    void addImpl_(int64_t n, const float* x, const int64_t* ids) override;
    void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const override;
    void checkSearchParams_(const faiss::SearchParameters* params) const override;

   private:
    int requestedL_(const faiss::SearchParameters* params) const;

    GpuIndexBangConfig bangConfig_;
    FlatStorage storage_;
    DeviceBuffer<int32_t> graph_; ///< ntotal x R
    DeviceBuffer<float> pqCentroids_; ///< PQ mode: M x 256 x d / M
    DeviceBuffer<uint8_t> pqCodes_;   ///< PQ mode: ntotal x M
    int64_t entry_ = 0;
    double lastKnnSeconds_ = 0;
    double lastSearchSeconds_ = 0;
    double lastPruneSeconds_ = 0;
};

} // namespace faiss_ext
