// The IVF coarse search of one query tile: each query's nprobe nearest centroids, by the
// flat search's GEMM tiles (any nprobe, any precision) or, at small nprobe in 3xTF32, by
// the fused kernel (kernels/IvfCoarseFused.h: no distance matrix written), and the one
// rule that picks between them.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/utils/DeviceBuffer.h>

namespace faiss_ext {

/// The coarse search's path. kAuto picks by ivfCoarsePathFor; kGemm and kFused are forced,
/// for tests and benchmarks only (GpuIndexIVFFlatAccess::setCoarsePath).
enum class IvfCoarsePath : int {
    kAuto = 0,
    kGemm,  ///< flatSearch over the centroids (GEMM tiles, then the top-nprobe selection)
    kFused, ///< the fused 3xTF32 kernel, then a merge of its segments' candidates
};

/// Largest query tile kAuto gives the fused path: above it the GEMM path's tensor-core
/// GEMM and selection win (benchs/NOTES.md, thirty-seventh session: SIFT, nlist 4096).
constexpr int64_t kIvfCoarseFusedMaxQueries = 4096;

/// Temporary bytes a query costs on the fused path at nlist and nprobe: its segments'
/// candidates and its squared norm.
size_t ivfCoarseFusedBytesPerQuery(int64_t nlist, int nprobe);

/// Why the fused path cannot serve a coarse search over these centroids on this device
/// whatever the queries (the part of ivfCoarseFusedRefusal that the centroids decide),
/// or null.
const char* ivfCoarseFusedCentroidsRefusal(
        const GpuResources& res,
        int64_t nlist,
        int d,
        faiss::MetricType metric);

/// Why the fused path cannot serve this coarse search (precision already resolved by
/// ivfCoarsePrecision), or null when it can: 3xTF32 products, nextPow2(nprobe) <=
/// kernels::kCoarseFusedMaxK, d <= kernels::kCoarseFusedMaxDim with its shared memory
/// within the device's limit, compute capability 8.0 or newer, an unfiltered L2 or
/// inner-product search, centroid fragments within a quarter of the temporary memory.
const char* ivfCoarseFusedRefusal(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe);

/// The path of this coarse search (kGemm or kFused), the one place that decides: kAuto
/// takes the fused kernel wherever it can serve (ivfCoarseFusedRefusal) for at most
/// kIvfCoarseFusedMaxQueries queries, the GEMM path else; kGemm as forced; kFused as
/// forced, and throws naming why where it cannot serve.
IvfCoarsePath ivfCoarsePathFor(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe,
        IvfCoarsePath forced);

/// The centroids' split for the fused path (kernels::coarseFusedSplitCentroids), kept by
/// an IVF index beside its quantizer so that a search does not split them again (~4 us a
/// call at nlist 4096, d 128). Empty where the fused path cannot serve the centroids
/// (ivfCoarseFusedCentroidsRefusal) or where its memory cannot be had. Built from the
/// centroids as they are: a new set of centroids needs a new one.
class IvfCoarseFragments {
   public:
    IvfCoarseFragments(
            const GpuResources& res,
            const float* centroids,
            int64_t nlist,
            int d,
            faiss::MetricType metric);
    /// The fragments (device), or null where none are kept.
    const float4* data() const {
        return fragments_.data();
    }
    size_t deviceBytes() const {
        return fragments_.bytes();
    }

   private:
    DeviceBuffer<float4> fragments_;
};

/// Writes the nprobe nearest centroids of coarse.nq queries (precision resolved), best
/// first, to outD / outI (device, nq x nprobe) in flatSearch's conventions (L2:
/// squared distances; inner product: the products, largest first), on the path
/// ivfCoarsePathFor gives. The fused path reads `fragments` (IvfCoarseFragments of
/// coarse.base) where given, else splits the centroids itself.
void ivfCoarseSearch(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe,
        IvfCoarsePath forced,
        const float4* fragments,
        float* outD,
        int64_t* outI);

} // namespace faiss_ext
