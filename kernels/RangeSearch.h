// Host entry points of the range search kernels: each pass runs once to count the
// results of every (row, tile) or (query, probe), and once more to write them at
// offsets the host computed from the counts.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// One tile of the exact (flat) range search. Row r, column c has the distance
///   L2: max(dist[r * ldDist + c] + colBias[c] + rowNorms[r], 0)   (dist = -2 q.b)
///   inner product: -dist[r * ldDist + c]                            (dist = -q.b)
/// (the k-NN finish's arithmetic) and is a result when it is < radius (L2) or >
/// radius (inner product) and, with allow, bit idBase + c of allow is set. Its id is
/// idBase + c.
struct RangeRowsArgs {
    const float* dist = nullptr;
    int64_t ldDist = 0;
    int64_t nrows = 0;
    int64_t ncols = 0;
    const float* colBias = nullptr;  ///< L2: ncols squared norms
    const float* rowNorms = nullptr; ///< L2: nrows squared norms
    bool innerProduct = false;
    float radius = 0;
    const uint32_t* allow = nullptr;
    int64_t idBase = 0;
    /// Count pass: counts[r * ldCounts] = results of row r in this tile.
    int64_t* counts = nullptr;
    int64_t ldCounts = 1;
    /// Fill pass: row r's results go to outD / outI from rowOffsets[r] on, ascending
    /// column.
    const int64_t* rowOffsets = nullptr;
    float* outD = nullptr;
    int64_t* outI = nullptr;
};
void rangeCountRows(const RangeRowsArgs& args, cudaStream_t stream);
void rangeFillRows(const RangeRowsArgs& args, cudaStream_t stream);

/// IVF range search over the probed lists of a batch: work item w in [0, npairs) is
/// probe p = (pairBegin + w) % nprobe of query q = (pairBegin + w) / nprobe - queryBase
/// (list coarse[q * nprobe + p], -1: none); every vector of that list within radius
/// (squared L2 < radius, or inner product > radius: ivf_scan.cu's arithmetic), and with
/// allow whose bit listBitBase[list] + position is set, is a result.
struct IvfRangeArgs {
    const float* queries = nullptr; ///< rows of the batch, nq x d
    int d = 0;
    const int64_t* coarse = nullptr; ///< nq x nprobe
    int nprobe = 0;
    int64_t queryBase = 0; ///< the query of the batch's first row
    int64_t pairBegin = 0;
    int64_t npairs = 0;
    const float* const* listData = nullptr;
    const int64_t* const* listIds = nullptr;
    const int64_t* listLen = nullptr;
    const uint32_t* allow = nullptr;
    const int64_t* listBitBase = nullptr;
    bool innerProduct = false;
    float radius = 0;
    /// Count pass: counts[w].
    int64_t* counts = nullptr;
    /// Fill pass: item w's results from pairOffsets[w] on, in list order.
    const int64_t* pairOffsets = nullptr;
    float* outD = nullptr;
    int64_t* outI = nullptr;
};
void ivfRangeCount(const IvfRangeArgs& args, cudaStream_t stream);
void ivfRangeFill(const IvfRangeArgs& args, cudaStream_t stream);

/// Shared memory one IVF range block needs (the query, padded).
size_t ivfRangeSmemBytes(int d);

} // namespace kernels
} // namespace faiss_ext
