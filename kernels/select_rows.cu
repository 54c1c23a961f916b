// Row-wise k-selection over a matrix in device memory (with optional column bias).
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "Select.h"
#include "SmemLimit.cuh"
#include "WarpSelect.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

struct BiasedRowLoader {
    const float* row;
    const float* bias;
    const uint32_t* allow; ///< null: no filter
    int64_t slot0;         ///< bit of column 0 of this segment
    __device__ float operator()(int64_t i) const {
        if (allow && !idFilterAllows(allow, slot0 + i)) {
            return CUDART_INF_F;
        }
        return bias ? row[i] + bias[i] : row[i];
    }
};

__device__ inline BiasedRowLoader rowLoader(
        const SelectRowsArgs& a,
        int64_t row,
        int64_t segStart) {
    return BiasedRowLoader{
            a.dist + row * a.ldDist + segStart, a.colBias ? a.colBias + segStart : nullptr, a.allow,
            a.idBase + segStart};
}

constexpr int kWarpRowThreads = 256;
constexpr int kWarpRowWarps = kWarpRowThreads / 32;

/// Writes the k results of one (row, segment) selection: ids from inIds or idBase.
/// Every result is gathered before any is written: the output may alias the input ids.
template <bool kWholeBlock, typename Top>
__device__ void writeSegmentResults(
        const SelectRowsArgs& a,
        const Top& top,
        int64_t row,
        int64_t seg,
        int64_t segStart,
        int lane,
        int stride) {
    float outD[kSelectOutPerThread];
    int64_t outI[kSelectOutPerThread];
    const int per = (a.k + stride - 1) / stride;
#pragma unroll
    for (int j = 0; j < kSelectOutPerThread; ++j) {
        const int i = lane + j * stride;
        if (j < per && i < a.k) {
            const int p = top.position(i);
            outD[j] = top.value(i);
            outI[j] = p < 0   ? -1
                    : a.inIds ? a.inIds[row * a.ldIds + segStart + p]
                              : a.idBase + segStart + p;
        }
    }
    if (kWholeBlock) {
        __syncthreads();
    } else {
        __syncwarp();
    }
    float* dRow = a.outD + row * a.ldOut + seg * a.k;
    int64_t* iRow = a.outI + row * a.ldOut + seg * a.k;
#pragma unroll
    for (int j = 0; j < kSelectOutPerThread; ++j) {
        const int i = lane + j * stride;
        if (j < per && i < a.k) {
            dRow[i] = outD[j];
            iRow[i] = outI[j];
        }
    }
}

__global__ void __launch_bounds__(kSelectThreads)
        selectRowsKernel(SelectRowsArgs a, int64_t segLen, int64_t rowOffset) {
    extern __shared__ __align__(16) char smem[];
    const int64_t row = rowOffset + blockIdx.y;
    const int64_t segStart = int64_t(blockIdx.x) * segLen;
    const int64_t segN = min(segLen, a.ncols - segStart);

    BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
    blockSelectMin<kSelectThreads, kSelectItems>(s, segN, rowLoader(a, row, segStart));

    writeSegmentResults<true>(
            a, s, row, int64_t(blockIdx.x), segStart, threadIdx.x, kSelectThreads);
}

// One warp per (row, segment): no block barrier, so short segments are cheap.
__global__ void __launch_bounds__(kWarpRowThreads) warpSelectRowsKernel(
        SelectRowsArgs a,
        int64_t segLen,
        int64_t nseg,
        int64_t rowOffset,
        int64_t nrows) {
    extern __shared__ __align__(16) uint64_t warpSmem[];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int64_t w = int64_t(blockIdx.x) * kWarpRowWarps + warp;
    if (w >= nrows * nseg) {
        return;
    }
    const int64_t row = rowOffset + w / nseg;
    const int64_t seg = w % nseg;
    const int64_t segStart = seg * segLen;
    const int64_t segN = min(segLen, a.ncols - segStart);

    WarpSelect sel(warpSmem + warp * warpSelectSlots(a.k), a.k);
    sel.run(segN, rowLoader(a, row, segStart));
    writeSegmentResults<false>(a, sel, row, seg, segStart, lane, 32);
}

} // namespace

size_t blockSelectSmemBytes(int k) {
    size_t slots = size_t(nextPow2(k)) + size_t(selectBufferCapacity(k));
    return slots * sizeof(uint64_t) + sizeof(int);
}

void selectRowsMin(const SelectRowsArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kMaxSelectK, "k=%d is outside [1, %d]", a.k, kMaxSelectK);
    FAISS_ASSERT(a.allow == nullptr || a.inIds == nullptr);
    if (a.nrows == 0 || a.ncols == 0) {
        return;
    }
    const int64_t segLen = a.segLen > 0 ? a.segLen : a.ncols;
    const int64_t nseg = (a.ncols + segLen - 1) / segLen;
    FAISS_THROW_IF_NOT_FMT(nseg <= INT32_MAX, "%lld segments per row is too many", (long long)nseg);
    if (nextPow2(a.k) <= kMaxWarpRowSelectK) {
        const size_t smem = size_t(kWarpRowWarps) * warpSelectSlots(a.k) * sizeof(uint64_t);
        raiseDynamicSmemLimit(warpSelectRowsKernel, smem);
        // Rows per launch such that the grid's x dimension stays below 2^31.
        const int64_t maxRows = std::max<int64_t>(1, (int64_t(1) << 30) / nseg);
        for (int64_t r0 = 0; r0 < a.nrows; r0 += maxRows) {
            const int64_t rows = std::min(maxRows, a.nrows - r0);
            const int64_t warps = rows * nseg;
            warpSelectRowsKernel<<<
                    unsigned((warps + kWarpRowWarps - 1) / kWarpRowWarps), kWarpRowThreads, smem,
                    stream>>>(a, segLen, nseg, r0, rows);
            FAISS_EXT_CUDA_CHECK_LAUNCH();
        }
        return;
    }
    const size_t smem = blockSelectSmemBytes(a.k);
    raiseDynamicSmemLimit(selectRowsKernel, smem);
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t r0 = 0; r0 < a.nrows; r0 += kMaxGridY) {
        dim3 grid(unsigned(nseg), unsigned(std::min(kMaxGridY, a.nrows - r0)));
        selectRowsKernel<<<grid, kSelectThreads, smem, stream>>>(a, segLen, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace kernels
} // namespace faiss_ext
