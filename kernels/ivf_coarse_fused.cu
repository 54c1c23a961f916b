// The fused IVF coarse search's host side (IvfCoarseFused.h): checks and the choice of
// the kernel's list capacity.
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

} // namespace coarse

size_t coarseFusedSmemBytes(int d) {
    using namespace coarse;
    return sizeof(float) *
            (size_t(kCoarseFusedQueryTile + 2 * kChunk) * size_t(rowStride(d)) + 2 * kChunk);
}

void coarseFusedCandidates(const CoarseFusedArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.nq > 0 && a.d >= 1 && a.d <= kCoarseFusedMaxDim && a.k >= 1 &&
                    nextPow2(a.k) <= kCoarseFusedMaxK && a.nlist >= a.k && a.nlist <= INT32_MAX &&
                    coarseFusedSegments(a.nlist) <= 65535,
            "fused coarse search: bad shape nq=%lld d=%d nlist=%lld k=%d", (long long)a.nq, a.d,
            (long long)a.nlist, a.k);
    FAISS_THROW_IF_NOT_MSG(
            a.innerProduct || (a.centroidNorms != nullptr && a.queryNorms != nullptr),
            "fused coarse search: L2 needs the centroid norms and room for the query norms");
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
