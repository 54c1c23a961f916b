// The IVF-Flat search pipeline: planning (pure host arithmetic, tested without a
// device) and running its stages (coarse search, list scan, merge) over query tiles in bounded
// memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/IvfCoarseSearch.h>
#include <faiss_ext/impl/IvfLists.h>
#include <kernels/IvfScan.h>

namespace faiss_ext {

/// What the planner needs to know about one search.
struct IvfPlanInput {
    int64_t nq = 0;
    int nprobe = 0; ///< already clamped to nlist
    int k = 0;
    int d = 0;
    faiss::MetricType metric = faiss::METRIC_L2;
    /// The list lengths sorted in descending order (IvfLists::lengthsDescending()):
    /// planning then costs O(nprobe), not O(nlist), per search.
    const std::vector<int64_t>* listLengthsDescending = nullptr;
    int64_t chunkOverride = 0; ///< 0: automatic
    IvfMergePath mergePath = IvfMergePath::kAuto;
    IvfScanPath scanPath = IvfScanPath::kAuto;
    /// The per-query path's kernel: kAuto lets the scan choose (kernels::ivfQueryScanKernel);
    /// the others are forced, for tests and benchmarks (GpuIndexIVFFlatAccess).
    kernels::IvfQueryScanKernel queryKernel = kernels::IvfQueryScanKernel::kAuto;
    /// The coarse search's path: kAuto lets ivfCoarsePathFor choose per tile; the others
    /// are forced, for tests and benchmarks (GpuIndexIVFFlatAccess).
    IvfCoarsePath coarsePath = IvfCoarsePath::kAuto;
    size_t budgetBytes = 0;     ///< temporaries of the list scan and merge
    size_t maxSmemPerBlock = 0; ///< the device's opt-in limit
    int smCount = 0;
};

struct IvfSearchPlan {
    int64_t chunkLen = 0; ///< vectors per scan block (a multiple of 32; list-major: per
                          ///< window of the query's distance row)
    int64_t chunksPerQuery =
            0; ///< candidate slots per query: the most chunks nprobe lists can have
    int64_t candidatesPerQuery = 0; ///< chunksPerQuery * k
    /// Slots a query is expected to have (nprobe lists of average length): sizes the
    /// scan's grid, which runs only the slots that hold vectors.
    double expectedSlotsPerQuery = 0;
    int64_t queryTile = 0; ///< queries per pass of the pipeline
    bool fastMerge = false;
    size_t fastMergeSmemBytes = 0; ///< what the fast path would need
    bool listMajor = false;
    /// The list-major product writes L2 keys, re-ranked exactly after the merge
    /// (kernels/IvfKeyRerank.h).
    bool listMajorKeys = false;
    /// IvfPlanInput::queryKernel, checked (the per-query path only).
    kernels::IvfQueryScanKernel queryKernel = kernels::IvfQueryScanKernel::kAuto;
    /// IvfPlanInput::coarsePath, checked as far as the shape tells (ivfCoarsePathFor
    /// checks the rest: precision, device).
    IvfCoarsePath coarsePath = IvfCoarsePath::kAuto;
    int64_t maxRowVectors = 0; ///< list-major: distance buffer columns per query
    size_t bytesPerQuery = 0;
    size_t bytes = 0; ///< temporaries of one tile
};

/// IvfMergePath::kAuto takes the heap merge for k <= kernels::kMaxWarpRowSelectK (a warp
/// a query, the best k in registers: the fast merge's 512-thread block a query took 75 us
/// for 10000 queries of 30 candidates on an H100, benchs/NOTES.md). Above that k, the
/// fast merge (one block sorts a query's candidates) up to this many candidates per
/// query when its shared memory fits, the heap merge above.
/// Both forced on SIFT (bench_ivf_paths --merge-only, H100): within 5% of each other at
/// k 10 up to 3790 candidates; at k 100 the heap is 1.02-1.08x faster at 1200,
/// 1.2-1.3x at 6800, 1.5-1.7x at 13200.
constexpr int64_t kFastMergeMaxCandidates = 1024;

/// Plans one search. Throws (naming the sizes) if one query's temporaries exceed the
/// budget, if kFast is forced and its shared memory exceeds the device limit, or if the
/// per-query warp kernel or the fused coarse search is forced for a k, nprobe or d it
/// cannot serve. The temporaries count the fused coarse search's candidates wherever
/// it may run (nextPow2(nprobe) <= kernels::kCoarseFusedMaxK, not forced off).
IvfSearchPlan planIvfSearch(const IvfPlanInput& in);

/// Shared memory the list scan needs for d and k (checked against the device limit).
size_t ivfScanSharedBytes(int d, int k);

/// Everything one search reads, in device memory.
struct IvfSearchInput {
    /// centroids (queries and nq are set per tile); its precision is the index's
    /// coarsePrecision, resolved per tile by ivfCoarsePrecision
    FlatSearchInput coarse;
    /// The centroids' split for the fused coarse path, kept by the index
    /// (IvfCoarseFragments; null: each search splits them).
    const float4* coarseFragments = nullptr;
    const IvfLists* lists = nullptr;
    faiss::MetricType metric = faiss::METRIC_L2;
    int nprobe = 0;
    /// Filtered search (null: none): a device bitmap over the lists' slots
    /// (IvfLists::slotBase); vectors whose bit is clear are skipped by the scan.
    const uint32_t* allow = nullptr;
};

/// The product of the coarse search of coarse.nq queries for their top nprobe lists:
/// coarse.precision unless it is kAuto; kAuto takes 3xTF32 on devices of compute
/// capability 8.0 and newer from 1024 queries (where the flat search takes its tiles path
/// and the operand splits take at most a quarter of the temporary budget), FP32 else.
GpuFlatPrecision ivfCoarsePrecision(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe);

/// Runs the pipeline for nq device queries, writing n x k FAISS results to device
/// memory, all on res.stream() with no host synchronisation.
void ivfSearch(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* queries,
        int64_t nq,
        int k,
        const IvfSearchPlan& plan,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
