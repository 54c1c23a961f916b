// Row-wise k-selection over a matrix in device memory (with optional column bias).
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

namespace {

struct BiasedRowLoader {
    const float* row;
    const float* bias;
    __device__ float operator()(int64_t i) const {
        return bias ? row[i] + bias[i] : row[i];
    }
};

__global__ void __launch_bounds__(kSelectThreads)
        selectRowsKernel(SelectRowsArgs a, int64_t segLen, int64_t rowOffset) {
    extern __shared__ __align__(16) char smem[];
    const int64_t row = rowOffset + blockIdx.y;
    const int64_t segStart = int64_t(blockIdx.x) * segLen;
    const int64_t segN = min(segLen, a.ncols - segStart);

    BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
    BiasedRowLoader load{
            a.dist + row * a.ldDist + segStart,
            a.colBias ? a.colBias + segStart : nullptr};
    blockSelectMin<kSelectThreads, kSelectItems>(s, segN, load);

    // Gather every result before writing any: the output may alias the input ids.
    float outD[kSelectOutPerThread];
    int64_t outI[kSelectOutPerThread];
#pragma unroll
    for (int j = 0; j < kSelectOutPerThread; ++j) {
        int i = threadIdx.x + j * kSelectThreads;
        if (i < a.k) {
            int p = s.position(i);
            outD[j] = s.value(i);
            outI[j] = p < 0 ? -1
                    : a.inIds ? a.inIds[row * a.ldIds + segStart + p]
                              : a.idBase + segStart + p;
        }
    }
    __syncthreads();
    float* dRow = a.outD + row * a.ldOut + int64_t(blockIdx.x) * a.k;
    int64_t* iRow = a.outI + row * a.ldOut + int64_t(blockIdx.x) * a.k;
#pragma unroll
    for (int j = 0; j < kSelectOutPerThread; ++j) {
        int i = threadIdx.x + j * kSelectThreads;
        if (i < a.k) {
            dRow[i] = outD[j];
            iRow[i] = outI[j];
        }
    }
}

} // namespace

size_t blockSelectSmemBytes(int k) {
    size_t slots = size_t(nextPow2(k)) + size_t(selectBufferCapacity(k));
    return slots * sizeof(uint64_t) + sizeof(int);
}

void selectRowsMin(const SelectRowsArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kMaxSelectK,
            "k=%d is outside [1, %d]",
            a.k,
            kMaxSelectK);
    if (a.nrows == 0 || a.ncols == 0) {
        return;
    }
    const int64_t segLen = a.segLen > 0 ? a.segLen : a.ncols;
    const int64_t nseg = (a.ncols + segLen - 1) / segLen;
    FAISS_THROW_IF_NOT_FMT(
            nseg <= INT32_MAX, "%lld segments per row is too many", (long long)nseg);
    const size_t smem = blockSelectSmemBytes(a.k);
    if (smem > 48 * 1024) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                selectRowsKernel,
                cudaFuncAttributeMaxDynamicSharedMemorySize,
                int(smem)));
    }
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t r0 = 0; r0 < a.nrows; r0 += kMaxGridY) {
        dim3 grid(unsigned(nseg), unsigned(std::min(kMaxGridY, a.nrows - r0)));
        selectRowsKernel<<<grid, kSelectThreads, smem, stream>>>(a, segLen, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace kernels
} // namespace faiss_ext
