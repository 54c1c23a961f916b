// Building the BANG (Vamana) graph of a set of vectors: candidate neighbours from k-NN
// searches on the GPU (exact, or in IVF lists for large n: IvfSelfKnn.h), pruning on the
// GPU (BangPruneGpu.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/Progress.h>

namespace faiss_ext {

class BangGraph;

/// Where the time of one build went.
struct BangBuildTimes {
    double knnSeconds = 0;    ///< GPU k-NN searches (candidates, hubs, medoid)
    double searchSeconds = 0; ///< GPU graph searches of the refinement passes
    /// GPU pruning and reverse edges (all passes; the candidates' upload and the graph's
    /// download included)
    double pruneSeconds = 0;
};

/// Hubs per node and per hub in the first candidate lists (see buildBangGraph).
constexpr int kBangHubsPerNode = 8;
constexpr int kBangHubsPerHub = 1024;

/// The hub count actually used for n vectors.
int64_t bangHubCount(int64_t n, int64_t requested);

/// The rows of H evenly spaced hubs (hub h: row kernels::bangHubNode(h, n, H)) of n host
/// rows x of d components, as an H x d host array.
std::vector<float> bangHubRowsOf(const float* x, int64_t n, int d, int64_t H);

/// The nodes 0 .. cell.size() - 1 ordered by cell (cell[v] in [0, cells); any other
/// value after the last cell), by id within a cell: the order in which the build prunes
/// its nodes, cell[v] being v's nearest hub, so that nodes pruned at the same time share
/// their candidates' rows in L2 (pruneCandidateGraphOnDevice).
std::vector<int32_t> bangLocalityOrder(const std::vector<int64_t>& cell, int64_t cells);

/// From this many vectors up, BangBuildConfig::candidateLists = -1 finds the first
/// candidates in IVF lists. The exact k-NN grows as n^2 (6.3 s at 1M x 128 on an
/// H100, so ~0.25 s at 200K), k-means and the lists' search as n^1.5 plus a fixed cost;
/// below this the exact one is about as fast and exact.
constexpr int64_t kBangIvfCandidatesFrom = 200000;

/// Device bytes one node takes in a refinement pass's search and lists (its parents,
/// their lists and bookkeeping): the pass handles its nodes in ranges of
/// bangPassNodes(n, config, tempMemoryBytes) = tempMemoryBytes / these bytes (1 .. n).
size_t bangPassBytesPerNode(const BangBuildConfig& config);
int64_t bangPassNodes(int64_t n, const BangBuildConfig& config, size_t tempMemoryBytes);

/// The IVF list count a build of n vectors uses for its first candidates
/// (BangBuildConfig::candidateLists `requested`): 0 for the exact k-NN.
int64_t bangCandidateLists(int64_t n, int64_t requested);

/// Builds the graph of the n vectors `work` holds (xHost: the same vectors on the host)
/// and sets it, with the medoid (the vector nearest the centroid) as the entry point,
/// in `work`. Everything per node stays on the device (kernels/BangCandidates.h): the
/// k-NN ids, each stage's candidate lists (about n x (candidates + 9) ids for the first
/// graph; a pass's, n x (2 searchL + R), a range of passNodes nodes at a time, by
/// default bangPassNodes of the temporary memory), the visited parents and the graph; the host
/// reads the vectors for the hubs and plans the prune's pages from the
/// lists' offsets. k-NN searches run in pages of pageBytes. Two stages:
/// 1. A first graph from candidates found by k-NN searches on the GPU: each vector's
///    config.candidates nearest neighbours (exact, or from IVF lists over the vectors:
///    bangCandidateLists, ivfSelfKnn), its kBangHubsPerNode nearest hubs, and for a hub its
///    kBangHubsPerHub nearest other hubs (exact); pruned (pruneCandidateGraphGpu). The
///    hubs connect what a pure k-NN graph leaves apart (separate clusters).
/// 2. config.passes Vamana passes (DiskANN's construction, one batch per pass): every
///    vector is searched on the GPU in the current graph from the medoid with worklist
///    config.searchL; the parents the search expanded plus the vector's current neighbours
///    are its candidates; then prune (node ranges in turn: the same graph for any
///    range), reverse edges, re-prune. The expanded parents
///    lie along the routes searches take, which is what makes the graph navigable
///    (on clustered data, recall@10 at L = 10 goes from ~0.3 without these passes to
///    ~0.97 with two).
/// Reports each stage (candidates, first prune, each pass's searches and prune) to
/// `progress`.
BangBuildTimes buildBangGraph(
        GpuResources& res,
        BangGraph& work,
        const float* xHost,
        const BangBuildConfig& config,
        size_t pageBytes,
        const Progress& progress,
        int64_t passNodes = 0);

/// Extends the graph `old` holds (its vectors are the first old.size() rows of work's)
/// to every vector `work` holds, and sets the result, with old's entry point, in work
/// (DiskANN's insert, one batch): each new vector gets as candidates the parents its
/// search in the old graph expanded (worklist config.searchL) and its config.candidates
/// nearest new vectors (exact, or from IVF lists for many: bangCandidateLists; newX: the
/// new rows in host or device memory, for its k-means); those are pruned, and a node
/// that a new one points at gets its row plus those new nodes, pruned to R when more
/// (pruneCandidateGraphOnDevice). Then config.passes Vamana passes over the new nodes
/// only: each searched again in the extended graph, its row re-pruned with the parents
/// it expanded there, reverse edges again. Old rows no new node points at stay as they
/// are. Everything per node on the device, as buildBangGraph.
BangBuildTimes extendBangGraph(
        GpuResources& res,
        BangGraph& work,
        const BangGraph& old,
        const float* newX,
        const BangBuildConfig& config,
        size_t pageBytes,
        const Progress& progress);

} // namespace faiss_ext
