// GpuIndexBang's filtered search (a selector, tombstones, or both): the host cost model
// that chooses between the filtered graph walk and an exact search over the allowed
// nodes, and that exact search.
#pragma once

#include <cstdint>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

class BangGraph;

/// What one filtered search does.
struct BangFilterPlan {
    /// true: exact search over the allowed nodes (gathered in chunks, GEMM + select).
    bool exact = false;
    /// Graph walk: its worklist (>= L). The walk visits every node, but only a fraction
    /// f = allowed / nodes of what it sees can be a result, so the worklist is widened
    /// with 1 / sqrt(f) (at most 4x, at most maxL).
    int walkL = 0;
};

/// The cost model. Graph: about 1.5 walkL x R gathered distances per query. Exact:
/// `allowed` distances per query, computed as a GEMM about kBangExactSpeedup times
/// cheaper per distance than the walk's gathered ones. The exact search also wins
/// whenever the widened worklist is expected to hold fewer than k allowed nodes (f x
/// walkL < k): then the walk cannot return k good results. kBangExactSpeedup is
/// measured (below); the walk's 1.5 walkL x R is the first estimate still.
BangFilterPlan planBangFilteredSearch(
        int64_t allowed,
        int64_t nodes,
        int L,
        int R,
        int k,
        int maxL);

/// planBangFilteredSearch on a device of maxSmemPerBlock bytes of shared memory per
/// block: maxL is the widest worklist (at most maxSearchL, in steps of 32) whose filtered
/// persistent search fits it, and the plan is exact when even L does not fit. R, d and
/// M (PQ sub-quantizers, 0: exact distances) size the search kernel's shared memory.
BangFilterPlan planBangFilteredSearchOnDevice(
        int64_t allowed,
        int64_t nodes,
        int L,
        int k,
        int R,
        int d,
        int M,
        int maxSearchL,
        size_t maxSmemPerBlock);

/// Per-distance cost ratio of the walk's gathered reads to the exact search's GEMM.
/// Measured on an H100 (SIFT 1M x 128, k = 10, R = 64, bench_filtered --sift,
/// 2026-11-23): at batch 10000 the ratio is 8.5 with random allowed ids and 9.5 with
/// ranges (walk: 6.86 ms at walkL 57 to 41.6 ms at walkL 320 per 10000 queries; exact:
/// 12.8-14.3 ms at 10% allowed, 2.5-2.6 ms at 1%, 60-66 ms at 50%).
constexpr double kBangExactSpeedup = 9.0;

/// Exact k-NN (squared L2) of nq device queries over the nodes whose bit is set in
/// allowDevice (device words over g.size() nodes; `allowed` of those bits set, in [1,
/// g.size()]): the allowed node ids are listed on the device (a stream compaction of the
/// bitmap, ascending), their vectors gathered in chunks that fit the temporary budget,
/// searched, and merged. Results as BangGraph::search. One read-back (8 bytes, a wait
/// for the stream): the bitmap's count, which must equal `allowed` (else it throws,
/// before anything is written).
void bangExactAllowed(
        const GpuResources& res,
        const BangGraph& g,
        const float* queries,
        int64_t nq,
        int k,
        const uint32_t* allowDevice,
        int64_t allowed,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
