#include <faiss_ext/impl/FlatThresholdSearch.h>

#include <algorithm>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <faiss_ext/utils/MathUtils.h>
#include <kernels/Distances.h>
#include <kernels/Select.h>
#include <kernels/ThresholdFilter.h>

namespace faiss_ext {

namespace {

/// Below this many queries the sample and the base's split cost more than the
/// selection they save (bench_flat, both paths forced).
constexpr int64_t kThresholdMinQueries = 256;
/// The listed ids a query may hold; the sample is sized so that about a quarter of it
/// is used.
constexpr int64_t kMaxCapacity = 32768;
/// The filter kernel's grid holds this many queries.
constexpr int64_t kMaxQueryGroup = 65535;
/// The re-ranked keys and ids (12 bytes a listed id) are held for a slice of the group
/// of at most this many bytes; the group itself keeps only the listed ids and keys.
constexpr size_t kRerankBytes = size_t(64) << 20;

int64_t capacityFor(int k) {
    return std::min<int64_t>(kMaxCapacity, nextPow2(std::max(1024, 32 * k)));
}

} // namespace

FlatThresholdPlan planFlatThreshold(
        int64_t nq,
        int64_t nb,
        int d,
        int k,
        kernels::GemmProduct product,
        size_t budgetBytes,
        const FlatThresholdTiles& tiles) {
    FAISS_THROW_IF_NOT_FMT(
            nq > 0 && nb > 0 && d > 0 && k >= 1 && k <= kernels::kMaxSelectK,
            "bad threshold search shape nq=%lld nb=%lld d=%d k=%d", (long long)nq, (long long)nb, d,
            k);
    FlatThresholdPlan p;
    p.capacity = capacityFor(k);
    // Expected listed ids: the sample's k-th is about the (k nb / S)-th neighbour.
    p.sampleRows =
            std::min(nb, std::max<int64_t>(k, divUp<int64_t>(int64_t(4) * k * nb, p.capacity)));
    p.sampleStride = nb / p.sampleRows;
    const size_t splitRow = kernels::splitRowBytes(product, d);
    // The sample's vectors, norms and (filtered search) allowed bits.
    const size_t sampleBytes =
            size_t(p.sampleRows) * (d + 1) * sizeof(float) + size_t(p.sampleRows) / 8 + 4;
    // Listed ids and keys (8 bytes), count, threshold, |q|^2, overflow row (20), the
    // query's split.
    const size_t perQuery = size_t(p.capacity) * 8 + 20 + splitRow;
    const size_t rerankRow = size_t(p.capacity) * (sizeof(float) + sizeof(int64_t));
    const size_t budget = budgetBytes / 2;
    // Groups of equal size, as few as fit: each group splits and streams the whole base
    // again. Their count grows by an eighth a step (a few dozen steps from one group to
    // thousands).
    for (int64_t parts = divUp(nq, kMaxQueryGroup);; parts = std::max(parts + 1, parts * 9 / 8)) {
        const int64_t g = divUp(nq, parts);
        const int64_t qt = std::min(g, tiles.maxQueryTile);
        const int64_t rr = std::min<int64_t>(g, std::max<size_t>(1, kRerankBytes / rerankRow));
        // The tile's keys and its base split: each within kDistTileBytes.
        int64_t bt = int64_t(tiles.distTileBytes / (size_t(qt) * sizeof(float)));
        if (splitRow > 0) {
            bt = std::min(bt, int64_t(tiles.distTileBytes / splitRow));
        }
        bt = std::min(nb, std::max<int64_t>(256, bt / 256 * 256));
        const size_t bytes = size_t(g) * perQuery + size_t(rr) * rerankRow +
                size_t(qt) * bt * sizeof(float) + size_t(bt) * splitRow + sampleBytes;
        if (bytes <= budget) {
            p.queryGroup = g;
            p.queryTile = qt;
            p.rerankRows = rr;
            p.baseTile = bt;
            p.bytes = bytes;
            return p;
        }
        if (g == 1) {
            return p; // queryGroup 0: does not fit
        }
    }
}

bool flatThresholdPathFits(
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        int computeCapabilityMajor) {
    return k >= 1 && k <= kernels::kMaxSelectK && in.nq >= kThresholdMinQueries &&
            in.nb >= 16 * capacityFor(k) && in.nb < (int64_t(1) << 31) &&
            planFlatThreshold(
                    in.nq, in.nb, in.d, k,
                    flatGemmProduct(
                            in.precision, FlatSearchPath::kThreshold, computeCapabilityMajor),
                    budgetBytes)
                    .queryGroup > 0;
}

void flatSearchThreshold(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI,
        const FlatThresholdTiles& tiles) {
    FAISS_THROW_IF_NOT_FMT(
            in.nb < (int64_t(1) << 31), "the flat threshold path lists ids in 32 bits (nb=%lld)",
            (long long)in.nb);
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    const kernels::GemmProduct product =
            flatGemmProduct(in.precision, FlatSearchPath::kThreshold, res.computeCapabilityMajor());
    const bool split = kernels::splitRowBytes(product, in.d) > 0;
    const int d = in.d;
    const FlatThresholdPlan p = planFlatThreshold(in.nq, in.nb, d, k, product, budgetBytes, tiles);
    FAISS_THROW_IF_NOT_FMT(
            p.queryGroup > 0,
            "temporary memory budget of %zu bytes is too small for the flat threshold path "
            "(nb=%lld, d=%d, k=%d)",
            budgetBytes, (long long)in.nb, d, k);
    const size_t restBudget = budgetBytes - p.bytes;
    const int64_t C = p.capacity;
    // The bound of a listed key (the main pass's), and of the threshold's margin (the
    // sample's k-th key too).
    const kernels::KeyErrorBound keyBound = kernels::keyErrorBound(d, product);

    // The sample (every sampleStride-th base row) and the largest base norm.
    auto sample = res.alloc<float>(size_t(p.sampleRows) * d);
    auto sampleNorms = res.alloc<float>(l2 ? size_t(p.sampleRows) : 0);
    FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
            sample.data(), size_t(d) * sizeof(float), in.base,
            size_t(p.sampleStride) * d * sizeof(float), size_t(d) * sizeof(float),
            size_t(p.sampleRows), cudaMemcpyDeviceToDevice, stream));
    if (l2) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
                sampleNorms.data(), sizeof(float), in.baseNorms,
                size_t(p.sampleStride) * sizeof(float), sizeof(float), size_t(p.sampleRows),
                cudaMemcpyDeviceToDevice, stream));
    }
    auto maxNorm = res.alloc<float>(1);
    kernels::maxSquaredNorm(in.base, l2 ? in.baseNorms : nullptr, in.nb, d, maxNorm.data(), stream);
    // The sample is searched by the tiles path in FP32 or 3xTF32 (a split product for the
    // main pass); the threshold's margin covers both its error and the main pass's.
    const GpuFlatPrecision samplePrecision =
            split ? GpuFlatPrecision::kTF32x3 : GpuFlatPrecision::kFloat32;
    const kernels::KeyErrorBound thresholdBound =
            kernels::keyErrorBound(
                    d,
                    flatGemmProduct(
                            samplePrecision, FlatSearchPath::kTiles,
                            res.computeCapabilityMajor())) +
            keyBound;
    FlatSearchInput sampleIn = in;
    sampleIn.base = sample.data();
    sampleIn.baseNorms = l2 ? sampleNorms.data() : nullptr;
    sampleIn.nb = p.sampleRows;
    // Filtered search: the sample's k-th over its allowed rows (fewer than k: no bound,
    // every allowed id is listed, or the query is re-searched if they overflow).
    auto sampleAllow = res.alloc<uint32_t>(in.allow ? size_t(divUp<int64_t>(p.sampleRows, 32)) : 0);
    if (in.allow != nullptr) {
        kernels::strideBitmap(in.allow, p.sampleStride, p.sampleRows, sampleAllow.data(), stream);
        sampleIn.allow = sampleAllow.data();
    }
    sampleIn.path = FlatSearchPath::kTiles;
    sampleIn.precision = samplePrecision;

    const int64_t G = p.queryGroup;
    auto ids = res.alloc<int32_t>(size_t(G) * C);
    auto listedKeys = res.alloc<float>(size_t(G) * C);
    auto counts = res.alloc<uint32_t>(size_t(G));
    auto thresholds = res.alloc<float>(size_t(G));
    auto qNorms = res.alloc<float>(size_t(G));
    auto keys = res.alloc<float>(size_t(p.rerankRows) * C);
    auto keyIds = res.alloc<int64_t>(size_t(p.rerankRows) * C);
    auto overRows = res.alloc<int64_t>(size_t(G));
    auto nOver = res.alloc<int>(1);
    const size_t splitRow = kernels::splitRowBytes(product, d);
    auto querySplit = res.alloc<char>(size_t(G) * splitRow);
    auto dist = res.alloc<float>(size_t(p.queryTile) * p.baseTile);
    auto baseSplit = res.alloc<char>(size_t(p.baseTile) * splitRow);
    // A query row of the GEMM's left operand: a split row, or the FP32 row.
    const size_t queryRowBytes = split ? splitRow : size_t(d) * sizeof(float);

    for (int64_t g0 = 0; g0 < in.nq; g0 += G) {
        const int64_t ng = std::min(G, in.nq - g0);
        const float* q = in.queries + g0 * d;
        float* gD = outD + g0 * k;
        int64_t* gI = outI + g0 * k;
        // 1. The sample's k nearest (into the group's results, overwritten below).
        sampleIn.queries = q;
        sampleIn.nq = ng;
        flatSearchTiles(res, sampleIn, k, restBudget, gD, gI);
        kernels::rowSquaredNorms(q, ng, d, qNorms.data(), stream);
        kernels::keyThresholds(
                gD + (k - 1), k, ng, qNorms.data(), maxNorm.data(), thresholdBound, l2,
                thresholds.data(), stream);
        // 2. Every base tile against the thresholds.
        FAISS_EXT_CUDA_CHECK(
                cudaMemsetAsync(counts.data(), 0, size_t(ng) * sizeof(uint32_t), stream));
        const char* qs = reinterpret_cast<const char*>(q);
        if (split) {
            kernels::splitRows(
                    product, q, ng, d, kernels::SplitRole::kQuery, querySplit.data(), stream);
            qs = querySplit.data();
        }
        for (int64_t b0 = 0; b0 < in.nb; b0 += p.baseTile) {
            const int64_t nbt = std::min(p.baseTile, in.nb - b0);
            const float* rows = in.base + b0 * d;
            const void* b = rows;
            if (split) {
                kernels::splitRows(
                        product, rows, nbt, d, kernels::SplitRole::kBase, baseSplit.data(), stream);
                b = baseSplit.data();
            }
            for (int64_t q0 = 0; q0 < ng; q0 += p.queryTile) {
                const int64_t nqt = std::min(p.queryTile, ng - q0);
                flatProductTile(
                        res, in.metric, qs + q0 * queryRowBytes, nqt, b, nbt, d, product,
                        dist.data());
                kernels::appendUnderThreshold(
                        dist.data(), nbt, nqt, nbt, l2 ? in.baseNorms + b0 : nullptr,
                        thresholds.data() + q0, in.allow, int32_t(b0), ids.data() + q0 * C,
                        listedKeys.data() + q0 * C, C, counts.data() + q0, stream);
            }
        }
        // 3. A slice of the group at a time: each query's k-th listed key (into its
        // results, overwritten below) and its band's limit (over its threshold, used up);
        // the listed ids inside the band re-ranked exactly, then the k best of each list.
        for (int64_t r0 = 0; r0 < ng; r0 += p.rerankRows) {
            const int64_t nr = std::min(p.rerankRows, ng - r0);
            float* rowKeys = listedKeys.data() + r0 * C;
            kernels::padListedKeys(rowKeys, counts.data() + r0, nr, C, stream);
            kernels::SelectRowsArgs kth;
            kth.dist = rowKeys;
            kth.ldDist = C;
            kth.nrows = nr;
            kth.ncols = C;
            kth.k = k;
            kth.outD = gD + r0 * k;
            kth.outI = gI + r0 * k;
            kth.ldOut = k;
            kernels::selectRowsMin(kth, stream);
            float* limits = thresholds.data() + r0;
            kernels::rerankBandLimits(
                    gD + r0 * k + (k - 1), k, nr, qNorms.data() + r0, maxNorm.data(), keyBound, d,
                    l2, limits, stream);
            kernels::rerankListed(
                    q + r0 * d, in.base, d, l2, ids.data() + r0 * C, rowKeys, limits,
                    counts.data() + r0, nr, C, keys.data(), keyIds.data(), stream);
            kernels::SelectRowsArgs sel;
            sel.dist = keys.data();
            sel.ldDist = C;
            sel.nrows = nr;
            sel.ncols = C;
            sel.inIds = keyIds.data();
            sel.ldIds = C;
            sel.k = k;
            sel.outD = gD + r0 * k;
            sel.outI = gI + r0 * k;
            sel.ldOut = k;
            kernels::selectRowsMin(sel, stream);
        }
        kernels::finishKnn(
                gD, gI, k, ng, k, kernels::distanceFinishFor(in.metric), nullptr, gD, gI, stream);
        // 4. Queries whose lists overflowed (many vectors tied with the k-th, say): the
        // tiles path in FP32 for them alone.
        kernels::overflowRows(counts.data(), ng, C, overRows.data(), nOver.data(), stream);
        flatResearchRows(res, in, q, overRows.data(), nOver.data(), k, restBudget, gD, gI);
    }
}

} // namespace faiss_ext
