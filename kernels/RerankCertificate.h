// Host entry points of the rerank path's proof that its kept candidates hold every
// query's k nearest (impl/FlatRerankSearch.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// minKth[r] = the smallest over segments s < nseg of segKeys[r * ld + s * k + k - 1],
/// each segment's k-th smallest key as selectRowsMin leaves it (sorted ascending, +inf
/// when the segment held fewer than k), and of minKth[r] itself unless init; r < nrows.
void segmentKthMin(
        const float* segKeys,
        int64_t ld,
        int64_t nrows,
        int64_t nseg,
        int k,
        bool init,
        float* minKth,
        cudaStream_t stream);

/// Appends rowBase + r to rows[*nRows ...] (any order; *nRows counts them, the caller
/// zeroes it first) for each row r < nrows whose candidates are not proven to hold
/// every id with a key at most limits[r]: min(keptLast[r * ld], minKth[r]) <= limits[r]
/// (or NaN). keptLast is the largest key a row kept; minKth segmentKthMin's.
void uncertifiedRows(
        const float* keptLast,
        int64_t ld,
        const float* minKth,
        const float* limits,
        int64_t nrows,
        int64_t rowBase,
        int64_t* rows,
        int* nRows,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
