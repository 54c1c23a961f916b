// The rerank path's proof of completeness (RerankCertificate.h).
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "RerankCertificate.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;

__global__ void segmentKthMinKernel(
        const float* segKeys,
        int64_t ld,
        int64_t nrows,
        int64_t nseg,
        int k,
        bool init,
        float* minKth) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= nrows) {
        return;
    }
    float m = init ? INFINITY : minKth[r];
    for (int64_t s = 0; s < nseg; ++s) {
        m = fminf(m, segKeys[r * ld + s * k + k - 1]);
    }
    minKth[r] = m;
}

__global__ void uncertifiedRowsKernel(
        const float* keptLast,
        int64_t ld,
        const float* minKth,
        const float* limits,
        int64_t nrows,
        int64_t rowBase,
        int64_t* rows,
        int* nRows) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= nrows) {
        return;
    }
    const float limit = limits[r];
    const bool proven = keptLast[r * ld] > limit && minKth[r] > limit;
    if (!proven) {
        rows[atomicAdd(nRows, 1)] = rowBase + r;
    }
}

int blocksFor(int64_t n) {
    return int(std::max<int64_t>(1, divUp<int64_t>(n, kThreads)));
}

} // namespace

void segmentKthMin(
        const float* segKeys,
        int64_t ld,
        int64_t nrows,
        int64_t nseg,
        int k,
        bool init,
        float* minKth,
        cudaStream_t stream) {
    if (nrows == 0) {
        return;
    }
    segmentKthMinKernel<<<blocksFor(nrows), kThreads, 0, stream>>>(
            segKeys, ld, nrows, nseg, k, init, minKth);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void uncertifiedRows(
        const float* keptLast,
        int64_t ld,
        const float* minKth,
        const float* limits,
        int64_t nrows,
        int64_t rowBase,
        int64_t* rows,
        int* nRows,
        cudaStream_t stream) {
    if (nrows == 0) {
        return;
    }
    uncertifiedRowsKernel<<<blocksFor(nrows), kThreads, 0, stream>>>(
            keptLast, ld, minKth, limits, nrows, rowBase, rows, nRows);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace kernels
} // namespace faiss_ext
