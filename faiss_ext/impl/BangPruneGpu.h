// The graph build's pruning on the GPU (kernels/BangPrune.h): pruneCandidateGraph's
// RobustPrune, reverse edges and second prune, with the per-node work in pages of
// bounded temporary device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/BangPrune.h>
#include <faiss_ext/impl/Progress.h>

namespace faiss_ext {

class BangRows;

/// Nodes [begin, end) of one page of the GPU prune and their candidate entries.
struct BangPrunePageRange {
    int64_t begin = 0;
    int64_t end = 0;
    int64_t entries = 0;
};

/// Device bytes of one page's arrays besides the sort's storage: per entry its id (4),
/// two key buffers (8 + 8) and a flag (1); per node a segment offset (4, one more in
/// all), its prune order (4) and its end for the global sort (4); and 4 KiB for the
/// allocations' rounding.
size_t bangPrunePageBytes(int64_t entries, int64_t nodes);

/// Splits nodes 0 .. n - 1 (n = offsets.size() - 1; node v has offsets[v + 1] -
/// offsets[v] candidate entries) into consecutive pages, each as long as fits: at most
/// budgetBytes of bangPrunePageBytes plus sortTempBytes(entries, nodes) (the segmented
/// sort's storage), and within the kernels' limits (kernels::kBangPruneMaxPageEntries,
/// kBangPruneMaxPageNodes). Throws faiss::FaissException naming the node and the bytes
/// when one node alone does not fit.
std::vector<BangPrunePageRange> planBangPrunePages(
        const std::vector<int64_t>& offsets,
        size_t budgetBytes,
        const std::function<size_t(int64_t entries, int64_t nodes)>& sortTempBytes);

/// The nodes of `order` (each at most once) split by the consecutive id ranges
/// [bounds[i], bounds[i + 1]) (ascending bounds): range i's nodes in the order of
/// `order`, as offsets from bounds[i]; nodes outside [bounds.front(), bounds.back())
/// are left out. One pass over `order`: the prune's pages and the build's ranges each
/// take their part of one split, where each page used to scan the whole order, which
/// made the host's time grow as n^2 / page.
std::vector<std::vector<int32_t>> splitOrderByRanges(
        const std::vector<int32_t>& order,
        const std::vector<int64_t>& bounds);

/// Candidate lists in device memory: node v's ids are ids[offsets[v] .. offsets[v + 1]);
/// the offsets stay on the host too (the prune plans its pages there).
struct BangDeviceCandidates {
    std::vector<int64_t> offsets{0}; ///< n + 1, host
    DeviceBuffer<int32_t> ids;       ///< offsets.back(), device

    int64_t size() const {
        return int64_t(offsets.size()) - 1;
    }
};

/// pruneCandidateGraph (impl/BangPrune.h) on the GPU, over the vectors `vectors` holds
/// (row v is node v; n = vectors.size() < 2^31; floats or bytes, the same graph): the
/// n x R graph in device memory, rows
/// padded with -1, neighbours in ascending (distance, id) order. The same graph as the
/// host's up to the rounding of distances, which the GPU sums in another (fixed) order:
/// where two distances, or a distance and alpha times another, are that close, the
/// choice may differ. Candidate ids outside [0, n) are ignored (the host's must be
/// valid); the first prune reads them in place and frees them, before the reverse edges
/// are listed. Device memory besides the candidates: the graph for the whole call, then
/// the in-degrees and the reverse-edge lists (n x R ids at most); the per-node work in
/// pages of at most res.tempMemoryBytes()
/// (planBangPrunePages; a node whose candidates and reverse edges alone do not fit is
/// refused with a faiss::FaissException). On the resources' stream, without waiting
/// for it except for the in-degrees. Reports the first prune, the reverse edges and
/// the second prune to `progress` (waiting for the device after each when it prints).
///
/// Extending a graph (firstNode > 0): rows 0 .. firstNode - 1 come from keptGraph
/// (device, firstNode x R) as they are, `candidates` holds the lists of nodes firstNode
/// .. n - 1 only, and the reverse edges are those of the new rows: a kept node with no
/// edge from a new node keeps its row, the others get their row plus the new nodes
/// pointing at them, pruned when more than R (DiskANN's insert, in one batch).
///
/// order (null: id order; else firstNode == 0 and every node once): the order in which
/// the nodes are pruned, which changes the speed, never the graph. Nodes near each
/// other in space next to each other (bangLocalityOrder) share their candidates' rows
/// in L2.
DeviceBuffer<int32_t> pruneCandidateGraphOnDevice(
        const GpuResources& res,
        const BangRows& vectors,
        BangDeviceCandidates candidates,
        int R,
        float alpha,
        const Progress& progress,
        const int32_t* keptGraph,
        int64_t firstNode,
        const std::vector<int32_t>* order = nullptr);

/// pruneCandidateGraphOnDevice's first half: RobustPrune of nodes firstNode ..
/// firstNode + candidates.size() - 1 (candidates: their lists) into those rows of
/// graph (device, vectors.size() x R); the other rows are not touched. Pages of at most
/// res.tempMemoryBytes(); order (null: id order): the range's nodes as offsets from
/// firstNode, each once, in the order they are pruned (splitOrderByRanges cuts a graph's
/// order into ranges). A refinement pass calls it for node ranges in turn, each range's
/// lists made and dropped in its turn.
void pruneCandidatesInto(
        const GpuResources& res,
        const BangRows& vectors,
        const BangDeviceCandidates& candidates,
        int R,
        float alpha,
        int64_t firstNode,
        const std::vector<int32_t>* order,
        int32_t* graph);

/// Its second half, over the whole graph (device, vectors.size() x R): the reverse
/// edges of rows firstNode .. (the pruned ones; earlier rows are kept rows of an
/// extension) added to every row, and the rows longer than R pruned again, in place.
void pruneWithReverseEdges(
        const GpuResources& res,
        const BangRows& vectors,
        int R,
        float alpha,
        int64_t firstNode,
        const std::vector<int32_t>* order,
        int32_t* graph,
        const Progress& progress);

/// pruneCandidateGraphOnDevice of host candidate lists (uploaded through the resources'
/// pinned staging), the graph copied back to the host.
std::vector<int32_t> pruneCandidateGraphGpu(
        const GpuResources& res,
        const BangRows& vectors,
        const BangCandidateLists& candidates,
        int R,
        float alpha,
        const std::vector<int32_t>* order = nullptr);

} // namespace faiss_ext
