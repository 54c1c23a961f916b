#include <faiss_ext/impl/IvfCoarseSearch.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/MathUtils.h>
#include <kernels/IvfCoarseFused.h>

namespace faiss_ext {

size_t ivfCoarseFusedBytesPerQuery(int64_t nlist, int nprobe) {
    return size_t(kernels::coarseFusedSegments(nlist)) * size_t(nprobe) *
            (sizeof(float) + sizeof(int64_t)) +
            sizeof(float);
}

const char* ivfCoarseFusedCentroidsRefusal(
        const GpuResources& res,
        int64_t nlist,
        int d,
        faiss::MetricType metric) {
    if (res.computeCapabilityMajor() < 8) {
        return "it needs TF32 tensor cores (compute capability 8.0 or newer)";
    }
    if (d > kernels::kCoarseFusedMaxDim ||
        kernels::coarseFusedSmemBytes(d) > res.maxSharedMemoryPerBlock()) {
        return "the dimension is too large for its shared memory";
    }
    if (metric != faiss::METRIC_L2 && metric != faiss::METRIC_INNER_PRODUCT) {
        return "it computes L2 and inner product only";
    }
    if (nlist < 1 || nlist > INT32_MAX || kernels::coarseFusedSegments(nlist) > 65535) {
        return "the centroid count is out of its range";
    }
    // As the GEMM path's operand splits: at most a quarter of the temporary budget.
    if (kernels::coarseFusedFragmentBytes(nlist, d) > res.tempMemoryBytes() / 4) {
        return "its centroid fragments would take over a quarter of the temporary memory";
    }
    return nullptr;
}

const char* ivfCoarseFusedRefusal(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe) {
    if (coarse.precision != GpuFlatPrecision::kTF32x3) {
        return "its products are 3xTF32 and the coarse precision is not";
    }
    if (nextPow2(nprobe) > kernels::kCoarseFusedMaxK) {
        return "it keeps at most 8 lists a query";
    }
    if (coarse.allow != nullptr) {
        return "it does not filter centroids";
    }
    if (coarse.nb < nprobe) {
        return "the centroid count is out of its range";
    }
    return ivfCoarseFusedCentroidsRefusal(res, coarse.nb, coarse.d, coarse.metric);
}

IvfCoarseFragments::IvfCoarseFragments(
        const GpuResources& res,
        const float* centroids,
        int64_t nlist,
        int d,
        faiss::MetricType metric) {
    if (centroids == nullptr || ivfCoarseFusedCentroidsRefusal(res, nlist, d, metric) != nullptr) {
        return;
    }
    // Without the memory for it the index keeps no split (its searches split per call)
    // rather than fail the change of centroids.
    try {
        fragments_ =
                res.alloc<float4>(kernels::coarseFusedFragmentBytes(nlist, d) / sizeof(float4));
    } catch (const faiss::FaissException&) {
        return;
    }
    kernels::coarseFusedSplitCentroids(centroids, nlist, d, fragments_.data(), res.stream());
}

IvfCoarsePath ivfCoarsePathFor(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe,
        IvfCoarsePath forced) {
    if (forced == IvfCoarsePath::kGemm) {
        return IvfCoarsePath::kGemm;
    }
    const char* refusal = ivfCoarseFusedRefusal(res, coarse, nprobe);
    FAISS_THROW_IF_NOT_FMT(
            forced != IvfCoarsePath::kFused || refusal == nullptr,
            "the fused coarse search was forced where it cannot serve (nprobe=%d d=%d nlist=%lld): "
            "%s",
            nprobe, coarse.d, (long long)coarse.nb, refusal);
    if (forced == IvfCoarsePath::kFused) {
        return IvfCoarsePath::kFused;
    }
    return refusal == nullptr && coarse.nq <= kIvfCoarseFusedMaxQueries ? IvfCoarsePath::kFused
                                                                        : IvfCoarsePath::kGemm;
}

void ivfCoarseSearch(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe,
        IvfCoarsePath forced,
        const float4* fragments,
        float* outD,
        int64_t* outI) {
    if (ivfCoarsePathFor(res, coarse, nprobe, forced) == IvfCoarsePath::kGemm) {
        flatSearch(res, coarse, nprobe, outD, outI);
        return;
    }
    const bool l2 = coarse.metric == faiss::METRIC_L2;
    const int64_t ld = kernels::coarseFusedSegments(coarse.nb) * nprobe;
    auto candD = res.alloc<float>(size_t(coarse.nq) * ld);
    auto candI = res.alloc<int64_t>(size_t(coarse.nq) * ld);
    auto queryNorms = res.alloc<float>(l2 ? size_t(coarse.nq) : 0);
    // The index's split of its centroids, or this search's.
    auto ownSplit = res.alloc<float4>(
            fragments ? 0
                      : kernels::coarseFusedFragmentBytes(coarse.nb, coarse.d) / sizeof(float4));
    if (!fragments) {
        kernels::coarseFusedSplitCentroids(
                coarse.base, coarse.nb, coarse.d, ownSplit.data(), res.stream());
        fragments = ownSplit.data();
    }
    kernels::CoarseFusedArgs a;
    a.queries = coarse.queries;
    a.nq = coarse.nq;
    a.d = coarse.d;
    a.centroidFragments = fragments;
    a.centroidNorms = l2 ? coarse.baseNorms : nullptr;
    a.nlist = coarse.nb;
    a.innerProduct = !l2;
    a.k = nprobe;
    a.candD = candD.data();
    a.candI = candI.data();
    a.queryNorms = l2 ? queryNorms.data() : nullptr;
    a.outD = outD;
    a.outI = outI;
    // The segments' candidates are merged as the flat search merges its segments' (ties
    // by column, so by segment, then by id within a segment: by id).
    kernels::coarseFusedSearch(a, res.stream());
}

} // namespace faiss_ext
