// The fused IVF coarse search's host side (IvfCoarseFused.h): checks, the split of the
// centroids into fragments and the choice of the kernels' list capacity.
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/MathUtils.h>

#include "IvfCoarseFusedImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace coarse {

extern template void launchCoarseFused<1>(const CoarseFusedArgs&, cudaStream_t);
extern template void launchCoarseFused<2>(const CoarseFusedArgs&, cudaStream_t);
extern template void launchCoarseFused<4>(const CoarseFusedArgs&, cudaStream_t);
extern template void launchCoarseFused<8>(const CoarseFusedArgs&, cudaStream_t);

namespace {

/// One float4 a thread: fragment (tile, step, lane) of the centroids, zeros past nlist
/// and d. The array holds coarseFusedFragmentTiles(nlist) tiles, whole chunks.
__global__ void splitCentroidFragments(
        const float* centroids,
        int64_t nlist,
        int d,
        int64_t fragments,
        float4* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= fragments) {
        return;
    }
    const int steps = kSteps(d);
    const int lane = int(i % 32);
    const int step = int((i / 32) % steps);
    const int64_t tile = i / (32 * int64_t(steps));
    const int64_t c = tile * 8 + lane / 4;
    const int k0 = step * 8 + lane % 4;
    const float x0 = c < nlist && k0 < d ? centroids[c * d + k0] : 0.f;
    const float x1 = c < nlist && k0 + 4 < d ? centroids[c * d + k0 + 4] : 0.f;
    const float h0 = roundToTF32(x0), h1 = roundToTF32(x1);
    out[i] = make_float4(h0, h1, x0 - h0, x1 - h1);
}

} // namespace

} // namespace coarse

size_t coarseFusedSmemBytes(int d) {
    using namespace coarse;
    return size_t(2) * kTiles * kSteps(d) * 32 * sizeof(float4) +
            sizeof(float) * (size_t(kCoarseFusedQueryTile) * size_t(rowStride(d)) + 2 * kChunk);
}

void coarseFusedSplitCentroids(
        const float* centroids,
        int64_t nlist,
        int d,
        float4* fragments,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            centroids != nullptr && fragments != nullptr &&
                    reinterpret_cast<uintptr_t>(fragments) % sizeof(float4) == 0 && nlist >= 1 &&
                    d >= 1 && d <= kCoarseFusedMaxDim,
            "fused coarse search: bad centroid split nlist=%lld d=%d", (long long)nlist, d);
    const int64_t count = coarseFusedFragmentTiles(nlist) * coarse::kSteps(d) * 32;
    constexpr int kSplitThreads = 256;
    coarse::splitCentroidFragments<<<
            unsigned((count + kSplitThreads - 1) / kSplitThreads), kSplitThreads, 0, stream>>>(
            centroids, nlist, d, count, fragments);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void coarseFusedSearch(const CoarseFusedArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.nq > 0 && a.d >= 1 && a.d <= kCoarseFusedMaxDim && a.k >= 1 &&
                    nextPow2(a.k) <= kCoarseFusedMaxK && a.nlist >= a.k && a.nlist <= INT32_MAX &&
                    coarseFusedSegments(a.nlist) <= 65535,
            "fused coarse search: bad shape nq=%lld d=%d nlist=%lld k=%d", (long long)a.nq, a.d,
            (long long)a.nlist, a.k);
    FAISS_THROW_IF_NOT_MSG(
            a.innerProduct || (a.centroidNorms != nullptr && a.queryNorms != nullptr),
            "fused coarse search: L2 needs the centroid norms and room for the query norms");
    FAISS_THROW_IF_NOT_MSG(
            a.centroidFragments != nullptr &&
                    reinterpret_cast<uintptr_t>(a.centroidFragments) % sizeof(float4) == 0,
            "fused coarse search: no 16-byte aligned centroid fragments");
    FAISS_THROW_IF_NOT_MSG(
            a.candD && a.candI && a.outD && a.outI,
            "fused coarse search: missing candidate or result arrays");
    switch (nextPow2(a.k)) {
        case 1:
            coarse::launchCoarseFused<1>(a, stream);
            return;
        case 2:
            coarse::launchCoarseFused<2>(a, stream);
            return;
        case 4:
            coarse::launchCoarseFused<4>(a, stream);
            return;
        default:
            coarse::launchCoarseFused<8>(a, stream);
            return;
    }
}

} // namespace kernels
} // namespace faiss_ext
