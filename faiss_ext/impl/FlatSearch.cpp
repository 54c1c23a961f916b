#include <faiss_ext/impl/FlatSearch.h>

#include <algorithm>

#include <faiss_ext/impl/FlatRadixSearch.h>
#include <faiss_ext/impl/FlatRerankSearch.h>
#include <faiss_ext/impl/FlatThresholdSearch.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <kernels/Distances.h>
#include <kernels/GatherRows.h>
#include <kernels/PlainProduct.h>
#include <kernels/RerankCertificate.h>
#include <kernels/Select.h>
#include <kernels/ThresholdFilter.h>

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
        int64_t minSegLen,
        size_t bytesPerBaseColumn,
        int keepK) {
    FAISS_THROW_IF_NOT_FMT(
            nq > 0 && nb > 0 && k >= 1, "bad flat search shape nq=%lld nb=%lld k=%d", (long long)nq,
            (long long)nb, k);
    keepK = std::max(keepK, k);
    FlatTiling t;
    // Each selection block keeps at most a quarter of its columns, so the merge
    // reads far less than the distance tile.
    t.segLen = std::max<int64_t>(minSegLen, 4 * int64_t(nextPow2(k)));
    const size_t distBudget = budgetBytes / 2;
    const size_t candBudget = budgetBytes / 2;
    // Each base tile costs every query of its query tile a merge of its candidates with
    // the running best, so fewer, wider base tiles pay (bench_flat_tiles: at k 100 and
    // 537 MB tiles, 1024 x 131072 beats 4096 x 32768 by 1.2x): after a first try with up
    // to kMaxFlatQueryTile queries (a short base takes a whole batch), the query tile
    // halves from 4096 while the base tile is narrower than kWideBaseTile (or all of the
    // base), down to kMinQueryTile queries, where the GEMMs stay efficient.
    constexpr int64_t kWideBaseTile = 131072;
    constexpr int64_t kMinQueryTile = 1024;
    constexpr int64_t kHalvingStart = 4096;
    for (int64_t qt = std::min(nq, kMaxFlatQueryTile);;
         qt = qt > kHalvingStart ? std::min(nq, kHalvingStart) : (qt + 1) / 2) {
        // Candidate rows hold the kept keepK plus k per segment of one base tile (at
        // least 2 keepK).
        const int64_t slots = int64_t(candBudget / (size_t(qt) * kCandBytes));
        const int64_t maxSegs = slots >= 2 * int64_t(keepK) ? (slots - keepK) / k : 0;
        // cuBLAS takes int dimensions.
        const int64_t distCols = std::min<int64_t>(
                int64_t(distBudget / (size_t(qt) * sizeof(float) + bytesPerBaseColumn)),
                int64_t(1) << 30);
        const int64_t bt = std::min(distCols, maxSegs * t.segLen) / t.segLen * t.segLen;
        if (maxSegs >= 1 && bt >= t.segLen) {
            t.queryTile = qt;
            t.baseTile = std::min(bt, nb);
            if (t.baseTile >= std::min(nb, kWideBaseTile) || qt <= kMinQueryTile) {
                break;
            }
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
    t.candLd = std::max(keepK + segs * k, 2 * int64_t(keepK));
    t.bytes = size_t(t.queryTile) *
                    (size_t(t.baseTile) * sizeof(float) + size_t(t.candLd) * kCandBytes +
                     sizeof(float)) +
            size_t(t.baseTile) * bytesPerBaseColumn;
    return t;
}

const char* flatSearchPathName(FlatSearchPath path) {
    switch (path) {
        case FlatSearchPath::kAuto:
            return "auto";
        case FlatSearchPath::kTiles:
            return "tiles";
        case FlatSearchPath::kThreshold:
            return "threshold";
        case FlatSearchPath::kRadix:
            return "radix";
        case FlatSearchPath::kRerank:
            return "rerank";
        case FlatSearchPath::kRadixCopy:
            return "radix-copy";
    }
    return "?";
}

kernels::GemmProduct flatGemmProduct(
        GpuFlatPrecision p,
        FlatSearchPath path,
        int computeCapabilityMajor) {
    FAISS_THROW_IF_NOT_MSG(
            path != FlatSearchPath::kAuto, "flatGemmProduct: resolve the path first");
    // The threshold and rerank paths re-rank in FP32: their GEMMs may run any product
    // whose error they bound.
    const bool threshold = path == FlatSearchPath::kThreshold || path == FlatSearchPath::kRerank;
    switch (p) {
        case GpuFlatPrecision::kAuto:
            if (!threshold) {
                return kernels::GemmProduct::kFloat32;
            }
            return computeCapabilityMajor >= 8 ? kernels::GemmProduct::kBF16x3
                                               : kernels::GemmProduct::kTF32x3;
        case GpuFlatPrecision::kFloat32:
            return kernels::GemmProduct::kFloat32;
        case GpuFlatPrecision::kTF32x3:
            return kernels::GemmProduct::kTF32x3;
    }
    FAISS_THROW_FMT("unknown GpuFlatPrecision %d", int(p));
}

void flatProductTile(
        const GpuResources& res,
        faiss::MetricType metric,
        const void* q,
        int64_t nq,
        const void* b,
        int64_t nb,
        int d,
        kernels::GemmProduct product,
        float* dist) {
    using kernels::GemmProduct;
    const bool split = kernels::splitRowBytes(product, d) > 0;
    const int K = split ? 3 * d : d;
    const cudaDataType_t operand = product == GemmProduct::kBF16x3 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute =
            product == GemmProduct::kTF32x3 || product == GemmProduct::kTF32
            ? CUBLAS_COMPUTE_32F_FAST_TF32
            : CUBLAS_COMPUTE_32F;
    // dist = alpha * Q B^T: |b|^2 (and |q|^2) are added later for L2.
    const float alpha = metric == faiss::METRIC_L2 ? -2.f : -1.f;
    if (res.plainProducts()) {
        kernels::plainProduct(product, q, nq, b, nb, K, alpha, dist, res.stream());
        return;
    }
    const float beta = 0.f;
    // Row-major C[nq x nb] = Q B^T is column-major C^T = B^T(op) Q.
    FAISS_EXT_CUBLAS_CHECK(cublasGemmEx(
            res.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nq), K, &alpha, b, operand, K, q,
            operand, K, &beta, dist, CUDA_R_32F, int(nb), compute, CUBLAS_GEMM_DEFAULT));
}

void flatDistanceTile(
        const GpuResources& res,
        const FlatSearchInput& in,
        const void* q,
        int64_t nq,
        int64_t b0,
        int64_t nb,
        kernels::GemmProduct product,
        void* baseSplit,
        float* dist) {
    const float* rows = in.base + b0 * in.d;
    const void* base = rows;
    if (kernels::splitRowBytes(product, in.d) > 0) {
        kernels::splitRows(
                product, rows, nb, in.d, kernels::SplitRole::kBase, baseSplit, res.stream());
        base = baseSplit;
    }
    flatProductTile(res, in.metric, q, nq, base, nb, in.d, product, dist);
}

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
        float* segKthMin) {
    cudaStream_t stream = res.stream();
    const int64_t candLd = t.candLd;
    const bool l2 = in.metric == faiss::METRIC_L2;
    for (int64_t b0 = 0; b0 < in.nb; b0 += t.baseTile) {
        const int64_t nb = std::min(t.baseTile, in.nb - b0);
        flatDistanceTile(res, in, q, nq, b0, nb, product, baseSplit, dist);
        const bool first = b0 == 0;
        const int64_t nseg = (nb + t.segLen - 1) / t.segLen;
        // The whole base in one segment: its best keepK are the answer (slot 0), no merge,
        // and no id goes unoffered.
        const bool only = first && nb == in.nb && nseg == 1;
        if (segKthMin != nullptr && only) {
            kernels::segmentKthMin(candD, candLd, nq, 0, k, true, segKthMin, stream);
        }
        // Per-segment best k into the candidate slots after the first keepK, then merge
        // with those.
        kernels::SelectRowsArgs seg;
        seg.dist = dist;
        seg.ldDist = nb;
        seg.nrows = nq;
        seg.ncols = nb;
        seg.segLen = t.segLen;
        seg.colBias = l2 ? in.baseNorms + b0 : nullptr;
        seg.idBase = b0;
        seg.allow = in.allow;
        seg.k = only ? keepK : k;
        // After the first base tile only values below the kept keepK-th can survive the
        // merge: the others read as +inf, so the segment's selection offers few values
        // and its threshold starts tight. The rerank path's proof still holds: such an id
        // is no better than the final keepK-th kept, as one dropped at a merge.
        if (!first) {
            seg.rowBound = candD + (keepK - 1);
            seg.ldRowBound = candLd;
        }
        seg.outD = candD + (only ? 0 : keepK);
        seg.outI = candI + (only ? 0 : keepK);
        seg.ldOut = candLd;
        kernels::selectRowsMin(seg, stream);
        if (only) {
            return;
        }
        if (segKthMin != nullptr) {
            kernels::segmentKthMin(candD + keepK, candLd, nq, nseg, k, first, segKthMin, stream);
        }

        kernels::SelectRowsArgs merge;
        merge.dist = candD + (first ? keepK : 0);
        merge.ldDist = candLd;
        merge.nrows = nq;
        merge.ncols = (first ? 0 : keepK) + nseg * k;
        merge.inIds = candI + (first ? keepK : 0);
        // The kept keepK, sorted by the previous merge, seed the selection.
        merge.sortedPrefix = first ? 0 : keepK;
        merge.ldIds = candLd;
        merge.k = keepK;
        merge.outD = candD;
        merge.outI = candI;
        merge.ldOut = candLd;
        kernels::selectRowsMin(merge, stream);
    }
}

// Selection geometry: the warp path (small k) owns short segments cheaply, so it plans
// in warps and starts from 1024-column segments; the block path from 4096. 3xTF32 first
// sets aside the split of a query tile (at most kMaxFlatQueryTile queries).
FlatTiling planFlatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budget) {
    return planFlatSearch(
            res, in, k, budget,
            flatGemmProduct(in.precision, FlatSearchPath::kTiles, res.computeCapabilityMajor()), k);
}

FlatTiling planFlatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budget,
        kernels::GemmProduct product,
        int keepK) {
    const size_t splitRow = kernels::splitRowBytes(product, in.d);
    if (splitRow > 0) {
        const size_t querySplit = size_t(std::min(in.nq, kMaxFlatQueryTile)) * splitRow;
        FAISS_THROW_IF_NOT_FMT(
                querySplit < budget,
                "temporary memory budget of %zu bytes is too small for the split of the "
                "queries (%zu bytes)",
                budget, querySplit);
        budget -= querySplit;
    }
    const int64_t sms = res.multiProcessorCount();
    // A few queries over a short base (the coarse search of a small IVF batch): one
    // segment a query, which selectRowsMin sorts whole in one block (the short-row
    // path), and no merge.
    if (in.nb <= kernels::kShortSelectMaxCols && in.nq <= kernels::kShortSelectMaxBlocks) {
        return planFlatTiling(in.nq, in.nb, k, budget, 1, in.nb, splitRow, keepK);
    }
    if (nextPow2(k) <= kernels::kMaxWarpRowSelectK) {
        return planFlatTiling(in.nq, in.nb, k, budget, 32 * sms, 1024, splitRow, keepK);
    }
    return planFlatTiling(in.nq, in.nb, k, budget, 4 * sms, 4096, splitRow, keepK);
}

void flatSearchTiles(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI) {
    cudaStream_t stream = res.stream();
    const FlatTiling t = planFlatSearch(res, in, k, budgetBytes);
    const bool l2 = in.metric == faiss::METRIC_L2;
    const kernels::GemmProduct product =
            flatGemmProduct(in.precision, FlatSearchPath::kTiles, res.computeCapabilityMajor());
    const size_t splitRow = kernels::splitRowBytes(product, in.d);
    const int64_t candLd = t.candLd;

    auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
    auto candD = res.alloc<float>(size_t(t.queryTile) * candLd);
    auto candI = res.alloc<int64_t>(size_t(t.queryTile) * candLd);
    auto qNorms = res.alloc<float>(l2 ? size_t(t.queryTile) : 0);
    auto querySplit = res.alloc<char>(size_t(t.queryTile) * splitRow);
    auto baseSplit = res.alloc<char>(size_t(t.baseTile) * splitRow);
    for (int64_t q0 = 0; q0 < in.nq; q0 += t.queryTile) {
        const int64_t nq = std::min(t.queryTile, in.nq - q0);
        const float* queries = in.queries + q0 * in.d;
        if (l2) {
            kernels::rowSquaredNorms(queries, nq, in.d, qNorms.data(), stream);
        }
        const void* q = queries;
        if (splitRow > 0) {
            kernels::splitRows(
                    product, queries, nq, in.d, kernels::SplitRole::kQuery, querySplit.data(),
                    stream);
            q = querySplit.data();
        }
        flatSelectOverBase(
                res, in, t, q, nq, k, k, product, baseSplit.data(), dist.data(), candD.data(),
                candI.data(), nullptr);
        kernels::finishKnn(
                candD.data(), candI.data(), candLd, nq, k, kernels::distanceFinishFor(in.metric),
                qNorms.data(), outD + q0 * k, outI + q0 * k, stream);
    }
}

int64_t flatResearchRows(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* queries,
        const int64_t* rows,
        const int* nRows,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI) {
    cudaStream_t stream = res.stream();
    int n = 0;
    copyToHost(&n, nRows, 1, stream);
    if (n == 0) {
        return 0;
    }
    const int d = in.d;
    auto rq = res.alloc<float>(size_t(n) * d);
    auto rD = res.alloc<float>(size_t(n) * k);
    auto rI = res.alloc<int64_t>(size_t(n) * k);
    kernels::gatherRows(queries, rows, n, d, rq.data(), stream);
    FlatSearchInput rin = in;
    rin.queries = rq.data();
    rin.nq = n;
    rin.path = FlatSearchPath::kTiles;
    rin.precision = GpuFlatPrecision::kFloat32;
    const size_t taken = size_t(n) * (size_t(d) * sizeof(float) + size_t(k) * 12);
    flatSearchTiles(
            res, rin, k, budgetBytes > taken ? budgetBytes - taken : 0, rD.data(), rI.data());
    kernels::scatterResultRows(rD.data(), rI.data(), rows, n, k, outD, outI, stream);
    return n;
}

FlatSearchPath flatSearchPathFor(const GpuResources& res, const FlatSearchInput& in, int k) {
    if (in.path != FlatSearchPath::kAuto) {
        return in.path;
    }
    const size_t budget = res.tempMemoryBytes();
    const int cc = res.computeCapabilityMajor();
    if (flatRadixCopyPathFits(in, k, budget)) {
        return FlatSearchPath::kRadixCopy;
    }
    if (flatRadixPathFits(in, k, budget, cc)) {
        return FlatSearchPath::kRadix;
    }
    if (flatThresholdPathFits(in, k, budget, cc)) {
        return FlatSearchPath::kThreshold;
    }
    if (flatRerankPathFits(in, k, cc)) {
        return FlatSearchPath::kRerank;
    }
    return FlatSearchPath::kTiles;
}

void flatSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        float* outD,
        int64_t* outI) {
    if (in.nq == 0) {
        return;
    }
    if (in.nb == 0) {
        kernels::fillMissingResults(
                outD, outI, in.nq * k, kernels::distanceFinishFor(in.metric), res.stream());
        return;
    }
    const size_t budget = res.tempMemoryBytes();
    switch (flatSearchPathFor(res, in, k)) {
        case FlatSearchPath::kRadix:
            flatSearchRadix(res, in, k, budget, outD, outI);
            break;
        case FlatSearchPath::kRadixCopy:
            flatSearchRadixCopy(res, in, k, budget, outD, outI);
            break;
        case FlatSearchPath::kThreshold:
            flatSearchThreshold(res, in, k, budget, outD, outI);
            break;
        case FlatSearchPath::kRerank:
            flatSearchRerank(res, in, k, budget, outD, outI);
            break;
        case FlatSearchPath::kTiles:
        case FlatSearchPath::kAuto: // resolved by flatSearchPathFor
            flatSearchTiles(res, in, k, budget, outD, outI);
            break;
    }
}

} // namespace faiss_ext
