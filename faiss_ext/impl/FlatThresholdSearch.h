// The flat search's threshold path: each query's k-th distance over an evenly spaced
// sample of the base bounds its true k-th from above; GEMM tiles of the whole base are
// then only compared with that bound (plus a proven margin for the GEMM's rounding), the
// ids and keys under it listed, and the listed ids that can still be among the k nearest
// (a key within twice the proven key error of the k-th listed key: kernels/RerankBand.h)
// re-ranked exactly in FP32. No per-(query, segment) selection state, so the distance
// tiles can be sized for L2, and the GEMMs can run on tensor cores (bf16x3, 3xTF32) with
// results that are FP32's (benchs/NOTES.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/impl/FlatSearch.h>

namespace faiss_ext {

/// The GEMM tile of the main pass: the keys of queryTile x baseTile pairs, written by the
/// GEMM and read once by the filter. The defaults are bench_flat_threshold's best on
/// the H100 (1M x 128 and 500K x 768, 10000 queries): 128 MB tiles from DRAM match
/// tiles kept in L2 by an access policy window to within 0-4%, so the tile is not
/// pinned there (that would change a device-wide L2 setting; benchs/NOTES.md).
struct FlatThresholdTiles {
    int64_t maxQueryTile = 2048;
    size_t distTileBytes = size_t(128) << 20;
};

/// How one threshold search is cut.
struct FlatThresholdPlan {
    int64_t capacity = 0;     ///< ids listed per query (more: re-searched by the tiles path)
    int64_t sampleRows = 0;   ///< sampled base rows: 0, stride, 2 stride, ...
    int64_t sampleStride = 0; ///< base rows between two sampled ones
    int64_t queryGroup = 0;   ///< queries whose lists are held at once (groups of equal size)
    int64_t queryTile = 0;    ///< queries per GEMM
    int64_t rerankRows = 0;   ///< queries of the group re-ranked at once
    int64_t baseTile = 0;     ///< base vectors per GEMM
    size_t bytes = 0;         ///< temporaries of the group (the sample's search comes on top)
};

/// Plans a threshold search of nq queries against nb vectors of dimension d for k, its
/// main pass in `product`, within
/// budgetBytes (at most half of it for the plan's own buffers, the sample's copy
/// included; the sample's search gets the rest). Pure host arithmetic. queryGroup 0:
/// it does not fit (a large base's sample, say).
FlatThresholdPlan planFlatThreshold(
        int64_t nq,
        int64_t nb,
        int d,
        int k,
        kernels::GemmProduct product,
        size_t budgetBytes,
        const FlatThresholdTiles& tiles = FlatThresholdTiles());

/// Whether kAuto takes the threshold path for `in` and k: a batch of at least
/// kThresholdMinQueries, a base at least 16x the capacity (so that the sample is
/// at most a quarter of it), and a plan within budgetBytes.
/// computeCapabilityMajor: the device's (flatGemmProduct).
bool flatThresholdPathFits(
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        int computeCapabilityMajor);

/// flatSearch's contract on the threshold path, within budgetBytes of temporaries, id
/// filter included. Needs in.nb < 2^31.
void flatSearchThreshold(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI,
        const FlatThresholdTiles& tiles = FlatThresholdTiles());

} // namespace faiss_ext
