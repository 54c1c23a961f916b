#include <faiss_ext/impl/FlatRadixSearch.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/RadixSelect.h>
#include <kernels/Select.h>
#include <kernels/ThresholdFilter.h>

namespace faiss_ext {

size_t flatRadixBytes(int64_t nq, int64_t nb, int k) {
    return size_t(nq) * size_t(nb) * sizeof(float)               // distance rows
            + size_t(nq) * k * (sizeof(float) + sizeof(int64_t)) // selected keys
            + size_t(nq) * sizeof(float)                         // query norms
            + kernels::radixSelectScratchBytes(nq, k);
}

namespace {

/// What kAuto asks of both radix paths: k in range, a large base, and the rows of rowQueries
/// queries within budgetBytes.
bool radixShapeFits(const FlatSearchInput& in, int64_t rowQueries, int k, size_t budgetBytes) {
    return k >= 1 && k <= kernels::kMaxSelectK && in.nb >= kRadixMinBase &&
            in.nb < (int64_t(1) << 31) && flatRadixBytes(rowQueries, in.nb, k) <= budgetBytes;
}

/// Checks the shape both radix paths take and their temporaries against the budget.
void checkRadixShape(const FlatSearchInput& in, size_t bytes, size_t budgetBytes) {
    FAISS_THROW_IF_NOT_FMT(
            in.nb < (int64_t(1) << 31), "the flat radix path takes fewer than 2^31 vectors (%lld)",
            (long long)in.nb);
    FAISS_THROW_IF_NOT_FMT(
            bytes <= budgetBytes,
            "the flat radix path needs %zu bytes of temporary memory for %lld queries x %lld "
            "vectors; the budget is %zu",
            bytes, (long long)in.nq, (long long)in.nb, budgetBytes);
}

/// The fused product over the base's copy for in.d (the query and the outputs unset).
kernels::RadixQueryProduct copyProduct(const FlatSearchInput& in) {
    kernels::RadixQueryProduct product;
    product.d = in.d;
    product.copyRows = in.copy.rows;
    product.copyCode = in.copy.code;
    product.copyScales = in.copy.scales;
    return product;
}

/// About two blocks an SM for each pass, shared by the rows.
int radixBlocksPerRow(const GpuResources& res, int64_t nq) {
    return int(std::max<int64_t>(1, 2 * int64_t(res.multiProcessorCount()) / nq));
}

} // namespace

bool flatRadixPathFits(
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        int computeCapabilityMajor) {
    return in.nq <= kRadixMaxQueries && (in.nq == 1 || k >= kRadixMinKForBatches) &&
            flatGemmProduct(in.precision, FlatSearchPath::kRadix, computeCapabilityMajor) ==
            kernels::GemmProduct::kFloat32 &&
            radixShapeFits(in, in.nq, k, budgetBytes);
}

bool flatRadixCopyPathFits(const FlatSearchInput& in, int k, size_t budgetBytes) {
    // The fused product over the copy holds the query in shared memory.
    return in.copy.rows != nullptr && in.precision == GpuFlatPrecision::kAuto && in.nq == 1 &&
            kernels::radixQueryFits(copyProduct(in)) && radixShapeFits(in, 1, k, budgetBytes);
}

void flatSearchRadixCopy(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI) {
    FAISS_THROW_IF_NOT_MSG(
            in.copy.rows != nullptr,
            "the flat radix path over a copy needs one kept (GpuIndexFlatConfig::float16Copy "
            "or int8Copy)");
    const size_t bytes = flatRadixBytes(1, in.nb, k);
    checkRadixShape(in, bytes, budgetBytes);
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    const int d = in.d;

    auto values = res.alloc<float>(size_t(in.nb));
    auto candD = res.alloc<float>(size_t(k));
    auto candI = res.alloc<int64_t>(size_t(k));
    auto qNorm = res.alloc<float>(1);
    auto limit = res.alloc<float>(1);
    const size_t scratchBytes = kernels::radixSelectScratchBytes(1, k);
    auto scratch = res.alloc<char>(scratchBytes);
    const int blocks = radixBlocksPerRow(res, 1);
    // The copy's keys against exact arithmetic: the copy's own error (at most
    // maxRelError |q| |b|), then the FP32 product over the copy's values (each element
    // its stored value times the row's scale: at most (1 + maxRelError) |b| in all) and
    // the stored norms as on the FP32 path.
    kernels::KeyErrorBound bound = kernels::keyErrorBound(d, kernels::GemmProduct::kFloat32);
    bound.dotRel = in.copy.maxRelError + bound.dotRel * (1.f + in.copy.maxRelError);

    kernels::RadixSelectArgs sel;
    sel.dist = values.data();
    sel.ldDist = in.nb;
    sel.nrows = 1;
    sel.ncols = in.nb;
    sel.colBias = l2 ? in.baseNorms : nullptr;
    sel.allow = in.allow;
    sel.k = k;
    sel.outD = candD.data();
    sel.outI = candI.data();
    sel.ldOut = k;
    // The re-ranked row holds whole distances, +inf outside the band and the filter.
    kernels::RadixSelectArgs exact = sel;
    exact.colBias = nullptr;
    exact.allow = nullptr;
    kernels::RadixQueryProduct one = copyProduct(in);
    one.base = in.base;
    one.alpha = l2 ? -2.f : -1.f;
    one.values = values.data();
    one.queryNormSq = qNorm.data();
    for (int64_t q = 0; q < in.nq; ++q) {
        const float* query = in.queries + q * d;
        one.query = query;
        kernels::radixSelectQuery(sel, one, scratch.data(), scratchBytes, blocks, stream);
        kernels::rerankBandLimits(
                candD.data() + (k - 1), k, 1, qNorm.data(), in.copy.maxSquaredNorm, bound, d, l2,
                limit.data(), stream);
        kernels::rerankRow(query, in.base, d, l2, values.data(), in.nb, limit.data(), stream);
        kernels::radixSelectRowsMin(exact, scratch.data(), scratchBytes, blocks, stream);
        kernels::finishKnn(
                candD.data(), candI.data(), k, 1, k, kernels::distanceFinishFor(in.metric), nullptr,
                outD + q * k, outI + q * k, stream);
    }
}

void flatSearchRadix(
        const GpuResources& res,
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        float* outD,
        int64_t* outI) {
    FAISS_THROW_IF_NOT_MSG(
            flatGemmProduct(in.precision, FlatSearchPath::kRadix, res.computeCapabilityMajor()) ==
                    kernels::GemmProduct::kFloat32,
            "the flat radix path computes FP32 products only");
    const size_t bytes = flatRadixBytes(in.nq, in.nb, k);
    checkRadixShape(in, bytes, budgetBytes);
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;

    auto dist = res.alloc<float>(size_t(in.nq) * in.nb);
    auto candD = res.alloc<float>(size_t(in.nq) * k);
    auto candI = res.alloc<int64_t>(size_t(in.nq) * k);
    auto qNorms = res.alloc<float>(l2 ? size_t(in.nq) : 0);
    const size_t scratchBytes = kernels::radixSelectScratchBytes(in.nq, k);
    auto scratch = res.alloc<char>(scratchBytes);

    kernels::RadixSelectArgs sel;
    sel.dist = dist.data();
    sel.ldDist = in.nb;
    sel.nrows = in.nq;
    sel.ncols = in.nb;
    sel.colBias = l2 ? in.baseNorms : nullptr;
    sel.allow = in.allow;
    sel.k = k;
    sel.outD = candD.data();
    sel.outI = candI.data();
    sel.ldOut = k;
    const int blocksPerRow = radixBlocksPerRow(res, in.nq);
    // One query: its product and first digit pass in one read of the base.
    kernels::RadixQueryProduct one;
    one.query = in.queries;
    one.base = in.base;
    one.d = in.d;
    one.alpha = l2 ? -2.f : -1.f;
    one.values = dist.data();
    one.queryNormSq = l2 ? qNorms.data() : nullptr;
    if (in.nq == 1 && kernels::radixQueryFits(one)) {
        kernels::radixSelectQuery(sel, one, scratch.data(), scratchBytes, blocksPerRow, stream);
    } else {
        if (l2) {
            kernels::rowSquaredNorms(in.queries, in.nq, in.d, qNorms.data(), stream);
        }
        flatProductTile(
                res, in.metric, in.queries, in.nq, in.base, in.nb, in.d,
                kernels::GemmProduct::kFloat32, dist.data());
        kernels::radixSelectRowsMin(sel, scratch.data(), scratchBytes, blocksPerRow, stream);
    }
    kernels::finishKnn(
            candD.data(), candI.data(), k, in.nq, k, kernels::distanceFinishFor(in.metric),
            qNorms.data(), outD, outI, stream);
}

} // namespace faiss_ext
