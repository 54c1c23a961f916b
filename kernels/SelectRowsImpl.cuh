// Device code of selectRowsMin (Select.h) shared by its two paths: the loader of one
// (row, segment), the writing of its k results, and the warp path (one warp per (row,
// segment), register selection, nextPow2(k) <= kMaxWarpRowSelectK). select_rows.cu
// holds the block path and the dispatch; select_rows_warp.cu instantiates the warp
// launcher once per capacity (declared extern below).
#pragma once

#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "Select.h"
#include "WarpSelect.cuh"

namespace faiss_ext {
namespace kernels {
namespace rows {

/// A value at or above the row's bound (SelectRowsArgs::rowBound), or NaN, as +inf: not
/// a candidate on any path.
__device__ __forceinline__ float belowBound(float v, float bound) {
    return v < bound ? v : CUDART_INF_F;
}

struct BiasedRowLoader {
    const float* row;
    const float* bias;
    const uint32_t* allow; ///< null: no filter
    int64_t slot0;         ///< bit of column 0 of this segment
    float bound;           ///< +inf: none
    __device__ float operator()(int64_t i) const {
        if (allow && !idFilterAllows(allow, slot0 + i)) {
            return CUDART_INF_F;
        }
        return belowBound(bias ? row[i] + bias[i] : row[i], bound);
    }
};

/// BiasedRowLoader without the id filter, the bias resolved at compile time: no branch
/// between the loads of a step, so a warp's loads of a run are all in flight together (a
/// branch per value held each value's loads to themselves: the coarse top-1 over 67 MB
/// of distances read 1.0 TB/s, benchs/NOTES.md).
/// quad(i): positions 4 i .. 4 i + 3 as one float4, for rows (and bias) 16-byte aligned.
template <bool kBias>
struct RowLoader {
    const float* row;
    const float* bias;
    float bound;
    __device__ float operator()(int64_t i) const {
        return belowBound(kBias ? row[i] + bias[i] : row[i], bound);
    }
    __device__ float4 quad(int64_t i) const {
        float4 v = reinterpret_cast<const float4*>(row)[i];
        if (kBias) {
            const float4 b = reinterpret_cast<const float4*>(bias)[i];
            v.x += b.x;
            v.y += b.y;
            v.z += b.z;
            v.w += b.w;
        }
        return make_float4(
                belowBound(v.x, bound), belowBound(v.y, bound), belowBound(v.z, bound),
                belowBound(v.w, bound));
    }
};

__device__ inline BiasedRowLoader rowLoader(
        const SelectRowsArgs& a,
        int64_t row,
        int64_t segStart) {
    return BiasedRowLoader{
            a.dist + row * a.ldDist + segStart, a.colBias ? a.colBias + segStart : nullptr, a.allow,
            a.idBase + segStart, a.rowBound ? a.rowBound[row * a.ldRowBound] : CUDART_INF_F};
}

/// Columns of segment [segStart, segStart + segLen) of row `row` that hold candidates:
/// the row's first rowCols[row] (or ncols) columns, possibly none.
__device__ inline int64_t segmentColumns(
        const SelectRowsArgs& a,
        int64_t row,
        int64_t segStart,
        int64_t segLen) {
    const int64_t cols = a.rowCols ? min(a.ncols, int64_t(a.rowCols[row])) : a.ncols;
    return max(int64_t(0), min(segLen, cols - segStart));
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

// One warp per (row, segment): no block barrier and no shared memory, so short segments
// are cheap. Lane i < k writes result i.
template <int kKp>
__global__ void __launch_bounds__(kWarpRowThreads) warpSelectRowsKernel(
        SelectRowsArgs a,
        int64_t segLen,
        int64_t nseg,
        int64_t rowOffset,
        int64_t nrows) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int64_t w = int64_t(blockIdx.x) * kWarpRowWarps + warp;
    if (w >= nrows * nseg) {
        return;
    }
    const int64_t row = rowOffset + w / nseg;
    const int64_t seg = w % nseg;
    const int64_t segStart = seg * segLen;
    const int64_t segN = segmentColumns(a, row, segStart, segLen);

    WarpSelect<kKp> sel(a.k);
    const BiasedRowLoader load = rowLoader(a, row, segStart);
    const bool quads =
            (reinterpret_cast<uintptr_t>(load.row) | reinterpret_cast<uintptr_t>(load.bias)) %
                    sizeof(float4) ==
            0;
    if (load.allow) {
        sel.run(segN, load);
    } else if (load.bias) {
        const RowLoader<true> rows{load.row, load.bias, load.bound};
        if (quads) {
            sel.runQuads(segN, rows);
        } else {
            sel.run(segN, rows);
        }
    } else {
        const RowLoader<false> rows{load.row, nullptr, load.bound};
        if (quads) {
            sel.runQuads(segN, rows);
        } else {
            sel.run(segN, rows);
        }
    }
    writeSegmentResults<false>(a, sel, row, seg, segStart, lane, 32);
}

/// The warp path for nextPow2(a.k) == kKp (arguments checked by selectRowsMin).
template <int kKp>
void launchWarpSelectRows(
        const SelectRowsArgs& a,
        int64_t segLen,
        int64_t nseg,
        cudaStream_t stream) {
    // Rows per launch such that the grid's x dimension stays below 2^31.
    const int64_t maxRows = std::max<int64_t>(1, (int64_t(1) << 30) / nseg);
    for (int64_t r0 = 0; r0 < a.nrows; r0 += maxRows) {
        const int64_t rows = std::min(maxRows, a.nrows - r0);
        const int64_t warps = rows * nseg;
        warpSelectRowsKernel<kKp>
                <<<unsigned((warps + kWarpRowWarps - 1) / kWarpRowWarps), kWarpRowThreads, 0,
                   stream>>>(a, segLen, nseg, r0, rows);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

/// The short-row path: one block sorts each (row, segment) of at most
/// kShortSelectMaxCols columns (select_short.cu).
void launchShortSelectRows(
        const SelectRowsArgs& a,
        int64_t segLen,
        int64_t nseg,
        cudaStream_t stream);

extern template void launchWarpSelectRows<1>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
extern template void launchWarpSelectRows<2>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
extern template void launchWarpSelectRows<4>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
extern template void launchWarpSelectRows<8>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
extern template void launchWarpSelectRows<16>(
        const SelectRowsArgs&,
        int64_t,
        int64_t,
        cudaStream_t);
extern template void launchWarpSelectRows<32>(
        const SelectRowsArgs&,
        int64_t,
        int64_t,
        cudaStream_t);

} // namespace rows
} // namespace kernels
} // namespace faiss_ext
