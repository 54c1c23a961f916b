// Host entry points of the k-selection kernels (plain C++: no CUDA device code here).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <faiss_ext/utils/MathUtils.h>

namespace faiss_ext {
namespace kernels {

/// Largest k any selection supports.
constexpr int kMaxSelectK = 2048;

/// Largest k the per-warp selection serves (larger k use the per-block one).
constexpr int kMaxWarpSelectK = 256;

/// Largest nextPow2(k) the register-resident warp selection holds (WarpSelect.cuh: one
/// key of the best list a lane); above it, up to kMaxWarpSelectK, the warp keeps its list
/// in shared memory (WarpSelectSmem.cuh).
constexpr int kMaxWarpRegisterSelectK = 32;

/// Largest k for which selectRowsMin uses a warp per (row, segment), with the register
/// selection. Above it the shared-memory warp selection's threshold tightened too
/// slowly on short segments (at k = 100 on 1024 columns the buffer refilled and was
/// re-sorted about eight times; measured 3-4x slower than the block path at batch 1 on
/// H100, benchs/NOTES.md).
constexpr int kMaxWarpRowSelectK = 32;
static_assert(kMaxWarpRowSelectK <= kMaxWarpRegisterSelectK, "the warp rows use registers");

/// selectRowsMin sorts each (row, segment) whole in one block (a radix sort of its keys)
/// when its segments have at most kShortSelectMaxCols columns and there are at most
/// kShortSelectMaxBlocks of them: the latency regime of a few rows, where the streaming
/// paths' per-warp flushes and the merge of their segments cost more than the sort.
constexpr int64_t kShortSelectMaxCols = 8192;
constexpr int64_t kShortSelectMaxBlocks = 128;

/// Shared memory one streaming-select block needs for k.
size_t blockSelectSmemBytes(int k);

/// For each row r < nrows and each segment s of `segLen` columns, selects the k
/// smallest values of  dist[r * ldDist + c] + colBias[c]  (colBias may be null) over the
/// segment's columns, and writes them sorted ascending to
///   outD[r * ldOut + s * k + j], outI[...]
/// with id = inIds[r * ldIds + c] when inIds is non-null, else idBase + c.
/// Missing results (fewer than k finite values) are +inf with id -1. NaN is never
/// selected. With allow (device bitmap, kernels/IdFilter.h; needs inIds null) only the
/// columns c whose bit idBase + c is set are candidates: the others read as +inf. Input and output
/// may alias when nsegments == 1: each row is read whole before it is written.
/// How selectRowsMin reduces a (row, segment); all give the same results.
enum class SelectPath {
    kAuto,  ///< short when it applies (kShortSelectMax*), else warp for k <= 32, else block
    kWarp,  ///< a warp per (row, segment), the best k in registers (k <= kMaxWarpRowSelectK)
    kBlock, ///< a block per (row, segment) streaming through a shared-memory buffer
    kShort, ///< a block sorts each whole (row, segment) (at most kShortSelectMaxCols)
};

struct SelectRowsArgs {
    const float* dist = nullptr;
    int64_t ldDist = 0;
    int64_t nrows = 0;
    int64_t ncols = 0;
    int64_t segLen = 0; ///< 0: one segment per row
    const float* colBias = nullptr;
    const int64_t* inIds = nullptr;
    int64_t ldIds = 0;
    int64_t idBase = 0;
    const uint32_t* allow = nullptr; ///< null: every column is a candidate
    /// Per row (device; null: none): only values below rowBound[r * ldRowBound] are
    /// candidates of row r, the others read as +inf (every path).
    const float* rowBound = nullptr;
    int64_t ldRowBound = 1;
    /// Per row (device; null: ncols): row r's candidates are its first rowCols[r]
    /// columns; the others are neither read nor selected (every path).
    const int* rowCols = nullptr;
    /// Columns [0, sortedPrefix) of every row hold values in ascending order (NaN and
    /// +inf last), at most k of them, in one segment: the running best of an earlier
    /// selection, merged with new candidates. A hint: the block path takes them as its
    /// best list and sorts only what follows; every path gives the same results.
    int64_t sortedPrefix = 0;
    int k = 0;
    float* outD = nullptr;
    int64_t* outI = nullptr;
    int64_t ldOut = 0;
    SelectPath path = SelectPath::kAuto; ///< forced paths: tests and benchmarks
};
void selectRowsMin(const SelectRowsArgs& args, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
