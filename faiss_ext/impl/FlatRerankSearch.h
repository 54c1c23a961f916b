// The flat search's rerank path: the tiles path's GEMMs on tensor cores (the threshold
// path's split products and error bound), its selection keeping k plus a margin of
// candidates by their approximate keys; then each query's candidates that can still be
// among its k nearest (kernels/RerankBand.h) re-ranked exactly in FP32. A query is
// answered this way only when its margin is proven: every id it did not keep has an
// approximate key above the band (the smallest key a merge dropped, or a segment's k-th
// for ids never offered); the others are searched again on the FP32 tiles path. For
// large k and d, where the FP32 GEMM is most of the tiles path's time and the
// threshold path's sample search costs as much as it saves (benchs/NOTES.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/impl/FlatSearch.h>

namespace faiss_ext {

/// The margin of candidates a query keeps beyond k: a quarter of k, at least 64.
int flatRerankMargin(int k);

/// The candidates a query keeps for k: k plus the margin, rounded up to a power of two
/// (the selection's own size, so the rounding costs nothing), at most
/// kernels::kMaxSelectK.
int flatRerankKeep(int k);

/// Whether kAuto takes the rerank path for `in` and k on a device of compute capability
/// computeCapabilityMajor: precision kAuto on a device with tensor cores (an explicit
/// precision keeps the tiles path's products as the results), a batch of at least
/// kRerankMinQueries, d and k at least kRerankMinDim and kRerankMinK, room for the
/// whole margin and a base longer than the candidates kept.
bool flatRerankPathFits(const FlatSearchInput& in, int k, int computeCapabilityMajor);

/// The rerank path for all of `in` within budgetBytes of temporaries (flatSearch's
/// contract). Returns how many queries were searched again in FP32.
int64_t flatSearchRerank(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
