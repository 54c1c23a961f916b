#include <faiss_ext/impl/FlatRadixSearch.h>

#include <algorithm>

#include <kernels/Distances.h>
#include <kernels/RadixSelect.h>
#include <kernels/Select.h>

namespace faiss_ext {

size_t flatRadixBytes(int64_t nq, int64_t nb, int k) {
    return size_t(nq) * size_t(nb) * sizeof(float)               // distance rows
            + size_t(nq) * k * (sizeof(float) + sizeof(int64_t)) // selected keys
            + size_t(nq) * sizeof(float)                         // query norms
            + kernels::radixSelectScratchBytes(nq, k);
}

bool flatRadixPathFits(
        const FlatSearchInput& in,
        int k,
        size_t budgetBytes,
        int computeCapabilityMajor) {
    return k >= 1 && k <= kernels::kMaxSelectK && in.nq <= kRadixMaxQueries &&
            (in.nq == 1 || k >= kRadixMinKForBatches) && in.nb >= kRadixMinBase &&
            in.nb < (int64_t(1) << 31) &&
            flatGemmProduct(in.precision, FlatSearchPath::kRadix, computeCapabilityMajor) ==
            kernels::GemmProduct::kFloat32 &&
            flatRadixBytes(in.nq, in.nb, k) <= budgetBytes;
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
    FAISS_THROW_IF_NOT_FMT(
            in.nb < (int64_t(1) << 31), "the flat radix path takes fewer than 2^31 vectors (%lld)",
            (long long)in.nb);
    const size_t bytes = flatRadixBytes(in.nq, in.nb, k);
    FAISS_THROW_IF_NOT_FMT(
            bytes <= budgetBytes,
            "the flat radix path needs %zu bytes of temporary memory for %lld queries x %lld "
            "vectors; the budget is %zu",
            bytes, (long long)in.nq, (long long)in.nb, budgetBytes);
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
    // About two blocks an SM for each pass, shared by the rows.
    const int blocksPerRow =
            int(std::max<int64_t>(1, 2 * int64_t(res.multiProcessorCount()) / in.nq));
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
