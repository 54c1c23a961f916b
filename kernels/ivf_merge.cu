// The merge stage, fast path: a row of candidates staged in shared memory and sorted once.
// (The heap path is kernels::selectRowsMin, which needs shared memory for k only.)
#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IvfMerge.h"
#include "Select.h"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kMergeThreads = 512;

__device__ inline float finishKey(float key, int64_t id, bool innerProduct) {
    if (id == -1) {
        return innerProduct ? -CUDART_INF_F : CUDART_INF_F;
    }
    return innerProduct ? -key : key;
}

__global__ void __launch_bounds__(kMergeThreads) mergeFastKernel(
        const float* candD,
        const int64_t* candI,
        int64_t ld,
        const int* rowCandidates,
        int len,
        int k,
        bool innerProduct,
        float* outD,
        int64_t* outI,
        int64_t rowOffset) {
    extern __shared__ __align__(16) char smem[];
    uint64_t* keys = reinterpret_cast<uint64_t*>(smem);
    const int64_t row = rowOffset + blockIdx.x;
    const float* d = candD + row * ld;
    // Only the row's candidates are read, and only the power of two that holds them
    // (and k) is sorted.
    const int n = rowCandidates ? int(min(ld, int64_t(rowCandidates[row]))) : int(ld);
    int sorted = 1;
    while (sorted < n || sorted < k) {
        sorted <<= 1;
    }
    sorted = min(sorted, len);
    for (int i = threadIdx.x; i < sorted; i += kMergeThreads) {
        keys[i] = i < n ? selectKey(d[i], i) : kSelectEmptyKey;
    }
    __syncthreads();
    bitonicSort<kMergeThreads>(keys, sorted);
    const int64_t* ids = candI + row * ld;
    for (int i = threadIdx.x; i < k; i += kMergeThreads) {
        const int p = selectKeyPosition(keys[i]);
        const int64_t id = p < 0 ? -1 : ids[p];
        outD[row * k + i] = finishKey(selectKeyValue(keys[i]), id, innerProduct);
        outI[row * k + i] = id;
    }
}

__global__ void finishKernel(float* D, const int64_t* I, int64_t count, bool innerProduct) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) {
        D[i] = finishKey(D[i], I[i], innerProduct);
    }
}

} // namespace

size_t ivfMergeFastSmemBytes(int64_t candidates) {
    int64_t len = 1;
    while (len < candidates) {
        len <<= 1;
    }
    return size_t(len) * sizeof(uint64_t);
}

void ivfMergeFast(
        const float* candD,
        const int64_t* candI,
        int64_t nrows,
        int64_t ld,
        const int* rowCandidates,
        int k,
        bool innerProduct,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            k >= 1 && k <= ld && ld <= (int64_t(1) << 28),
            "ivfMergeFast: k=%d with %lld candidates per row", k, (long long)ld);
    if (nrows == 0) {
        return;
    }
    const size_t smem = ivfMergeFastSmemBytes(ld);
    const int len = int(smem / sizeof(uint64_t));
    raiseDynamicSmemLimit(mergeFastKernel, smem);
    constexpr int64_t kMaxGrid = INT32_MAX;
    for (int64_t r0 = 0; r0 < nrows; r0 += kMaxGrid) {
        const int64_t m = nrows - r0 < kMaxGrid ? nrows - r0 : kMaxGrid;
        mergeFastKernel<<<unsigned(m), kMergeThreads, smem, stream>>>(
                candD, candI, ld, rowCandidates, len, k, innerProduct, outD, outI, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

void ivfFinish(float* D, const int64_t* I, int64_t count, bool innerProduct, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    constexpr int kThreads = 256;
    finishKernel<<<unsigned((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            D, I, count, innerProduct);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
