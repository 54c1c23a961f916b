// Building the BANG (Vamana) graph of a set of vectors: candidate neighbours from exact
// k-NN searches on the GPU, pruning on the host (BangPrune.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/FlatStorage.h>

namespace faiss_ext {

struct BangBuildParams {
    int R = 64;            ///< graph degree
    float alpha = 1.2f;    ///< RobustPrune's alpha
    int candidates = 64;   ///< exact nearest neighbours of each vector fed to the first prune
    int64_t hubs = 0;      ///< evenly spaced hub vectors (0: 4 sqrt(n))
    int passes = 2;        ///< Vamana refinement passes after the first graph
    int buildL = 64;       ///< worklist of the refinement passes' searches
    size_t pageBytes = size_t(256) << 20; ///< host <-> device staging of k-NN results
};

struct BangBuildResult {
    std::vector<int32_t> graph; ///< n x R, -1 padded
    int64_t medoid = 0;         ///< the vector nearest the centroid
    double knnSeconds = 0;      ///< GPU k-NN searches (candidates, hubs, medoid)
    double searchSeconds = 0;   ///< GPU graph searches of the refinement passes
    double pruneSeconds = 0;    ///< host pruning and reverse edges (all passes)
};

/// Hubs per node and per hub in the first candidate lists (see buildBangGraph).
constexpr int kBangHubsPerNode = 8;
constexpr int kBangHubsPerHub = 1024;

/// The hub count actually used for n vectors.
int64_t bangHubCount(int64_t n, int64_t requested);

/// Builds the graph of the n vectors held by `storage` (xHost: the same vectors on the
/// host), in two stages.
/// 1. A first graph from candidates found by exact k-NN on the GPU: each vector's
///    `candidates` nearest neighbours, its kBangHubsPerNode nearest hubs, and for a hub
///    its kBangHubsPerHub nearest other hubs; pruned (pruneCandidateGraph). The hubs
///    connect what a pure k-NN graph leaves apart (separate clusters).
/// 2. `passes` Vamana passes (DiskANN's construction, run as one batch per pass): every
///    vector is searched on the GPU in the current graph from the medoid with worklist
///    buildL; the parents the search expanded plus the vector's current neighbours
///    are its candidates; then prune, reverse edges, re-prune. The expanded parents
///    lie along the routes searches take, which is what makes the graph navigable
///    (on clustered data, recall@10 at L = 10 goes from ~0.3 without these passes to
///    ~0.97 with two).
BangBuildResult buildBangGraph(
        const GpuResources& res,
        const FlatStorage& storage,
        const float* xHost,
        const BangBuildParams& params);

} // namespace faiss_ext
