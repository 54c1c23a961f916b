// Row-wise k-selection for a few long rows: an MSB radix select over order-preserving
// 32-bit keys that spreads each row over many blocks (radix_select.cu). Built for one
// to a few queries against a large base, where selectRowsMin gives each row only a
// handful of blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "SearchCopy.h"

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

/// One query against a base it has not been compared with yet: what the flat search's
/// product and radix select give for that one row, with the base read once. The
/// query's values alpha q.b_c + colBias[c] (+inf where allow filters c out) are
/// written to product.values (args.nrows == 1, args.ncols base rows; args.dist is not
/// read) while they are counted for the first digit pass; the selection then runs on
/// them as radixSelectRowsMin does (radixQueryFits says which shapes it takes).
struct RadixQueryProduct {
    const float* query = nullptr; ///< d floats
    const float* base = nullptr;  ///< args.ncols x d, row-major
    int d = 0;
    float alpha = -2.f;
    float* values = nullptr; ///< args.ncols floats, written
    /// When set, receives |q|^2.
    float* queryNormSq = nullptr;
    /// When set, the product reads this low-precision copy of the base instead
    /// (kernels/SearchCopy.h: row c is copyScales[c] times its copyRowBytes(copyCode, d)
    /// bytes at copyRows), any d: the values are those of the copy.
    const void* copyRows = nullptr;
    CopyCode copyCode = CopyCode::kFloat16;
    const float* copyScales = nullptr;
};

/// Whether radixSelectQuery takes this product: d at most 8192; reading the float base,
/// d a multiple of 4 and the query and base 16-byte aligned, reading a copy, the copy
/// 16-byte aligned.
bool radixQueryFits(const RadixQueryProduct& p);

/// Runs radixSelectQuery on `stream`; scratch as for radixSelectRowsMin with one row.
/// blocks: the blocks that read the base (and then each later pass's).
void radixSelectQuery(
        const RadixSelectArgs& args,
        const RadixQueryProduct& product,
        void* scratch,
        size_t scratchBytes,
        int blocks,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
