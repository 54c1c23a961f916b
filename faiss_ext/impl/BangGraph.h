// GpuIndexBang's device state, as IvfLists is GpuIndexIVFFlat's: the vectors (floats or
// bytes with their norms: BangRows.h; or, placed on the host, floats in mapped host
// memory), the rows of the entry hubs, the graph, the entry point and, in PQ mode, the
// codebooks and codes; the search view over them and the search. The index
// class and the graph build reach the search kernels only through this owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/BangRows.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/MappedHostBuffer.h>
#include <kernels/BangSearch.h>

namespace faiss_ext {

struct BangPqTables;

/// How BangGraph::nearestHubs compares queries with hubs: one kernel of direct-form
/// distances straight from the stored rows (small batches), or an exact flat search of
/// the gathered hub rows (GEMM, then a k = 1 select).
enum class BangHubPath { kDirect, kFlat };

/// The path for nq queries against H hubs of d components (host cost rule).
BangHubPath bangHubPathFor(int64_t nq, int64_t H, int d);

/// Throws unless rows [v0, v0 + rows) of a graph of degree R over n nodes (ids:
/// their rows x R entries) hold only ids in [-1, n), none twice in a row; `what`
/// starts the message.
void checkGraphRows(
        const int32_t* ids,
        int64_t v0,
        int64_t rows,
        int R,
        int64_t n,
        const char* what);

/// The entry hubs of BangEntry::kNearestHub over n nodes: min(n, 8 sqrt(n)) evenly
/// spaced nodes (hub h: kernels::bangHubNode(h, n, H)).
int64_t bangEntryHubCount(int64_t n);

class BangGraph {
   public:
    /// An empty state for d-dimensional vectors, graphs of degree R and pqM
    /// sub-quantizers (0: exact mode), its device rows stored as `storage` says
    /// (kBytes and kAuto only where bangBytesApply).
    BangGraph(
            const GpuResources& res,
            int d,
            int R,
            int pqM,
            BangVectorStorage storage = BangVectorStorage::kFloat);
    BangGraph(BangGraph&&) = default;
    BangGraph& operator=(BangGraph&&) = default;

    /// Replaces the vectors with n host rows, on the device; the graph and PQ state of
    /// the old ones are dropped. Allocates first: a failure leaves the state as it was.
    void setVectors(int64_t n, const float* x);
    /// The same with the rows of `first` (either placement) followed by n rows of x
    /// (host or device).
    void setVectors(const BangGraph& first, int64_t n, const float* x);
    /// Takes over `rows` (of dim() components) as the vectors: the entry hubs' rows are
    /// gathered from them; the graph and PQ state of the old ones are dropped. A failure
    /// leaves the state as it was.
    void setVectors(BangRows rows);
    /// Replaces the vectors with n host rows kept in mapped host memory only (no device
    /// copy; the entry hubs' rows gathered on the host): setGraph of an index placed on
    /// the host, so it never holds its rows on the device. Allocates first.
    void setVectorsOnHost(int64_t n, const float* x);
    /// The same taking over `rows` (a multiple of dim() floats): read_index fills them
    /// from the file.
    void setVectorsOnHost(MappedHostBuffer<float> rows);
    /// Moves the vectors (not the entry hubs' rows) to mapped host memory
    /// (BangVectorPlacement::kHost): kernels then read them over the bus. Allocates
    /// first: a failure leaves the state as it was.
    void placeVectorsOnHost();
    /// Replaces the graph (size() x R ids in [-1, size()), host, checked by the
    /// caller) and the entry point.
    void setGraph(const int32_t* graph, int64_t entry);
    /// The same from a device array of size() x R ids, taken over without a copy.
    void setGraph(DeviceBuffer<int32_t> graph, int64_t entry);
    /// Frees the graph (a build pass whose searches are done); the state cannot be
    /// searched until the next setGraph.
    void releaseGraph();
    /// PQ mode: replaces the codebooks (pqM x 256 x d / pqM) and codes (size() x pqM).
    void setPq(const BangPqTables& tables);
    /// The same from device arrays, taken over without a copy.
    void setPq(DeviceBuffer<float> centroids, DeviceBuffer<uint8_t> codes);
    /// Replaces the tombstones: bit v of words (idFilterWords(size()) words) marks node v
    /// removed (searches walk through it but never return it). setVectors and clear
    /// drop them. Allocates first: a failure leaves the state as it was.
    void setTombstones(const std::vector<uint32_t>& words, int64_t count);
    void clear();

    /// What the search kernels walk (size() >= 1 and a graph set).
    kernels::BangGraphView view() const;
    /// The view without the PQ tables: exact distances, as the graph build searches
    /// (the codes are trained after the graph).
    kernels::BangGraphView exactView() const;
    /// The persistent search of nq device queries with worklist L (k <= L <= 1024):
    /// k results per query (ascending distance; -1 / +inf where missing) and, when
    /// iterations is not null, the parents each query expanded. An empty state gives
    /// only missing results. On the resources' stream, no host synchronisation.
    /// allow (device, one bit per node; null: every node): a filtered search, only
    /// allowed nodes are results (BangSearchArgs::allow). entry: where each walk starts
    /// (kNearestHub: each query's nearest of the bangEntryHubCount(size()) hubs first,
    /// nearestHubs).
    void search(
            const float* queries,
            int64_t nq,
            int k,
            int L,
            float* outD,
            int64_t* outI,
            int32_t* iterations = nullptr,
            const uint32_t* allow = nullptr,
            BangEntry entry = BangEntry::kMedoid) const;
    /// Each query's nearest of the H = bangEntryHubCount(size()) entry hubs (node
    /// kernels::bangHubNode(h, size(), H) is hub h) by L2, as entry keys (device, nq;
    /// kernels/BangHubEntry.h: kBangNoEntry for a query with a NaN or an infinity),
    /// found by `path`. The hubs' rows are kept on the device whatever the placement.
    DeviceBuffer<uint64_t> nearestHubs(const float* queries, int64_t nq, BangHubPath path) const;

    int64_t size() const {
        return vectorsOnHost() ? int64_t(hostRows_.size() / size_t(dim())) : vectors_.size();
    }
    int dim() const {
        return vectors_.dim();
    }
    int degree() const {
        return R_;
    }
    int pqSubquantizers() const {
        return pqM_;
    }
    int64_t entry() const {
        return entry_;
    }
    /// Whether the vectors are in host memory (placeVectorsOnHost).
    bool vectorsOnHost() const {
        return hostRows_.size() > 0;
    }
    /// The stored vectors and their squared norms, on the device (not placed on the
    /// host: the graph build's work state).
    const BangRows& vectors() const {
        FAISS_ASSERT(!vectorsOnHost());
        return vectors_;
    }
    /// How the rows are stored (BangVectorStorage): kAuto and kBytes may store bytes.
    BangVectorStorage storage() const {
        return storage_;
    }
    /// Whether the rows are stored as bytes.
    bool bytesStored() const {
        return vectors_.isBytes();
    }
    /// Rows ids[0 .. n) (device ids) as floats into device memory out (n x dim()), in
    /// either placement and storage.
    void gatherRows(const int64_t* ids, int64_t n, float* out) const;
    /// The rows placed on the host as the host addresses them (null on the device).
    const float* hostRows() const {
        return hostRows_.data();
    }
    /// Copies rows [i0, i0 + n) to host memory.
    void copyRowsToHost(int64_t i0, int64_t n, float* out) const;
    /// The graph (size() x R) and in PQ mode the codes (size() x pqM) on the device, for
    /// copies a piece at a time (write_index).
    const int32_t* deviceGraph() const {
        return graph_.data();
    }
    const uint8_t* devicePqCodes() const {
        return pqCodes_.data();
    }
    /// Host copies: the graph (size() x R), and in PQ mode the codebooks and codes
    /// (empty in exact mode or when nothing is stored).
    std::vector<int32_t> graph() const;
    std::vector<float> pqCentroids() const;
    std::vector<uint8_t> pqCodes() const;
    size_t deviceBytes() const;
    /// Bytes of the vectors placed on the host (0 on the device).
    size_t hostBytes() const {
        return hostRows_.bytes();
    }

    /// Removed nodes (setTombstones): their count, the host words (empty when none),
    /// the device words (null when none).
    int64_t tombstoneCount() const {
        return tombCount_;
    }
    const std::vector<uint32_t>& tombstoneWords() const {
        return tombHost_;
    }
    const uint32_t* deviceTombstones() const {
        return tombCount_ > 0 ? tombDev_.data() : nullptr;
    }
    bool isTombstone(int64_t node) const {
        return tombCount_ > 0 && ((tombHost_[size_t(node >> 5)] >> (node & 31)) & 1u);
    }

   private:
    /// Drops the graph, the PQ state, the entry point and the tombstones (new vectors).
    void dropGraph_();
    void clearTombstones_();

    const GpuResources* res_;
    int R_;
    int pqM_;
    BangVectorStorage storage_;
    BangRows vectors_;                 ///< on the device; empty when placed on the host
    MappedHostBuffer<float> hostRows_; ///< placed on the host: size() x dim()
    FlatStorage hubs_;                 ///< the entry hubs' rows (nearestHubs)
    DeviceBuffer<int32_t> graph_;      ///< size() x R
    DeviceBuffer<float> pqCentroids_;  ///< PQ mode: pqM x 256 x d / pqM
    DeviceBuffer<uint8_t> pqCodes_;    ///< PQ mode: size() x pqM
    int64_t entry_ = 0;
    std::vector<uint32_t> tombHost_;
    DeviceBuffer<uint32_t> tombDev_;
    int64_t tombCount_ = 0;
};

} // namespace faiss_ext
