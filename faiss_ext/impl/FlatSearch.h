// Exact k-NN on the device: cuBLAS GEMM tiles + streaming k-selection, in bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

/// How one exact search is cut so that its temporaries fit a memory budget.
struct FlatTiling {
    int64_t queryTile = 0; ///< queries per GEMM
    int64_t baseTile = 0;  ///< base vectors per GEMM (a multiple of segLen, or all)
    int64_t segLen = 0;    ///< columns one selection block reduces to k candidates
    size_t bytes = 0;      ///< temporaries this plan allocates
};

/// Plans the tiles for nq queries against nb vectors (pure host arithmetic) when the
/// selection keeps k per segment. Segments start at `minSegLen` (at least 4 nextPow2(k))
/// and grow while one base tile still yields at least `minBlocks` selection units
/// (blocks or warps): each unit has a fixed cost that long segments amortise. Throws if
/// one query does not fit.
FlatTiling planFlatTiling(
        int64_t nq,
        int64_t nb,
        int k,
        size_t budgetBytes,
        int64_t minBlocks,
        int64_t minSegLen = 4096);

/// Shortlist length the TF32 path re-ranks for k results.
int flatTF32Shortlist(int k);

/// Whether the TF32 path can serve k (its shortlist and boundary fit the selection).
bool flatTF32Supports(int k);

/// Vectors of one flat search, all in device memory.
struct FlatSearchInput {
    const float* queries = nullptr; ///< nq x d, row-major
    int64_t nq = 0;
    const float* base = nullptr;      ///< nb x d, row-major
    const float* baseNorms = nullptr; ///< nb squared norms (L2 only)
    int64_t nb = 0;
    int d = 0;
    faiss::MetricType metric = faiss::METRIC_L2;
    /// false: FP32 GEMM (CUDA cores) and selection of the k best. true (needs
    /// flatTF32Supports(k)): TF32 GEMM (tensor cores), selection of a shortlist of
    /// flatTF32Shortlist(k) plus a boundary key, FP32 re-rank of the shortlist; queries
    /// whose boundary is not provably beyond the TF32 error are searched again in FP32,
    /// so results are those of FP32 arithmetic either way.
    bool tf32 = false;
    /// Filtered search (null: none): a device bitmap over base rows (kernels/IdFilter.h);
    /// only rows whose bit is set are results, and fewer than k allowed rows leave -1 /
    /// +-inf. A filtered search runs the FP32 path whatever tf32 says: the TF32
    /// shortlist's boundary test does not know which rows the filter removed.
    const uint32_t* allow = nullptr;
};

/// dist (nq x nb, row-major) = -2 Q B^T (L2) or -Q B^T (inner product) for the nq
/// queries q against base rows [b0, b0 + nb) of in.base: the keys before the norms.
void flatDistanceTile(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* q,
        int64_t nq,
        int64_t b0,
        int64_t nb,
        bool tf32,
        float* dist);

/// What one search did beyond its plan (for benchmarks).
struct FlatSearchStats {
    int64_t fallbackQueries = 0; ///< TF32 path: queries searched again in FP32
};

/// Writes the k nearest of each query, best first, to outD / outI (device, nq x k),
/// in FAISS conventions (ids are base row numbers, -1 / +-inf when nb < k).
/// Everything runs on res.stream(); nothing waits for the host.
/// The TF32 path waits for the host once per call (the count of queries to search again).
void flatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI,
        FlatSearchStats* stats = nullptr);

} // namespace faiss_ext
