// Exact k-NN on the device: cuBLAS GEMM tiles + streaming k-selection, in bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <kernels/OperandSplit.h>
#include <kernels/SearchCopy.h>

namespace faiss_ext {

/// Most queries one GEMM of the tiles path takes. A short base (the IVF coarse search
/// over nlist centroids) keeps a whole batch of 10000 in one tile: three tiles of 4096
/// cost each its own norms, splits, centroid split and segment merge (~50 us at nlist
/// 4096 on an H100, benchs/NOTES.md). Long bases halve it down to 1024 anyway.
constexpr int64_t kMaxFlatQueryTile = 16384;

/// How one exact search is cut so that its temporaries fit a memory budget.
struct FlatTiling {
    int64_t queryTile = 0; ///< queries per GEMM
    int64_t baseTile = 0;  ///< base vectors per GEMM (a multiple of segLen, or all)
    int64_t segLen = 0;    ///< columns one selection block reduces to k candidates
    /// Candidate slots a query holds: the kept keepK, then k for each segment of a base
    /// tile; at least 2 keepK (the rerank path re-ranks the kept into the rest).
    int64_t candLd = 0;
    size_t bytes = 0; ///< temporaries this plan allocates
};

/// Plans the tiles for nq queries against nb vectors (pure host arithmetic) when the
/// selection keeps k per segment. Segments start at `minSegLen` (at least 4 nextPow2(k))
/// and grow while one base tile still yields at least `minBlocks` selection units
/// (blocks or warps): each unit has a fixed cost that long segments amortise. Each base
/// tile column may cost `bytesPerBaseColumn` more (the 3xTF32 split of its vector). The
/// merges keep keepK (0: k) candidates a query. Throws if one query does not fit.
FlatTiling planFlatTiling(
        int64_t nq,
        int64_t nb,
        int k,
        size_t budgetBytes,
        int64_t minBlocks,
        int64_t minSegLen = 4096,
        size_t bytesPerBaseColumn = 0,
        int keepK = 0);

/// How flatSearch finds each query's k nearest.
enum class FlatSearchPath {
    /// the radix path for a few queries against a large base (flatRadixPathFits), the
    /// threshold path for batches and bases large enough to pay for its sample
    /// (flatThresholdPathFits), the rerank path for batches at large d and k
    /// (flatRerankPathFits), the tiles path else
    kAuto,
    /// GEMM tiles + streaming k-selection per (query, segment), then a merge
    kTiles,
    /// a per-query threshold from a sample of the base, GEMM tiles filtered against it,
    /// the survivors re-ranked exactly (impl/FlatThresholdSearch.h)
    kThreshold,
    /// each query's whole row of FP32 distances, then a radix select spread over the
    /// GPU (impl/FlatRadixSearch.h)
    kRadix,
    /// the tiles path on tensor cores keeping k plus a margin of candidates, those that
    /// can be among the k nearest re-ranked exactly; a query whose margin is not proven
    /// is searched again in FP32 (impl/FlatRerankSearch.h)
    kRerank,
    /// the radix path over the base's low-precision copy (GpuIndexFlatConfig::float16Copy,
    /// int8Copy), then the ids its error bound cannot rule out re-ranked exactly in FP32
    /// and selected again, a query at a time (impl/FlatRadixSearch.h)
    kRadixCopy,
};

/// "auto", "tiles", "threshold", "radix", "rerank" or "radix-copy".
const char* flatSearchPathName(FlatSearchPath path);

/// The GEMMs' arithmetic of a search in precision p on the given path (not kAuto) on a
/// device of compute capability computeCapabilityMajor. The threshold and rerank paths
/// re-rank in FP32, so their GEMMs may run any product whose error they bound: kAuto
/// takes bf16x3 there (the fastest) where the device has bf16 tensor cores (8.0 and
/// newer) and 3xTF32 before them, kTF32x3 3xTF32 and kFloat32 FP32. On the tiles and
/// radix paths the products are the results: kTF32x3 3xTF32, everything else FP32.
kernels::GemmProduct flatGemmProduct(
        GpuFlatPrecision p,
        FlatSearchPath path,
        int computeCapabilityMajor);

/// The base's low-precision copy (impl/FlatStorage.h, kernels/SearchCopy.h), in device
/// memory.
struct FlatSearchCopy {
    kernels::CopyCode code = kernels::CopyCode::kFloat16;
    const void* rows = nullptr;            ///< nb x copyRowBytes(code, d) bytes; null: no copy
    const float* scales = nullptr;         ///< nb
    float maxRelError = 0;                 ///< bounds every row's |x - copy| / |x|
    const float* maxSquaredNorm = nullptr; ///< one float: the base's largest squared norm
};

/// Vectors of one flat search, all in device memory.
struct FlatSearchInput {
    const float* queries = nullptr; ///< nq x d, row-major
    int64_t nq = 0;
    const float* base = nullptr;      ///< nb x d, row-major
    const float* baseNorms = nullptr; ///< nb squared norms (L2 only)
    int64_t nb = 0;
    int d = 0;
    faiss::MetricType metric = faiss::METRIC_L2;
    /// The GEMMs' arithmetic (flatGemmProduct): FP32 on CUDA cores, or split operands
    /// on tensor cores (kernels/OperandSplit.h: one GEMM over K = 3d).
    GpuFlatPrecision precision = GpuFlatPrecision::kAuto;
    /// kAuto: chosen per search (FlatSearchPath).
    FlatSearchPath path = FlatSearchPath::kAuto;
    /// Filtered search (null: none): a device bitmap over base rows (kernels/IdFilter.h);
    /// only rows whose bit is set are results, and fewer than k allowed rows leave -1 /
    /// +-inf.
    const uint32_t* allow = nullptr;
    /// The base's low-precision copy, when kept (FlatSearchPath::kRadixCopy).
    FlatSearchCopy copy;
};

/// The tiling the tiles path uses for `in` within `budgetBytes`: the selection geometry
/// (warp selection for small k, block selection else) and, for 3xTF32, the queries'
/// split set aside and each base column's split charged.
FlatTiling planFlatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes);

/// planFlatSearch for a given product whose merges keep keepK candidates (the rerank
/// path's).
FlatTiling planFlatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        kernels::GemmProduct product,
        int keepK);

/// dist (nq x nb, row-major) = -2 Q B^T (L2) or -Q B^T (inner product): the keys
/// before the norms. kFloat32 and kTF32: q (nq x d) and b (nb x d) are FP32 rows as
/// they are; otherwise they are split rows (nq x 3d and nb x 3d, kernels::splitRows) of that
/// product.
void flatProductTile(
        const GpuResources& res,
        faiss::MetricType metric,
        const void* q,
        int64_t nq,
        const void* b,
        int64_t nb,
        int d,
        kernels::GemmProduct product,
        float* dist);

/// flatProductTile for the nq queries against base rows [b0, b0 + nb) of in.base.
/// kFloat32: q holds the queries (nq x d). Otherwise q holds the queries' split rows and
/// the base rows are split into baseSplit (nb split rows) first.
void flatDistanceTile(
        const GpuResources& res,
        const FlatSearchInput& in,
        const void* q,
        int64_t nq,
        int64_t b0,
        int64_t nb,
        kernels::GemmProduct product,
        void* baseSplit,
        float* dist);

/// The tiles path's pass over the whole base for nq queries (t planned for k and
/// keepK): each segment of each base tile selects its best k keys, and the merges leave
/// each query's best keepK (>= k), ascending, in columns [0, keepK) of candD / candI
/// (row stride t.candLd). L2 keys are |b|^2 - 2 q.b (|q|^2
/// comes later). A split product: q holds the queries' split rows and each base tile is
/// split into baseSplit before its GEMM. segKthMin (null: not wanted): each query's
/// smallest segment k-th key, a lower bound on the key of any id never offered to a
/// merge (+inf when every id was).
void flatSelectOverBase(
        const GpuResources& res,
        const FlatSearchInput& in,
        const FlatTiling& t,
        const void* q,
        int64_t nq,
        int k,
        int keepK,
        kernels::GemmProduct product,
        void* baseSplit,
        float* dist,
        float* candD,
        int64_t* candI,
        float* segKthMin);

/// Searches again the queries rows[0 .. *nRows) of `queries` (device rows of in.d, in
/// the caller's numbering; *nRows is on the device and read after a sync) on the tiles
/// path in FP32, writing their k results over the same rows of outD / outI (nq x k):
/// the threshold and rerank paths' fallback for the queries their proofs do not cover.
/// Returns how many queries it searched.
int64_t flatResearchRows(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* queries,
        const int64_t* rows,
        const int* nRows,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI);

/// The tiles path for all of `in` within budgetBytes of temporaries (flatSearch's
/// contract).
void flatSearchTiles(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI);

/// The path flatSearch takes for `in` and k on res's device: in.path unless it is kAuto.
FlatSearchPath flatSearchPathFor(const GpuResources& res, const FlatSearchInput& in, int k);

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
