// Row-wise k-selection over a matrix in device memory (with optional column bias): the
// block path (one block per (row, segment)) and the choice between it, the warp path
// (SelectRowsImpl.cuh, instantiated in select_rows_warp.cu) and the short-row path
// (select_short.cu).
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "Select.h"
#include "SelectRowsImpl.cuh"
#include "SmemLimit.cuh"
#include "WarpSelectDispatch.h"

namespace faiss_ext {
namespace kernels {

namespace {

using rows::rowLoader;
using rows::writeSegmentResults;

__global__ void __launch_bounds__(kSelectThreads)
        selectRowsKernel(SelectRowsArgs a, int64_t segLen, int64_t rowOffset) {
    extern __shared__ __align__(16) char smem[];
    const int64_t row = rowOffset + blockIdx.y;
    const int64_t segStart = int64_t(blockIdx.x) * segLen;
    const int64_t segN = rows::segmentColumns(a, row, segStart, segLen);

    BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
    blockSelectMin<kSelectThreads, kSelectItems>(
            s, segN, rowLoader(a, row, segStart), a.sortedPrefix);

    writeSegmentResults<true>(
            a, s, row, int64_t(blockIdx.x), segStart, threadIdx.x, kSelectThreads);
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
    FAISS_THROW_IF_NOT_FMT(
            a.sortedPrefix >= 0 && a.sortedPrefix <= a.k && (a.sortedPrefix == 0 || nseg == 1),
            "selectRowsMin: a sorted prefix of %lld columns needs one segment and at most k=%d",
            (long long)a.sortedPrefix, a.k);
    const int64_t cols = std::min(segLen, a.ncols);
    SelectPath path = a.path;
    if (path == SelectPath::kAuto) {
        path = cols <= kShortSelectMaxCols && a.nrows * nseg <= kShortSelectMaxBlocks
                ? SelectPath::kShort
                : nextPow2(a.k) <= kMaxWarpRowSelectK ? SelectPath::kWarp
                                                      : SelectPath::kBlock;
    }
    switch (path) {
        case SelectPath::kShort:
            FAISS_THROW_IF_NOT_FMT(
                    cols <= kShortSelectMaxCols,
                    "the short-row selection takes segments of at most %lld columns (%lld)",
                    (long long)kShortSelectMaxCols, (long long)cols);
            rows::launchShortSelectRows(a, segLen, nseg, stream);
            return;
        case SelectPath::kWarp:
            FAISS_THROW_IF_NOT_FMT(
                    nextPow2(a.k) <= kMaxWarpRowSelectK, "the warp selection takes k <= %d (k=%d)",
                    kMaxWarpRowSelectK, a.k);
            dispatchWarpSelectCapacity(a.k, [&](auto kp) {
                rows::launchWarpSelectRows<decltype(kp)::value>(a, segLen, nseg, stream);
            });
            return;
        case SelectPath::kBlock:
        case SelectPath::kAuto:
            break;
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
