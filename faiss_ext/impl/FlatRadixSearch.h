// The flat search's radix path: for a few queries against a large base, the whole row
// of each query's distances (FP32 GEMM, one buffer) and a radix select that spreads
// each row over the whole GPU (kernels/RadixSelect.h). The tiles path gives such a row
// only a handful of selection blocks, so its selection cost several times the GEMV's
// own read of the base at batch 1 (benchs/NOTES.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/impl/FlatSearch.h>

namespace faiss_ext {

/// kAuto takes the radix path for at most this many queries...
constexpr int64_t kRadixMaxQueries = 8;
/// ...against at least this many base vectors (below, the tiles path's few blocks
/// already cover the row)...
constexpr int64_t kRadixMinBase = 65536;
/// ...for one query, or for k from this on: below it, a few queries' warp selections
/// in registers beat the radix passes (bench_flat: 8 queries x 1M x 128 at k 1, 0.33
/// against 0.39 ms; at k 10 0.43 against 0.38).
constexpr int kRadixMinKForBatches = 10;

/// Temporaries of the radix path for nq queries, nb base vectors and k.
size_t flatRadixBytes(int64_t nq, int64_t nb, int k);

/// Whether kAuto takes the radix path for `in` and k: one query or a few with k of at
/// least kRadixMinKForBatches, a large base, FP32 products (flatGemmProduct on a device of
/// computeCapabilityMajor) and the rows within budgetBytes.
bool flatRadixPathFits(
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        int computeCapabilityMajor);

/// Whether kAuto takes the radix path over the base's copy for `in` and k: the copy
/// kept (in.copy), one query, precision kAuto (kFloat32 asks for FP32 products), d
/// within the fused product's limit (kernels::radixQueryFits), the radix path's base
/// bounds and its row within budgetBytes.
bool flatRadixCopyPathFits(const FlatSearchInput& in, int k, size_t budgetBytes);

/// The radix path over the base's low-precision copy (flatSearch's contract), a query at
/// a time: the query's keys from the copy (a half or a quarter of the base's bytes) and
/// a radix select of their k best; the band of the k-th (kernels/RerankBand.h: the
/// copy's measured error bound, the product's and the re-rank's rounding) says which
/// ids can still be among the k nearest, those are re-ranked exactly in FP32 in place
/// and the row selected again. Results are the FP32 re-rank's for any data: rows the
/// copy cannot tell apart all fall inside the band (at worst the whole base is
/// re-ranked). Throws when no copy is kept or the row does not fit budgetBytes.
void flatSearchRadixCopy(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI);

/// The radix path for all of `in` (flatSearch's contract). Throws when the product is
/// not FP32 or the rows do not fit budgetBytes.
void flatSearchRadix(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
