#include <faiss_ext/impl/FlatRerankSearch.h>

#include <algorithm>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/DeviceBuffer.h>
#include <faiss_ext/utils/MathUtils.h>
#include <kernels/Distances.h>
#include <kernels/RerankCertificate.h>
#include <kernels/Select.h>
#include <kernels/ThresholdFilter.h>

namespace faiss_ext {

namespace {

/// Below this many queries the base's split per call costs more than the GEMM saves.
constexpr int64_t kRerankMinQueries = 256;
/// Below this dimension the FP32 GEMM is too small a share of the tiles path for the
/// splits and the re-rank to pay (bench_flat, both paths forced; benchs/NOTES.md).
constexpr int kRerankMinDim = 256;
/// Below this k the threshold path (or the tiles path's warp selection) serves.
constexpr int kRerankMinK = 256;

} // namespace

int flatRerankMargin(int k) {
    return std::max(64, k / 4);
}

int flatRerankKeep(int k) {
    return std::min(kernels::kMaxSelectK, nextPow2(k + flatRerankMargin(k)));
}

bool flatRerankPathFits(const FlatSearchInput& in, int k, int computeCapabilityMajor) {
    return in.precision == GpuFlatPrecision::kAuto && computeCapabilityMajor >= 8 &&
            in.nq >= kRerankMinQueries && in.d >= kRerankMinDim && k >= kRerankMinK &&
            flatRerankKeep(k) >= k + flatRerankMargin(k) && in.nb > flatRerankKeep(k);
}

int64_t flatSearchRerank(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI) {
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    const int d = in.d;
    const kernels::GemmProduct product =
            flatGemmProduct(in.precision, FlatSearchPath::kRerank, res.computeCapabilityMajor());
    const int keepK = flatRerankKeep(k);
    // Per query of a tile: |q|^2, the band's limit and the smallest segment k-th; per
    // query of the batch, a row to search again.
    const int64_t maxTile = std::min(in.nq, kMaxFlatQueryTile);
    const size_t own = size_t(maxTile) * 3 * sizeof(float) + size_t(in.nq) * sizeof(int64_t) + 64;
    FAISS_THROW_IF_NOT_FMT(
            own < budgetBytes,
            "temporary memory budget of %zu bytes is too small for the flat rerank path",
            budgetBytes);
    auto againRows = res.alloc<int64_t>(size_t(in.nq));
    auto nAgain = res.alloc<int>(1);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(nAgain.data(), 0, sizeof(int), stream));
    {
        // The candidate slots hold the kept keepK and each segment's k, and after the
        // pass the re-ranked keepK (FlatTiling::candLd).
        const FlatTiling t = planFlatSearch(res, in, k, budgetBytes - own, product, keepK);
        const size_t splitRow = kernels::splitRowBytes(product, d);
        const int64_t candLd = t.candLd;
        const kernels::KeyErrorBound keyBound = kernels::keyErrorBound(d, product);
        auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
        auto candD = res.alloc<float>(size_t(t.queryTile) * candLd);
        auto candI = res.alloc<int64_t>(size_t(t.queryTile) * candLd);
        auto qNorms = res.alloc<float>(size_t(t.queryTile));
        auto limits = res.alloc<float>(size_t(t.queryTile));
        auto segKthMin = res.alloc<float>(size_t(t.queryTile));
        auto maxNorm = res.alloc<float>(1);
        auto querySplit = res.alloc<char>(size_t(t.queryTile) * splitRow);
        auto baseSplit = res.alloc<char>(size_t(t.baseTile) * splitRow);
        kernels::maxSquaredNorm(
                in.base, l2 ? in.baseNorms : nullptr, in.nb, d, maxNorm.data(), stream);
        for (int64_t q0 = 0; q0 < in.nq; q0 += t.queryTile) {
            const int64_t nq = std::min(t.queryTile, in.nq - q0);
            const float* queries = in.queries + q0 * d;
            kernels::rowSquaredNorms(queries, nq, d, qNorms.data(), stream);
            const void* q = queries;
            if (splitRow > 0) {
                kernels::splitRows(
                        product, queries, nq, d, kernels::SplitRole::kQuery, querySplit.data(),
                        stream);
                q = querySplit.data();
            }
            // 1. The approximate keys' best keepK of each query, and the proof's bounds.
            flatSelectOverBase(
                    res, in, t, q, nq, k, keepK, product, baseSplit.data(), dist.data(),
                    candD.data(), candI.data(), segKthMin.data());
            kernels::rerankBandLimits(
                    candD.data() + (k - 1), candLd, nq, qNorms.data(), maxNorm.data(), keyBound, d,
                    l2, limits.data(), stream);
            kernels::uncertifiedRows(
                    candD.data() + (keepK - 1), candLd, segKthMin.data(), limits.data(), nq, q0,
                    againRows.data(), nAgain.data(), stream);
            // 2. The kept ids inside the band re-ranked in FP32 into the slots after the
            // kept ones, then the best k of them.
            kernels::rerankKept(
                    queries, in.base, d, l2, candI.data(), candD.data(), candLd, limits.data(), nq,
                    keepK, candD.data() + keepK, candI.data() + keepK, stream);
            kernels::SelectRowsArgs sel;
            sel.dist = candD.data() + keepK;
            sel.ldDist = candLd;
            sel.nrows = nq;
            sel.ncols = keepK;
            sel.inIds = candI.data() + keepK;
            sel.ldIds = candLd;
            sel.k = k;
            sel.outD = outD + q0 * k;
            sel.outI = outI + q0 * k;
            sel.ldOut = k;
            kernels::selectRowsMin(sel, stream);
        }
    }
    kernels::finishKnn(
            outD, outI, k, in.nq, k, kernels::distanceFinishFor(in.metric), nullptr, outD, outI,
            stream);
    // 3. The queries whose margin is not proven: the tiles path in FP32, with the pass's
    // temporaries freed.
    return flatResearchRows(
            res, in, in.queries, againRows.data(), nAgain.data(), k, budgetBytes - own, outD, outI);
}

} // namespace faiss_ext
