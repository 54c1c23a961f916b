// Row-wise k-selection for a few long rows: an MSB radix select over order-preserving
// 32-bit keys that spreads each row over many blocks (radix_select.cu). Built for one
// to a few queries against a large base, where selectRowsMin gives each row only a
// handful of blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// For each row r < nrows, the k smallest of  dist[r * ldDist + c] + colBias[c]
/// (colBias may be null) over c < ncols, sorted ascending, to outD[r * ldOut + j] /
/// outI[r * ldOut + j] with id c. The same candidates as selectRowsMin: NaN and +inf are
/// never selected, fewer than k candidates leave +inf / -1, and with allow (device
/// bitmap, kernels/IdFilter.h) only columns whose bit c is set are candidates. Among
/// keys equal to the k-th, which ones are kept is unspecified.
struct RadixSelectArgs {
    const float* dist = nullptr;
    int64_t ldDist = 0;
    int64_t nrows = 0;
    int64_t ncols = 0;
    const float* colBias = nullptr;
    const uint32_t* allow = nullptr;
    int k = 0;
    float* outD = nullptr;
    int64_t* outI = nullptr;
    int64_t ldOut = 0;
};

/// Device scratch radixSelectRowsMin needs for nrows rows and k.
size_t radixSelectScratchBytes(int64_t nrows, int k);

/// Runs the selection on `stream`; scratch holds radixSelectScratchBytes(nrows, k)
/// bytes (8-byte aligned). blocksPerRow: blocks each pass gives a row (at least 1).
void radixSelectRowsMin(
        const RadixSelectArgs& args,
        void* scratch,
        size_t scratchBytes,
        int blocksPerRow,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
