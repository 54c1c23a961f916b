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

/// One (query, candidate slot) of the work list (IvfSlotList::items).
struct WorkItem {
    int64_t query;
    int64_t slot;
};

__device__ inline WorkItem decodeItem(int64_t packed) {
    return WorkItem{packed >> 32, packed & 0xffffffff};
}

/// Work item w of the list (w < *slotCount).
__device__ inline WorkItem workItem(const IvfScanArgs& a, int w) {
    return decodeItem(a.slotItems[w]);
}

/// Where a slot's k candidates go.
__device__ inline float* slotKeys(const IvfScanArgs& a, const WorkItem& it) {
    return a.candD + it.query * (a.chunksPerQuery * a.k) + it.slot * a.k;
}
__device__ inline int64_t* slotIds(const IvfScanArgs& a, const WorkItem& it) {
    return a.candI + it.query * (a.chunksPerQuery * a.k) + it.slot * a.k;
}

/// Runs body(item, keys, ids) for this block's work items (w = blockIdx.x, + gridDim.x,
/// ...; keys and ids: where the item's k candidates go), every thread of the block, with
/// a barrier before each item (the previous one's reads of shared memory are done).
template <typename Body>
__device__ void forBlockItems(const IvfScanArgs& a, Body&& body) {
    const int items = *a.slotCount;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
        __syncthreads();
        const WorkItem item = workItem(a, w);
        body(item, slotKeys(a, item), slotIds(a, item));
    }
}

/// Blocks (or warps) a scan launches: twice the expected items, at least `perSm` per SM
/// (a full device), never more than the work list can hold. Worker w runs items w, w +
/// workers, ...: with more workers than items each runs at most one and the hardware
/// spreads them over the SMs as they finish (a persistent grid striding over the items
/// left the late-starting blocks a whole share each: per-query batch 10000 1.5x slower;
/// one shared counter cost an atomic round trip a work item).
inline int64_t workersFor(const IvfScanArgs& a, int64_t perSm) {
    const int64_t wanted = std::max(2 * a.expectedItems, perSm * std::max(a.smCount, 1));
    return std::max<int64_t>(1, std::min(a.nq * a.chunksPerQuery, wanted));
}

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

// One warp per (query, window of its distance row) of the work list.
template <int kKp>
__global__ void __launch_bounds__(kSelectThreads) warpScanKernel(IvfScanArgs a) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int items = *a.slotCount;
    const int workers = int(gridDim.x) * kWarpScanWarps;
    for (int w = int(blockIdx.x) * kWarpScanWarps + warp; w < items; w += workers) {
        const WorkItem it = workItem(a, w);
        float* outD = slotKeys(a, it);
        int64_t* outI = slotIds(a, it);
        const RowWindow win = resolveWindow(a, it.query, it.slot);
        if (win.n < 0) {
            writeEmptySlot(outD, outI, a.k, lane, 32);
            continue;
        }
        // The product left +inf where the id filter removes a vector.
        const BufferLoader load{a.distances + it.query * a.ldDistances + win.start};
        if constexpr (kKp <= kMaxWarpRegisterSelectK) {
            WarpSelect<kKp> sel(a.k);
            sel.run(win.n, load);
            writeWarpScanResults(sel, a, it.query, win, lane, outD, outI);
        } else {
            extern __shared__ __align__(16) uint64_t warpSmem[];
            WarpSelectSmem sel(warpSmem + warp * warpSelectSlots(a.k), a.k);
            sel.run(win.n, load);
            writeWarpScanResults(sel, a, it.query, win, lane, outD, outI);
            __syncwarp(); // the next item's selection reuses the warp's shared memory
        }
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
    // Up to 64 warps an SM (2048 threads).
    const int64_t warps = workersFor(a, 64);
    warpScanKernel<kKp>
            <<<unsigned((warps + kWarpScanWarps - 1) / kWarpScanWarps), kSelectThreads, smem,
               stream>>>(a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
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
