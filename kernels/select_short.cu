// selectRowsMin's short-row path: one block sorts a whole (row, segment) of at most
// kShortSelectMaxCols columns with cub::BlockRadixSort on the floats' ordered bits and
// keeps the first k. One launch and no merge; for the few rows of a small batch (the
// coarse search of an IVF query over a few thousand centroids) it replaces a warp per
// 1024 columns, their merge and the per-warp bitonic flushes.
#include <math_constants.h>
#include <cub/block/block_radix_sort.cuh>

#include "SelectRowsImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace rows {

namespace {

/// Above every candidate's key: +inf, NaN and padding are never taken.
constexpr uint32_t kNotTaken = 0xffffffffu;

/// orderedFloatBits inverted.
__device__ __forceinline__ float floatOfOrderedBits(uint32_t u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
        shortSelectRowsKernel(SelectRowsArgs a, int64_t segLen, int64_t rowOffset) {
    using Sort = cub::BlockRadixSort<uint32_t, kThreads, kItems, int>;
    __shared__ typename Sort::TempStorage storage;
    const int64_t row = rowOffset + blockIdx.y;
    const int64_t seg = blockIdx.x;
    const int64_t segStart = seg * segLen;
    const int segN = int(min(segLen, a.ncols - segStart));
    const BiasedRowLoader load = rowLoader(a, row, segStart);

    // Blocked order in, so the stable sort keeps equal values in column order.
    uint32_t keys[kItems];
    int cols[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const int c = threadIdx.x * kItems + j;
        const float v = c < segN ? load(c) : CUDART_INF_F;
        keys[j] = v < CUDART_INF_F ? orderedFloatBits(v) : kNotTaken;
        cols[j] = c;
    }
    Sort(storage).SortBlockedToStriped(keys, cols);

    // Rank j * kThreads + threadIdx.x. Every id is read before any result is written:
    // the output may alias the input ids.
    float outD[kItems];
    int64_t outI[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const int rank = j * kThreads + threadIdx.x;
        if (rank < a.k) {
            const bool taken = keys[j] != kNotTaken;
            outD[j] = taken ? floatOfOrderedBits(keys[j]) : CUDART_INF_F;
            outI[j] = !taken  ? -1
                    : a.inIds ? a.inIds[row * a.ldIds + segStart + cols[j]]
                              : a.idBase + segStart + cols[j];
        }
    }
    __syncthreads();
    float* dRow = a.outD + row * a.ldOut + seg * a.k;
    int64_t* iRow = a.outI + row * a.ldOut + seg * a.k;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const int rank = j * kThreads + threadIdx.x;
        if (rank < a.k) {
            dRow[rank] = outD[j];
            iRow[rank] = outI[j];
        }
    }
}

template <int kThreads, int kItems>
void launchShort(const SelectRowsArgs& a, int64_t segLen, int64_t nseg, cudaStream_t stream) {
    static_assert(kThreads * kItems >= kMaxSelectK, "every k fits the sorted keys");
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t r0 = 0; r0 < a.nrows; r0 += kMaxGridY) {
        const dim3 grid(unsigned(nseg), unsigned(std::min(kMaxGridY, a.nrows - r0)));
        shortSelectRowsKernel<kThreads, kItems><<<grid, kThreads, 0, stream>>>(a, segLen, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace

void launchShortSelectRows(
        const SelectRowsArgs& a,
        int64_t segLen,
        int64_t nseg,
        cudaStream_t stream) {
    static_assert(kShortSelectMaxCols == 1024 * 8, "the largest sort holds a whole segment");
    const int64_t cols = std::min(segLen, a.ncols);
    if (cols <= 2048) {
        launchShort<512, 4>(a, segLen, nseg, stream);
    } else if (cols <= 4096) {
        launchShort<1024, 4>(a, segLen, nseg, stream);
    } else {
        launchShort<1024, 8>(a, segLen, nseg, stream);
    }
}

} // namespace rows
} // namespace kernels
} // namespace faiss_ext
