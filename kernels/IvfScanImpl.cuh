// Device code of the IVF list scan (IvfScan.h) shared by its kernels: where a candidate
// slot lies, the loaders of a chunk, and the list-major path's warp kernel (one warp per
// (query, window of its row of precomputed distances)). ivf_scan.cu holds the block kernels and
// the dispatch; ivf_scan_warp.cu instantiates the warp launcher once per selection
// capacity (declared extern below): kKp <= kMaxWarpRegisterSelectK selects in registers
// (WarpSelect.cuh), kKp == kMaxWarpSelectK in shared memory for any larger k
// (WarpSelectSmem.cuh).
#pragma once

#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "IvfScan.h"
#include "LastAtMost.cuh"
#include "Select.h"
#include "SmemLimit.cuh"
#include "WarpSelect.cuh"
#include "WarpSelectSmem.cuh"

namespace faiss_ext {
namespace kernels {
namespace scan {

/// Precomputed distances of one chunk (list-major path).
struct BufferLoader {
    const float* row; ///< the chunk's first distance
    __device__ float operator()(int64_t pos) const {
        return row[pos];
    }
};

/// A loader whose positions the id filter may remove (+inf, never selected); with
/// allow null it is the inner loader (a warp-uniform branch).
template <typename Inner>
struct FilteredLoader {
    Inner inner;
    const uint32_t* allow;
    int64_t slot0; ///< the filter bit of position 0
    __device__ float operator()(int64_t pos) const {
        if (allow && !idFilterAllows(allow, slot0 + pos)) {
            return CUDART_INF_F;
        }
        return inner(pos);
    }
};

/// Where candidate slot `slot` of query q lies: its probe, list, first vector and
/// length; slot beyond the query's chunks has n = -1.
struct ScanSlot {
    int probe;
    int64_t list;
    int64_t start;
    int64_t n;
};

__device__ inline ScanSlot resolveSlot(const IvfScanArgs& a, int64_t q, int64_t slot) {
    const int* off = a.offsets + q * (a.nprobe + 1);
    ScanSlot s{0, -1, 0, -1};
    if (slot >= off[a.nprobe]) {
        return s;
    }
    // The probe holding this slot (empty probes repeat an offset: the last one owns it).
    const int lo = lastAtMost(off, a.nprobe, slot);
    s.probe = lo;
    s.list = a.coarse[q * a.nprobe + lo];
    s.start = (slot - off[lo]) * a.chunkLen;
    s.n = min(a.chunkLen, a.listLen[s.list] - s.start);
    return s;
}

template <typename Inner>
__device__ inline FilteredLoader<Inner> filtered(
        const IvfScanArgs& a,
        const ScanSlot& s,
        Inner inner) {
    return FilteredLoader<Inner>{
            inner, a.allow, a.allow ? a.listBitBase[s.list] + s.start : int64_t(0)};
}

/// List-major path: candidate slot `slot` of query q is the window of chunkLen columns
/// of its distance row starting at `start` (the row holds every probed list's vectors,
/// probe after probe); n = -1 past the row's end.
struct RowWindow {
    int64_t start;
    int64_t n;
};

__device__ inline RowWindow resolveWindow(const IvfScanArgs& a, int64_t q, int64_t slot) {
    const int64_t total = a.vectorOffsets[q * (a.nprobe + 1) + a.nprobe];
    const int64_t start = slot * a.chunkLen;
    return RowWindow{start, start < total ? min(a.chunkLen, total - start) : int64_t(-1)};
}

/// The stored id of column col of query q's distance row.
__device__ inline int64_t rowId(const IvfScanArgs& a, int64_t q, int64_t col) {
    const int* off = a.vectorOffsets + q * (a.nprobe + 1);
    // Empty probes repeat an offset: the last one of a run owns what follows.
    const int p = lastAtMost(off, a.nprobe, col);
    return a.listIds[a.coarse[q * a.nprobe + p]][col - off[p]];
}

constexpr int kWarpScanWarps = kSelectThreads / 32;

/// An empty candidate slot: k missing results (+inf, -1), written by threads first,
/// first + stride, ...
__device__ inline void writeEmptySlot(float* outD, int64_t* outI, int k, int first, int stride) {
    for (int i = first; i < k; i += stride) {
        outD[i] = CUDART_INF_F;
        outI[i] = -1;
    }
}

/// Writes one warp's selection (sorted keys, positions into the window) with their ids.
template <typename Select>
__device__ void writeWarpScanResults(
        const Select& sel,
        const IvfScanArgs& a,
        int64_t q,
        const RowWindow& win,
        int lane,
        float* outD,
        int64_t* outI) {
    for (int i = lane; i < a.k; i += 32) {
        const int p = sel.position(i);
        outD[i] = sel.value(i);
        outI[i] = p < 0 ? -1 : rowId(a, q, win.start + p);
    }
}

// One warp per (query, window of its distance row).
template <int kKp>
__global__ void __launch_bounds__(kSelectThreads)
        warpScanKernel(IvfScanArgs a, int64_t queryOffset, int64_t nq) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int64_t w = int64_t(blockIdx.x) * kWarpScanWarps + warp;
    if (w >= nq * a.chunksPerQuery) {
        return;
    }
    const int64_t q = queryOffset + w / a.chunksPerQuery;
    const int64_t slot = w % a.chunksPerQuery;
    float* outD = a.candD + q * (a.chunksPerQuery * a.k) + slot * a.k;
    int64_t* outI = a.candI + q * (a.chunksPerQuery * a.k) + slot * a.k;

    const RowWindow win = resolveWindow(a, q, slot);
    if (win.n < 0) {
        writeEmptySlot(outD, outI, a.k, lane, 32);
        return;
    }
    // The product left +inf where the id filter removes a vector.
    const BufferLoader load{a.distances + q * a.ldDistances + win.start};
    if constexpr (kKp <= kMaxWarpRegisterSelectK) {
        WarpSelect<kKp> sel(a.k);
        sel.run(win.n, load);
        writeWarpScanResults(sel, a, q, win, lane, outD, outI);
    } else {
        extern __shared__ __align__(16) uint64_t warpSmem[];
        WarpSelectSmem sel(warpSmem + warp * warpSelectSlots(a.k), a.k);
        sel.run(win.n, load);
        writeWarpScanResults(sel, a, q, win, lane, outD, outI);
    }
}

/// The warp path with capacity kKp (arguments checked by ivfScan): nextPow2(a.k) == kKp
/// for kKp <= kMaxWarpRegisterSelectK, else kKp == kMaxWarpSelectK and the shared-memory
/// selection for any nextPow2(a.k) <= kKp.
template <int kKp>
void launchWarpScan(const IvfScanArgs& a, cudaStream_t stream) {
    size_t smem = 0;
    if constexpr (kKp > kMaxWarpRegisterSelectK) {
        smem = size_t(kWarpScanWarps) * warpSelectSlots(a.k) * sizeof(uint64_t);
        raiseDynamicSmemLimit(warpScanKernel<kKp>, smem);
    }
    const int64_t maxQueries = std::max<int64_t>(1, (int64_t(1) << 30) / a.chunksPerQuery);
    for (int64_t q0 = 0; q0 < a.nq; q0 += maxQueries) {
        const int64_t nq = std::min(maxQueries, a.nq - q0);
        const int64_t warps = nq * a.chunksPerQuery;
        warpScanKernel<kKp>
                <<<unsigned((warps + kWarpScanWarps - 1) / kWarpScanWarps), kSelectThreads, smem,
                   stream>>>(a, q0, nq);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

extern template void launchWarpScan<1>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<2>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<4>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<8>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<16>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<32>(const IvfScanArgs&, cudaStream_t);
extern template void launchWarpScan<kMaxWarpSelectK>(const IvfScanArgs&, cudaStream_t);

} // namespace scan
} // namespace kernels
} // namespace faiss_ext
