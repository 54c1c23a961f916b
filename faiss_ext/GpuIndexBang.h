// BANG graph search on the GPU: a Vamana graph built in add, greedy beam search with
// one thread block per query. A faiss::Index with sequential ids; L2, or inner product
// by the MIPS-to-L2 transform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <faiss/Index.h>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>

namespace faiss_ext {

class BangGraph;

/// Per-call parameters of GpuIndexBang::search.
struct SearchParametersBang : faiss::SearchParameters {
    /// Worklist size L (as faiss::SearchParametersHNSW::efSearch, raised to k when
    /// smaller); at most GpuIndexBang::kMaxSearchL.
    int search_L = 64;
    /// Where each query's walk starts (see BangEntry; a search without parameters uses
    /// this default); per call only, not saved with the index.
    BangEntry entry = BangEntry::kNearestHub;
};

/// Bytes a GpuIndexBang of n vectors takes (GpuIndexBang::estimateMemory).
struct BangMemoryEstimate {
    /// The index once built: its deviceMemoryBytes() and hostMemoryBytes().
    size_t deviceBytes = 0;
    size_t hostBytes = 0;
    /// The add that builds it into an empty index: its peak device memory (the index
    /// included; temporaries at their caps, GpuResourcesConfig::tempMemoryBytes and
    /// GpuIndexConfig::pageBytes), and its peak host memory beyond the caller's vectors
    /// (given in host memory; vectors given in device memory add their host copy, n d 4
    /// bytes).
    size_t buildDeviceBytes = 0;
    size_t buildHostBytes = 0;
};

/// Vectors and graph live on the GPU (impl/BangGraph.h; in PQ mode the full vectors can
/// live in host memory instead: GpuIndexBangConfig::vectorPlacement; in exact mode with
/// L2, vectors whose every component is an integer in [0, 255] are stored as bytes, with
/// the same results: GpuIndexBangConfig::vectorStorage). The first add() builds the
/// graph over its vectors (impl/BangBuild.h): a first graph from k-NN candidates (exact,
/// or from IVF lists from 200,000 vectors: BangBuildConfig::candidateLists) pruned by
/// RobustPrune, then Vamana passes, everything per node on the GPU. A later add()
/// extends that graph (DiskANN's insert in one batch: each new vector searched in the
/// graph and linked to the nodes its search expanded and to its nearest new vectors,
/// with reverse edges; PQ mode encodes the new vectors with the codebooks it has); ids
/// stay sequential. Search (exact mode): exact squared L2 distances throughout, so the final
/// worklist is already exactly ranked; the k best of it are returned (k <= L; L =
/// max(search_L, k)). PQ mode (GpuIndexBangConfig::pqSubquantizers): the worklist is
/// ranked by ADC distances, and its L nodes are re-ranked exactly before the k best are
/// returned.
///
/// METRIC_INNER_PRODUCT (cosine: inner product of normalised vectors): each stored
/// vector x is kept as [x, sqrt(M2 - |x|^2)] (M2: the largest |x|^2 of the build) and a
/// query q searched as [q, 0], so the L2 graph, build and search rank by inner product
/// (kernels/BangInnerProduct.h, impl/BangInnerProduct.h); d + 1 floats a vector.
/// Distances are the inner products, from the transformed L2 distance (absolute error
/// about 1e-7 (|q|^2 + M2)).
/// On unit vectors every x has the same norm and the graph is the L2 graph of the
/// vectors; on vectors of very different norms the extra component dominates for short
/// ones and the graph navigates less well (measure the recall). An add whose vectors
/// are longer than M2 allows rebuilds the graph with the new M2. PQ mode codes the
/// transformed rows, padded to d + d / M components, with M + 1 sub-quantizers.
///
/// Filtered search (params->sel) and removal: remove_ids marks tombstones; the graph
/// keeps the removed nodes (searches walk through them but never return them),
/// ntotal counts the others, and the ids of the others do not change, so ids are node
/// numbers in [0, nodeCount()). The next add() then rebuilds the graph (and in PQ mode
/// the codebooks) over the vectors that remain plus the new ones, which get sequential
/// ids again (0 .. ntotal - 1, the remaining ones in order, as faiss::IndexFlat after
/// remove_ids). A filtered
/// search walks the whole graph and keeps the best allowed nodes in a second list
/// (impl/BangFilteredSearch.h), or, when a host cost model finds it cheaper (few
/// allowed nodes), searches the allowed nodes exactly.
class GpuIndexBang : public GpuIndex {
   public:
    /// Largest worklist.
    static constexpr int kMaxSearchL = 1024;

    GpuIndexBang(
            GpuResources& resources,
            int d,
            faiss::MetricType metric = faiss::METRIC_L2,
            GpuIndexBangConfig config = GpuIndexBangConfig());
    ~GpuIndexBang() override;

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
    /// Bytes of the index in page-locked host memory: the full vectors under
    /// BangVectorPlacement::kHost, else 0.
    size_t hostMemoryBytes() const;
    /// Whether the vectors are stored as bytes now (GpuIndexBangConfig::vectorStorage).
    bool storesBytes() const;

    /// Nodes of the graph: ntotal plus the removed ones not yet compacted by an add.
    int64_t nodeCount() const;
    /// Whether node `id` was removed (remove_ids) since the last build.
    bool isRemoved(int64_t id) const;

    /// The vectors of nodes [i0, i0 + n) as added (removed nodes included), copied to
    /// the host (n x d).
    void copyNodeVectors(int64_t i0, int64_t n, float* out) const;
    /// The graph (nodeCount() x R, -1 padded), copied to the host.
    std::vector<int32_t> graph() const;
    int64_t entryPoint() const;
    int graphDegree() const {
        return bangConfig_.build.graphDegree;
    }
    const GpuIndexBangConfig& bangConfig() const {
        return bangConfig_;
    }
    /// Whether the search walks with PQ (ADC) distances.
    bool pqMode() const {
        return bangConfig_.pqSubquantizers > 0;
    }
    /// PQ mode with vectors: the codebooks (M x 256 x d / M) and codes (ntotal x M),
    /// copied to the host; else empty. Inner product codes its transformed rows: M + 1
    /// sub-quantizers over d + d / M components.
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

    /// The worklist size a search with search_L = requested and k uses (max of the two);
    /// throws if it is outside [1, kMaxSearchL].
    static int effectiveL(int requested, int64_t k);

    /// Memory of an index of n >= 1 vectors of d components with this metric and
    /// configuration, built on resources of `resources.tempMemoryBytes`, counted from
    /// the sizes of its arrays and of each build stage's (an upper bound on the build's
    /// device peak: its arrays within ~10%, the temporaries counted at their caps;
    /// tests/gpu_bang_memory.cpp, bench_bang). vectorStorage kAuto counts floats (the
    /// data decides), kBytes bytes. An add that rebuilds the graph checks buildDeviceBytes
    /// (for the storage its rows took) against the device memory available once the rows
    /// are stored, before any other work, and refuses with an error naming both when it
    /// would not fit.
    static BangMemoryEstimate estimateMemory(
            int64_t n,
            int d,
            faiss::MetricType metric,
            const GpuIndexBangConfig& config,
            const GpuResourcesConfig& resources = GpuResourcesConfig());

   protected:
    void addImpl_(int64_t n, const float* x, const int64_t* ids) override;
    void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const override;
    /// Marks tombstones (see the class comment); returns how many nodes were newly
    /// removed.
    size_t removeIdsImpl_(const faiss::IDSelector& sel) override;

   private:
    /// The worklist of a search with these params (checked: type, range) and k.
    int searchL_(const faiss::SearchParameters* params, int64_t k) const;
    /// Where the walks of a search with these params start (checked: a BangEntry).
    BangEntry searchEntry_(const faiss::SearchParameters* params) const;
    /// The search over the stored rows, of queries as wide as they are (storedDim_).
    void searchStored_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const;
    /// Takes over a state built elsewhere (setGraph; read_index streams a file into one,
    /// through impl/IndexAccess.h): rows as this index stores them (storedDim_ wide),
    /// their graph, and in PQ mode their codebooks and codes, all checked by the caller.
    void setDeviceState_(BangGraph&& state, float ipNormSq);

    /// The library's access to the device state (impl/IndexAccess.h: index files, tests
    /// and benchmarks that run the search kernels themselves).
    friend struct GpuIndexBangAccess;

    GpuIndexBangConfig bangConfig_;
    /// Width of the stored rows: d, or d + 1 for inner product (the MIPS transform).
    int storedDim_;
    /// Inner product: the transform's M2, the largest squared norm it was made with.
    float ipNormSq_ = 0;
    std::unique_ptr<BangGraph> state_;
    double lastKnnSeconds_ = 0;
    double lastSearchSeconds_ = 0;
    double lastPruneSeconds_ = 0;
};

} // namespace faiss_ext
