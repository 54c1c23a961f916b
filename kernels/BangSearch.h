// Host entry points of the BANG graph search kernels (plain C++: no device code here).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Threads per query block (32 groups of 8 lanes, one neighbour per group).
constexpr int kBangThreads = 256;
/// Largest graph degree R the search supports.
constexpr int kBangMaxDegree = 128;
/// Largest worklist L.
constexpr int kBangMaxL = 1024;

/// The graph and vectors one search walks, in device memory.
struct BangGraphView {
    /// n x d, row-major: the rows as floats, or (exact mode only) as bytes in
    /// byteVectors instead (every component an integer in [0, 255], vectors null).
    const float* vectors = nullptr;
    const uint8_t* byteVectors = nullptr;
    const int32_t* graph = nullptr; ///< n x R neighbour ids, -1 after the last one
    int64_t n = 0;                  ///< >= 1, < 2^31
    int d = 0;
    int R = 0;         ///< in [1, kBangMaxDegree]
    int32_t entry = 0; ///< the medoid: every search starts there
    /// PQ mode (pqM >= 1): traversal distances are ADC sums over these codes (n x pqM
    /// bytes) and centroids (pqM x 256 x d / pqM floats, faiss::ProductQuantizer's
    /// layout), and the final worklist is re-ranked with exact distances from
    /// `vectors` (float rows). 0: exact distances throughout.
    int pqM = 0;
    const uint8_t* codes = nullptr;
    const float* pqCentroids = nullptr;
};

/// One batch of queries (device memory). Results: the k <= L best of the final
/// worklist (PQ mode: by exact distance after the re-rank), ascending squared L2
/// distance; missing ones (fewer than k nodes reached,
/// or a query with a NaN) are id -1 and distance +inf. iterations (nullable): the
/// parents expanded per query.
struct BangSearchArgs {
    const float* queries = nullptr; ///< nq x d
    int64_t nq = 0;
    int L = 0;
    int k = 0;
    float* outD = nullptr;         ///< nq x k
    int64_t* outI = nullptr;       ///< nq x k
    int32_t* iterations = nullptr; ///< nq, or null
    /// Graph construction: the first maxVisited parents each
    /// query expanded, in order (nq x maxVisited; a query's count is
    /// min(iterations, maxVisited)), or null.
    int32_t* visited = nullptr;
    int maxVisited = 0;
    /// Filtered search (null: none): one bit per node (kernels/IdFilter.h). The worklist
    /// still walks every node; a second sorted list of L keeps the best allowed nodes
    /// seen, and the results (PQ mode: after its exact re-rank) come from it.
    const uint32_t* allow = nullptr;
    /// Where each query starts (null: g.entry for every query): query q starts at hub
    /// bangEntryHub(entryKeys[q]) of `hubs` (kernels/BangHubEntry.h), node
    /// bangHubNode(hub, g.n, hubs) (kernels/BangCandidates.h); kBangNoEntry starts it at
    /// g.entry.
    const uint64_t* entryKeys = nullptr;
    int64_t hubs = 0;
};

/// Dynamic shared memory of one block of the persistent kernel (pqM: sub-quantizers in
/// PQ mode, whose ADC table takes pqM KiB; 0 in exact mode; filtered: with the result
/// list of a filtered search, 16 L bytes more).
size_t bangPersistentSmemBytes(int L, int R, int d, int pqM, bool filtered = false);

/// Persistent variant: one launch; each block loops over its query's iterations
/// (parent selection, Bloom filter, distances, merge by rank) with the whole state, the
/// Bloom filter included, in shared memory.
void bangSearchPersistent(const BangGraphView& g, const BangSearchArgs& a, cudaStream_t stream);

/// out[q * nb + b] = squared L2 distance of query q to base row b, computed by the
/// same device function (and summation order) as the search: for the tests' CPU
/// reference of the search.
void bangDistanceTable(
        const float* queries,
        int64_t nq,
        const float* base,
        int64_t nb,
        int d,
        float* out,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
