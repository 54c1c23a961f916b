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

/// Plans the tiles for nq queries against nb vectors (pure host arithmetic).
/// Segments are made as long as possible while one base tile still yields at least
/// `minBlocks` selection blocks: each block has a fixed cost (sorting its first
/// candidates) that long segments amortise. Throws if one query does not fit.
FlatTiling planFlatTiling(
        int64_t nq, int64_t nb, int k, size_t budgetBytes, int64_t minBlocks);

/// Vectors of one flat search, all in device memory.
struct FlatSearchInput {
    const float* queries = nullptr; ///< nq x d, row-major
    int64_t nq = 0;
    const float* base = nullptr; ///< nb x d, row-major
    const float* baseNorms = nullptr; ///< nb squared norms (L2 only)
    int64_t nb = 0;
    int d = 0;
    faiss::MetricType metric = faiss::METRIC_L2;
};

/// Writes the k nearest of each query, best first, to outD / outI (device, nq x k),
/// in FAISS conventions (ids are base row numbers, -1 / +-inf when nb < k).
/// Everything runs on res.stream(); nothing waits for the host.
void flatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
