// Vamana graph construction from candidate neighbours on the host: DiskANN's
// RobustPrune, reverse edges, re-pruning of overflowing nodes. Plain C++ (OpenMP),
// tested without a device. The build prunes on the GPU (impl/BangPruneGpu.h); this is
// its reference, kept in the library for the tests only (tests/cpu_bang.cpp, and
// tests/gpu_bang_prune.cpp, which compares the two on the same candidate lists).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace faiss_ext {

/// Squared L2 distance of two d-vectors (SIMD: AVX-512 / AVX2 chosen at load time where
/// the CPU has them; the construction spends most of its host time here).
float bangL2Sqr(const float* a, const float* b, int d);

/// One candidate: (squared L2 distance to the node, id).
using BangCandidate = std::pair<float, int32_t>;

/// DiskANN RobustPrune of one node. cand: sorted ascending by (distance, id), unique
/// ids, the node itself excluded; only the first kernels::kBangPruneWalkPerEdge x R are
/// considered (DiskANN's maxc). Repeatedly selects the closest remaining candidate
/// p* and drops every remaining c with alpha * d(p*, c) <= d(node, c) (squared
/// distances, as DiskANN does for L2), until R are selected or none remain. Returns
/// the selected ids in selection order. x: the row-major vectors (d columns) ids index.
std::vector<int32_t> robustPrune(
        const float* x,
        int d,
        const std::vector<BangCandidate>& cand,
        float alpha,
        int R);

/// Candidate ids of n nodes, compressed rows: node v's are ids[offsets[v], offsets[v+1]).
/// -1, repeats and the node itself are allowed (and ignored).
struct BangCandidateLists {
    std::vector<int64_t> offsets{0}; ///< n + 1
    std::vector<int32_t> ids;

    int64_t size() const {
        return int64_t(offsets.size()) - 1;
    }
    /// Appends the next node's candidates.
    void append(const int32_t* c, size_t count) {
        ids.insert(ids.end(), c, c + count);
        offsets.push_back(int64_t(ids.size()));
    }
};

/// Builds the graph (n x R, rows padded with -1): RobustPrune of each node's
/// candidates, then each node's out-edges plus its reverse edges, re-pruned to R where
/// they are more than R. Rows list neighbours by ascending (distance, id). The reference
/// of pruneCandidateGraphGpu (impl/BangPruneGpu.h), which the build runs.
std::vector<int32_t> pruneCandidateGraph(
        const float* x,
        int64_t n,
        int d,
        const BangCandidateLists& candidates,
        int R,
        float alpha);

} // namespace faiss_ext
