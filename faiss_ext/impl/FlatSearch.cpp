#include <faiss_ext/impl/FlatSearch.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/Select.h>

namespace faiss_ext {

namespace {
constexpr size_t kCandBytes = sizeof(float) + sizeof(int64_t);
}

FlatTiling planFlatTiling(
        int64_t nq, int64_t nb, int k, size_t budgetBytes, int64_t minBlocks) {
    FAISS_THROW_IF_NOT_FMT(
            nq > 0 && nb > 0 && k >= 1, "bad flat search shape nq=%lld nb=%lld k=%d",
            (long long)nq, (long long)nb, k);
    FlatTiling t;
    // Each selection block keeps at most a quarter of its columns, so the merge
    // reads far less than the distance tile.
    t.segLen = std::max<int64_t>(4096, 4 * int64_t(nextPow2(k)));
    const size_t distBudget = budgetBytes / 2;
    const size_t candBudget = budgetBytes / 2;
    for (int64_t qt = std::min<int64_t>(nq, 4096);; qt = (qt + 1) / 2) {
        // Candidate rows hold the running best k plus k per segment of one base tile.
        const int64_t maxSegs = int64_t(candBudget / (size_t(qt) * k * kCandBytes)) - 1;
        // cuBLAS takes int dimensions.
        const int64_t distCols = std::min<int64_t>(
                int64_t(distBudget / (size_t(qt) * sizeof(float))), int64_t(1) << 30);
        const int64_t bt = std::min(distCols, maxSegs * t.segLen) / t.segLen * t.segLen;
        if (maxSegs >= 1 && bt >= t.segLen) {
            t.queryTile = qt;
            t.baseTile = std::min(bt, nb);
            break;
        }
        FAISS_THROW_IF_NOT_FMT(
                qt > 1, "temporary memory budget of %zu bytes is too small for k=%d",
                budgetBytes, k);
    }
    constexpr int64_t kMaxSegLen = 65536;
    while (t.segLen * 2 <= std::min(t.baseTile, kMaxSegLen) &&
           t.queryTile * ((t.baseTile + 2 * t.segLen - 1) / (2 * t.segLen)) >= minBlocks) {
        t.segLen *= 2;
    }
    const int64_t segs = (t.baseTile + t.segLen - 1) / t.segLen;
    t.bytes = size_t(t.queryTile) *
            (size_t(t.baseTile) * sizeof(float) + size_t(1 + segs) * k * kCandBytes +
             sizeof(float));
    return t;
}

void flatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI) {
    if (in.nb == 0) {
        kernels::fillMissingResults(
                outD, outI, in.nq * k,
                in.metric == faiss::METRIC_L2 ? kernels::DistanceFinish::kL2
                                              : kernels::DistanceFinish::kInnerProduct,
                res.stream());
        return;
    }
    const FlatTiling t = planFlatTiling(
            in.nq, in.nb, k, res.tempMemoryBytes(), 4 * int64_t(res.multiProcessorCount()));
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    const int64_t segsPerTile = (t.baseTile + t.segLen - 1) / t.segLen;
    const int64_t candLd = (1 + segsPerTile) * k;

    auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
    auto candD = res.alloc<float>(size_t(t.queryTile) * candLd);
    auto candI = res.alloc<int64_t>(size_t(t.queryTile) * candLd);
    auto qNorms = res.alloc<float>(l2 ? size_t(t.queryTile) : 0);

    // dist = alpha * Q B^T, plus |b|^2 added during selection for L2.
    const float alpha = l2 ? -2.f : -1.f;
    const float beta = 0.f;
    for (int64_t q0 = 0; q0 < in.nq; q0 += t.queryTile) {
        const int64_t nq = std::min(t.queryTile, in.nq - q0);
        const float* q = in.queries + q0 * in.d;
        if (l2) {
            kernels::rowSquaredNorms(q, nq, in.d, qNorms.data(), stream);
        }
        for (int64_t b0 = 0; b0 < in.nb; b0 += t.baseTile) {
            const int64_t nb = std::min(t.baseTile, in.nb - b0);
            // Row-major C[nq x nb] = Q B^T is column-major C^T = B^T(op) Q.
            FAISS_EXT_CUBLAS_CHECK(cublasSgemm(
                    res.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nq), in.d,
                    &alpha, in.base + b0 * in.d, in.d, q, in.d, &beta, dist.data(),
                    int(nb)));
            // Per-segment best k into candidate slots 1.., then merge with slot 0.
            kernels::SelectRowsArgs seg;
            seg.dist = dist.data();
            seg.ldDist = nb;
            seg.nrows = nq;
            seg.ncols = nb;
            seg.segLen = t.segLen;
            seg.colBias = l2 ? in.baseNorms + b0 : nullptr;
            seg.idBase = b0;
            seg.k = k;
            seg.outD = candD.data() + k;
            seg.outI = candI.data() + k;
            seg.ldOut = candLd;
            kernels::selectRowsMin(seg, stream);

            const bool first = b0 == 0;
            const int64_t nseg = (nb + t.segLen - 1) / t.segLen;
            kernels::SelectRowsArgs merge;
            merge.dist = candD.data() + (first ? k : 0);
            merge.ldDist = candLd;
            merge.nrows = nq;
            merge.ncols = (first ? 0 : k) + nseg * k;
            merge.inIds = candI.data() + (first ? k : 0);
            merge.ldIds = candLd;
            merge.k = k;
            merge.outD = candD.data();
            merge.outI = candI.data();
            merge.ldOut = candLd;
            kernels::selectRowsMin(merge, stream);
        }
        kernels::finishKnn(
                candD.data(), candI.data(), candLd, nq, k,
                l2 ? kernels::DistanceFinish::kL2
                   : kernels::DistanceFinish::kInnerProduct,
                qNorms.data(), outD + q0 * k, outI + q0 * k, stream);
    }
}

} // namespace faiss_ext
