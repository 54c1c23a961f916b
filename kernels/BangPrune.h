// Host entry points of the graph build's pruning kernels (plain C++: no device code
// here): DiskANN's RobustPrune of every node's candidates, and the reverse edges, on the
// GPU. The pipeline that pages nodes through them is impl/BangPruneGpu.h; the host
// reference they must agree with is pruneCandidateGraph (impl/BangPrune.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Threads per block of the per-node kernels: 32 groups of 8 lanes, one candidate
/// distance per group.
constexpr int kBangPruneThreads = 256;
/// A node with at most this many candidate entries has its keys made and sorted in
/// shared memory by its prune block (8 KiB of keys); a larger one (a hub's reverse
/// edges) goes through a keys kernel and CUB's segmented sort, in global memory.
constexpr int kBangPruneSharedSortMax = 1024;
/// RobustPrune considers a node's closest kBangPruneWalkPerEdge x R distinct candidates
/// (DiskANN's maxc, tied to R here); the farther ones are never selected. Without the
/// cap a hub's hundreds of reverse edges make its prune R passes over all of them: on
/// 20M x 128 blobs (H100) the prunes took 72.6 s, with it 37.2 s, recall@10 at L 40
/// 0.7941 -> 0.7919 (benchs/NOTES.md, twenty-eighth session).
constexpr int kBangPruneWalkPerEdge = 4;
/// Most nodes, and most candidate entries, of one page (the kernels index a page's
/// entries with int).
constexpr int64_t kBangPruneMaxPageEntries = int64_t(1) << 30;
constexpr int64_t kBangPruneMaxPageNodes = int64_t(1) << 30;

/// One page of nodes in device memory: nodes v0 .. v0 + nodes - 1, node v0 + s with the
/// candidate ids ids[segments[s] .. segments[s + 1]) (segments: nodes + 1 entries,
/// segments[0] = 0, segments[nodes] = entries). Ids outside [0, n), and the node
/// itself, are ignored; an id may repeat.
struct BangPrunePage {
    /// n x d, row-major: floats (16-byte aligned), or bytes in byteVectors instead (every
    /// component an integer in [0, 255]; 4-byte aligned; vectors null): the same graph.
    const float* vectors = nullptr;
    const uint8_t* byteVectors = nullptr;
    int64_t n = 0;
    int d = 0;
    int64_t v0 = 0;
    int nodes = 0;
    const int32_t* segments = nullptr; ///< nodes + 1
    const int32_t* ids = nullptr;      ///< entries
    int entries = 0;
    /// nodes entries, a permutation of 0 .. nodes - 1 (null: the identity): block b
    /// prunes node v0 + order[b]. Blocks run roughly in order, so nodes whose candidates
    /// overlap, put next to each other here, read their candidates' rows from L2.
    const int32_t* order = nullptr;
    /// The most entries of one node of the page.
    int longest = 0;
    /// Needed when longest > kBangPruneSharedSortMax (else unused): nodes entries, the
    /// end of each node's entries for the global sort: segments[s + 1] for a node above
    /// kBangPruneSharedSortMax, segments[s] (nothing to sort) for the others.
    const int32_t* sortEnds = nullptr;
};

/// Scratch of one page (device memory, `entries` elements each) and CUB's temporary
/// storage of the segmented sort (bangPruneSortTempBytes).
struct BangPruneWork {
    uint64_t* keys = nullptr;
    uint64_t* keysAlt = nullptr;
    uint8_t* alive = nullptr;
    void* sortTemp = nullptr;
    size_t sortTempBytes = 0;
};

/// The most dynamic shared memory of the per-node kernels for d-dimensional vectors
/// (a round's pivot rows, and kBangPruneSharedSortMax keys and flags).
size_t bangPruneSmemBytes(int d);

/// Temporary storage of the segmented sort of `entries` keys in `nodes` segments (0
/// when entries is 0). Reads the current device's properties (CUB), launches nothing.
size_t bangPruneSortTempBytes(int64_t entries, int64_t nodes);

/// Rows v0 .. v0 + nodes - 1 of graph (n x R, int32): for each node, its distinct valid
/// candidates sorted by (squared L2 distance to the node, id), then
/// - RobustPrune (alpha, at most R selected, over the first kBangPruneWalkPerEdge x R of
///   them), or, with copyWhenFits, the candidates themselves when there are at most R
///   of them (RobustPrune otherwise);
/// written in ascending (distance, id) order, padded with -1. Three steps: the keys
/// (distance bits above the id, one group of 8 lanes per distance, a fixed summation
/// order), their sort (in shared memory, or CUB's segmented sort for the nodes above
/// kBangPruneSharedSortMax), the prune (one block per node). Distances are summed in
/// the same order by every step, so d(a, b) == d(b, a) bit for bit and equal ids
/// have equal keys (repeats are adjacent after the sort). Needs bangPruneSmemBytes(d) of
/// dynamic shared memory, which the caller has checked against the device's limit.
/// On `stream`; CUB's sort may wait for the stream once.
void bangPrunePage(
        const BangPrunePage& page,
        const BangPruneWork& work,
        int R,
        float alpha,
        bool copyWhenFits,
        int32_t* graph,
        cudaStream_t stream);

/// inDegree[u] += 1 for every entry u in [0, n) of rows firstSource .. n - 1 of graph
/// (n x R); inDegree: n counters, zeroed by the caller.
void bangCountInEdges(
        const int32_t* graph,
        int64_t n,
        int R,
        int64_t firstSource,
        int32_t* inDegree,
        cudaStream_t stream);

/// For every edge v -> u of graph (entry u in [0, n) of row v >= firstSource):
/// inIds[inOffsets[u] + cursor[u]++] = v. inOffsets: n + 1 exclusive sums of the
/// in-degrees (bangCountInEdges with the same firstSource); cursor: n counters zeroed by
/// the caller. The order within one node's list depends on the scheduling; the prune
/// sorts it by (distance, id), so its result does not.
void bangFillInEdges(
        const int32_t* graph,
        int64_t n,
        int R,
        int64_t firstSource,
        const int64_t* inOffsets,
        int32_t* cursor,
        int32_t* inIds,
        cudaStream_t stream);

/// The second prune's candidates of one page: node v = v0 + s gets, at
/// ids[segments[s] ..], its graph row (R entries, -1 included) followed by its in-edges
/// inIds[inOffsets[v] .. inOffsets[v + 1]) (so segments[s + 1] - segments[s] = R +
/// in-degree of v, which the caller has arranged).
void bangGatherOutAndInEdges(
        const int32_t* graph,
        int R,
        const int64_t* inOffsets,
        const int32_t* inIds,
        int64_t v0,
        int nodes,
        const int32_t* segments,
        int32_t* ids,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
