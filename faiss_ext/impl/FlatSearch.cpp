#include <faiss_ext/impl/FlatSearch.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/Rerank.h>
#include <kernels/Select.h>

namespace faiss_ext {

namespace {
constexpr size_t kCandBytes = sizeof(float) + sizeof(int64_t);
}

FlatTiling planFlatTiling(
        int64_t nq,
        int64_t nb,
        int k,
        size_t budgetBytes,
        int64_t minBlocks,
        int64_t minSegLen) {
    FAISS_THROW_IF_NOT_FMT(
            nq > 0 && nb > 0 && k >= 1, "bad flat search shape nq=%lld nb=%lld k=%d", (long long)nq,
            (long long)nb, k);
    FlatTiling t;
    // Each selection block keeps at most a quarter of its columns, so the merge
    // reads far less than the distance tile.
    t.segLen = std::max<int64_t>(minSegLen, 4 * int64_t(nextPow2(k)));
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
                qt > 1, "temporary memory budget of %zu bytes is too small for k=%d", budgetBytes,
                k);
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

int flatTF32Shortlist(int k) {
    // A margin of k/8 (at least 16) beyond k: on SIFT-like data the boundary then
    // clears the TF32 error bound for almost every query (benchs/NOTES.md).
    return k + std::max(16, k / 8);
}

bool flatTF32Supports(int k) {
    return k >= 1 && flatTF32Shortlist(k) + 1 <= kernels::kMaxSelectK;
}

void flatDistanceTile(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* q,
        int64_t nq,
        int64_t b0,
        int64_t nb,
        bool tf32,
        float* dist) {
    // dist = alpha * Q B^T: |b|^2 (and |q|^2) are added later for L2.
    const float alpha = in.metric == faiss::METRIC_L2 ? -2.f : -1.f;
    const float beta = 0.f;
    // Row-major C[nq x nb] = Q B^T is column-major C^T = B^T(op) Q.
    FAISS_EXT_CUBLAS_CHECK(cublasGemmEx(
            res.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nq), in.d, &alpha,
            in.base + b0 * in.d, CUDA_R_32F, in.d, q, CUDA_R_32F, in.d, &beta, dist, CUDA_R_32F,
            int(nb), tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT));
}

namespace {

/// Selection geometry: the warp path (small k) owns short segments cheaply, so it
/// plans in warps and starts from 1024-column segments; the block path as before.
FlatTiling planFor(const GpuResources& res, int64_t nq, int64_t nb, int kSel, size_t budget) {
    const int64_t sms = res.multiProcessorCount();
    if (nextPow2(kSel) <= kernels::kMaxWarpRowSelectK) {
        return planFlatTiling(nq, nb, kSel, budget, 32 * sms, 1024);
    }
    return planFlatTiling(nq, nb, kSel, budget, 4 * sms);
}

/// What is left of the temporary budget once `live` bytes are held (throws if nothing).
size_t budgetLeft(const GpuResources& res, size_t live) {
    FAISS_THROW_IF_NOT_FMT(
            live < res.tempMemoryBytes(),
            "temporary memory budget of %zu bytes is too small for the TF32 search's %zu "
            "bytes of bookkeeping",
            res.tempMemoryBytes(), live);
    return res.tempMemoryBytes() - live;
}

/// Leaves each of nq queries' best kSel keys over the whole base, ascending, in columns
/// [0, kSel) of candD / candI (L2 keys are |b|^2 - 2 q.b: |q|^2 is added later).
void selectOverBase(
        const GpuResources& res,
        const FlatSearchInput& in,
        const FlatTiling& t,
        const float* q,
        int64_t nq,
        int kSel,
        bool tf32,
        float* dist,
        float* candD,
        int64_t* candI,
        int64_t candLd) {
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    for (int64_t b0 = 0; b0 < in.nb; b0 += t.baseTile) {
        const int64_t nb = std::min(t.baseTile, in.nb - b0);
        flatDistanceTile(res, in, q, nq, b0, nb, tf32, dist);
        // Per-segment best kSel into candidate slots 1.., then merge with slot 0.
        kernels::SelectRowsArgs seg;
        seg.dist = dist;
        seg.ldDist = nb;
        seg.nrows = nq;
        seg.ncols = nb;
        seg.segLen = t.segLen;
        seg.colBias = l2 ? in.baseNorms + b0 : nullptr;
        seg.idBase = b0;
        seg.allow = in.allow;
        seg.k = kSel;
        seg.outD = candD + kSel;
        seg.outI = candI + kSel;
        seg.ldOut = candLd;
        kernels::selectRowsMin(seg, stream);

        const bool first = b0 == 0;
        const int64_t nseg = (nb + t.segLen - 1) / t.segLen;
        kernels::SelectRowsArgs merge;
        merge.dist = candD + (first ? kSel : 0);
        merge.ldDist = candLd;
        merge.nrows = nq;
        merge.ncols = (first ? 0 : kSel) + nseg * kSel;
        merge.inIds = candI + (first ? kSel : 0);
        merge.ldIds = candLd;
        merge.k = kSel;
        merge.outD = candD;
        merge.outI = candI;
        merge.ldOut = candLd;
        kernels::selectRowsMin(merge, stream);
    }
}

kernels::DistanceFinish finishOf(faiss::MetricType metric) {
    return metric == faiss::METRIC_L2 ? kernels::DistanceFinish::kL2
                                      : kernels::DistanceFinish::kInnerProduct;
}

void flatSearchFloat32(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI,
        size_t budget) {
    const FlatTiling t = planFor(res, in.nq, in.nb, k, budget);
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    const int64_t segsPerTile = (t.baseTile + t.segLen - 1) / t.segLen;
    const int64_t candLd = (1 + segsPerTile) * k;

    auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
    auto candD = res.alloc<float>(size_t(t.queryTile) * candLd);
    auto candI = res.alloc<int64_t>(size_t(t.queryTile) * candLd);
    auto qNorms = res.alloc<float>(l2 ? size_t(t.queryTile) : 0);
    for (int64_t q0 = 0; q0 < in.nq; q0 += t.queryTile) {
        const int64_t nq = std::min(t.queryTile, in.nq - q0);
        const float* q = in.queries + q0 * in.d;
        if (l2) {
            kernels::rowSquaredNorms(q, nq, in.d, qNorms.data(), stream);
        }
        selectOverBase(
                res, in, t, q, nq, k, false, dist.data(), candD.data(), candI.data(), candLd);
        kernels::finishKnn(
                candD.data(), candI.data(), candLd, nq, k, finishOf(in.metric), qNorms.data(),
                outD + q0 * k, outI + q0 * k, stream);
    }
}

/// Returns the number of queries that had to be searched again in FP32.
int64_t flatSearchTF32(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI) {
    const int shortlist = flatTF32Shortlist(k);
    const int kSel = shortlist + 1;
    // Held for the whole call: the re-search list, its count and the base's largest norm.
    const size_t bookkeeping = size_t(in.nq) * sizeof(int64_t) + sizeof(int) + sizeof(float);
    const FlatTiling t = planFor(res, in.nq, in.nb, kSel, budgetLeft(res, bookkeeping));
    cudaStream_t stream = res.stream();
    const int64_t segsPerTile = (t.baseTile + t.segLen - 1) / t.segLen;
    const int64_t candLd = (1 + segsPerTile) * kSel;

    auto maxSqNorm = res.alloc<float>(1);
    kernels::maxValue(in.baseNorms, in.nb, maxSqNorm.data(), stream);
    auto fallbackCount = res.alloc<int>(1);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(fallbackCount.data(), 0, sizeof(int), stream));
    auto fallbackRows = res.alloc<int64_t>(size_t(in.nq));
    {
        auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
        auto candD = res.alloc<float>(size_t(t.queryTile) * candLd);
        auto candI = res.alloc<int64_t>(size_t(t.queryTile) * candLd);
        auto qNorms = res.alloc<float>(size_t(t.queryTile));
        for (int64_t q0 = 0; q0 < in.nq; q0 += t.queryTile) {
            const int64_t nq = std::min(t.queryTile, in.nq - q0);
            const float* q = in.queries + q0 * in.d;
            kernels::rowSquaredNorms(q, nq, in.d, qNorms.data(), stream);
            selectOverBase(
                    res, in, t, q, nq, kSel, true, dist.data(), candD.data(), candI.data(), candLd);
            kernels::RerankArgs r;
            r.queries = q;
            r.queryNorms = qNorms.data();
            r.nq = nq;
            r.base = in.base;
            r.baseMaxSqNorm = maxSqNorm.data();
            r.d = in.d;
            r.innerProduct = in.metric == faiss::METRIC_INNER_PRODUCT;
            r.candD = candD.data();
            r.candI = candI.data();
            r.ldCand = candLd;
            r.shortlist = shortlist;
            r.k = k;
            r.outD = outD + q0 * k;
            r.outI = outI + q0 * k;
            r.rowBase = q0;
            r.fallbackCount = fallbackCount.data();
            r.fallbackRows = fallbackRows.data();
            kernels::rerankExact(r, stream);
        }
    }
    int nFallback = 0;
    copyToHost(&nFallback, fallbackCount.data(), 1, stream);
    if (nFallback > 0) {
        auto xq = res.alloc<float>(size_t(nFallback) * in.d);
        auto fd = res.alloc<float>(size_t(nFallback) * k);
        auto fi = res.alloc<int64_t>(size_t(nFallback) * k);
        kernels::gatherRows(in.queries, fallbackRows.data(), nFallback, in.d, xq.data(), stream);
        FlatSearchInput again = in;
        again.queries = xq.data();
        again.nq = nFallback;
        const size_t held = bookkeeping +
                size_t(nFallback) * (size_t(in.d) * sizeof(float) + size_t(k) * kCandBytes);
        flatSearchFloat32(res, again, k, fd.data(), fi.data(), budgetLeft(res, held));
        kernels::scatterResults(
                fd.data(), fi.data(), fallbackRows.data(), nFallback, k, outD, outI, stream);
    }
    return nFallback;
}

} // namespace

void flatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI,
        FlatSearchStats* stats) {
    if (stats) {
        *stats = FlatSearchStats();
    }
    if (in.nq == 0) {
        return;
    }
    if (in.nb == 0) {
        kernels::fillMissingResults(outD, outI, in.nq * k, finishOf(in.metric), res.stream());
        return;
    }
    // A filtered search takes the FP32 path (see FlatSearchInput::allow).
    if (in.tf32 && in.allow == nullptr) {
        FAISS_THROW_IF_NOT_FMT(
                flatTF32Supports(k),
                "the TF32 flat search cannot serve k=%d: its shortlist of %d exceeds the "
                "selection limit of %d",
                k, flatTF32Shortlist(k) + 1, kernels::kMaxSelectK);
        const int64_t fallback = flatSearchTF32(res, in, k, outD, outI);
        if (stats) {
            stats->fallbackQueries = fallback;
        }
        return;
    }
    flatSearchFloat32(res, in, k, outD, outI, res.tempMemoryBytes());
}

} // namespace faiss_ext
