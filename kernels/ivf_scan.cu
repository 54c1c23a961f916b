// The list scan stage's selection. Per-query path: one block per (query, chunk of a
// probed list); the query sits in shared memory, each thread computes whole distances
// from the interleaved layout (a warp reads 32 consecutive vectors' float4 group in one
// 512-byte transaction) and feeds them to the block-wide streaming top-k; or for
// k <= 32 and enough work one warp per (query, chunk) (IvfQueryWarpScan.cuh). List-major
// path: the same slots read the distances ivf_list_major.cu precomputed, one warp per
// slot for k <= kMaxWarpSelectK (IvfScanImpl.cuh, instantiated in ivf_scan_warp.cu),
// else one block.
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IvfListLoader.cuh"
#include "IvfQueryWarpScan.cuh"
#include "IvfScan.h"
#include "IvfScanImpl.cuh"
#include "IvfStore.h"
#include "Select.h"
#include "SmemLimit.cuh"
#include "WarpSelectDispatch.h"

namespace faiss_ext {
namespace kernels {

namespace {

using scan::BufferLoader;
using scan::filtered;
using scan::forBlockItems;
using scan::resolveSlot;
using scan::resolveWindow;
using scan::rowId;
using scan::RowWindow;
using scan::ScanSlot;
using scan::WorkItem;
using scan::writeEmptySlot;

constexpr int kOffsetThreads = 256; // 8 warps, one query each
constexpr int kOffsetWarps = kOffsetThreads / 32;
// Scan blocks of kSelectThreads an SM holds at most (2048 threads).
constexpr int kMaxResidentBlocksPerSm = 8;

// One warp per query: a running prefix sum over the probes, 32 at a time; then the
// block's queries' slots appended to the work list, one atomic a block.
__global__ void __launch_bounds__(kOffsetThreads) chunkOffsetsKernel(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        const int64_t* listLen,
        int64_t chunkLen,
        int* offsets,
        IvfSlotList slots) {
    __shared__ int warpFirst[kOffsetWarps];
    __shared__ int blockFirst;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int64_t q = int64_t(blockIdx.x) * kOffsetWarps + warp;
    int count = 0;
    if (q < nq) {
        int* out = offsets + q * (nprobe + 1);
        int running = 0;
        for (int p0 = 0; p0 < nprobe; p0 += 32) {
            const int p = p0 + lane;
            int chunks = 0;
            if (p < nprobe) {
                const int64_t list = coarse[q * nprobe + p];
                if (list >= 0) {
                    chunks = int((listLen[list] + chunkLen - 1) / chunkLen);
                }
            }
            int incl = chunks;
            for (int off = 1; off < 32; off <<= 1) {
                int v = __shfl_up_sync(0xffffffffu, incl, off);
                if (lane >= off) {
                    incl += v;
                }
            }
            if (p < nprobe) {
                out[p] = running + incl - chunks;
            }
            running += __shfl_sync(0xffffffffu, incl, 31);
        }
        const int64_t counted =
                slots.window > 0 ? (running + slots.window - 1) / slots.window : running;
        count = int(max(counted, int64_t(1)));
        if (lane == 0) {
            out[nprobe] = running;
            slots.rowCandidates[q] = count * slots.k;
            warpFirst[warp] = count;
        }
    } else if (lane == 0) {
        warpFirst[warp] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < kOffsetWarps; ++w) {
            const int c = warpFirst[w];
            warpFirst[w] = total;
            total += c;
        }
        blockFirst = atomicAdd(slots.count, total);
    }
    __syncthreads();
    const int first = blockFirst + warpFirst[warp];
    for (int i = lane; i < count; i += 32) {
        slots.items[first + i] = (q << 32) | i;
    }
}

/// One block per (query, window of its row of precomputed distances) of the work list:
/// the list-major path for k above the warp selections'.
__global__ void __launch_bounds__(kSelectThreads) windowScanKernel(IvfScanArgs a) {
    extern __shared__ __align__(16) char smem[];
    forBlockItems(a, [&](const WorkItem& item, float* outD, int64_t* outI) {
        const int64_t q = item.query;
        const RowWindow win = resolveWindow(a, q, item.slot);
        if (win.n < 0) {
            writeEmptySlot(outD, outI, a.k, threadIdx.x, kSelectThreads);
            return;
        }
        BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
        blockSelectMin<kSelectThreads, kSelectItems>(
                s, win.n, BufferLoader{a.distances + q * a.ldDistances + win.start});
        for (int i = threadIdx.x; i < a.k; i += kSelectThreads) {
            const int p = s.position(i);
            outD[i] = s.value(i);
            outI[i] = p < 0 ? -1 : rowId(a, q, win.start + p);
        }
    });
}

/// kSource: 0 computes L2 from the lists, 1 inner product.
template <int kSource>
__global__ void __launch_bounds__(kSelectThreads) scanKernel(IvfScanArgs a, size_t selectBytes) {
    extern __shared__ __align__(16) char smem[];
    forBlockItems(a, [&](const WorkItem& item, float* outD, int64_t* outI) {
        const int64_t q = item.query;
        const ScanSlot ss = resolveSlot(a, q, item.slot);
        if (ss.n < 0) {
            writeEmptySlot(outD, outI, a.k, threadIdx.x, kSelectThreads);
            return;
        }
        // blockSelectMin's first barrier orders the query writes before any load.
        BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
        const int groups = ivfPaddedDim(a.d) / 4;
        float4* query = reinterpret_cast<float4*>(smem + selectBytes);
        const float* qsrc = a.queries + q * a.d;
        for (int j = threadIdx.x; j < 4 * groups; j += kSelectThreads) {
            reinterpret_cast<float*>(query)[j] = j < a.d ? qsrc[j] : 0.f;
        }
        ListLoader<kSource == 1> load{
                reinterpret_cast<const float4*>(a.listData[ss.list]), query, ss.start, groups};
        blockSelectMin<kSelectThreads, kSelectItems>(s, ss.n, filtered(a, ss, load));

        const int64_t* ids = a.listIds[ss.list] + ss.start;
        for (int i = threadIdx.x; i < a.k; i += kSelectThreads) {
            const int p = s.position(i);
            outD[i] = s.value(i);
            outI[i] = p < 0 ? -1 : ids[p];
        }
    });
}

size_t selectBytesAligned(int k) {
    return (blockSelectSmemBytes(k) + 15) / 16 * 16;
}

} // namespace

size_t ivfScanSmemBytes(int d, int k) {
    return selectBytesAligned(k) + size_t(ivfPaddedDim(d)) * sizeof(float);
}

size_t ivfQueryWarpScanSmemBytes(int d) {
    return size_t(scan::kWarpScanWarps) * ivfPaddedDim(d) * sizeof(float);
}

IvfQueryScanKernel ivfQueryScanKernel(const IvfScanArgs& a) {
    const bool warpSelects = nextPow2(a.k) <= kMaxWarpRegisterSelectK;
    switch (a.queryKernel) {
        case IvfQueryScanKernel::kAuto:
            return warpSelects && a.nq * a.nprobe >= kQueryWarpScanMinProbes &&
                            a.chunkLen <= kQueryWarpScanMaxChunk &&
                            ivfQueryWarpScanSmemBytes(a.d) <= kQueryWarpScanMaxSmem
                    ? IvfQueryScanKernel::kWarp
                    : IvfQueryScanKernel::kBlock;
        case IvfQueryScanKernel::kBlock:
            return IvfQueryScanKernel::kBlock;
        case IvfQueryScanKernel::kWarp:
            FAISS_THROW_IF_NOT_FMT(
                    warpSelects,
                    "ivfScan: the per-query warp kernel selects at most k=%d in registers; "
                    "k=%d",
                    kMaxWarpRegisterSelectK, a.k);
            return IvfQueryScanKernel::kWarp;
    }
    FAISS_THROW_FMT("queryKernel=%d is not an IvfQueryScanKernel", int(a.queryKernel));
}

void ivfChunkOffsets(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        const int64_t* listLen,
        int64_t chunkLen,
        int* offsets,
        const IvfSlotList& slots,
        cudaStream_t stream) {
    if (nq == 0) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(slots.count, 0, sizeof(int), stream));
    chunkOffsetsKernel<<<
            unsigned((nq + kOffsetWarps - 1) / kOffsetWarps), kOffsetThreads, 0, stream>>>(
            coarse, nq, nprobe, listLen, chunkLen, offsets, slots);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void ivfScan(const IvfScanArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kMaxSelectK, "ivfScan: k=%d is outside [1, %d]", a.k, kMaxSelectK);
    FAISS_THROW_IF_NOT_FMT(
            a.chunkLen >= 32 && a.chunkLen % 32 == 0 && a.chunkLen <= (int64_t(1) << 30),
            "ivfScan: chunk length %lld is not a multiple of 32 in [32, 2^30]",
            (long long)a.chunkLen);
    FAISS_THROW_IF_NOT_FMT(
            a.chunksPerQuery >= 1 && a.chunksPerQuery <= INT32_MAX,
            "ivfScan: %lld chunks per query", (long long)a.chunksPerQuery);
    if (a.nq == 0) {
        return;
    }
    const bool buffered = a.distances != nullptr;
    if (buffered && nextPow2(a.k) <= kMaxWarpSelectK) {
        // One warp per (query, chunk): the selection in registers up to
        // kMaxWarpRegisterSelectK, in shared memory above.
        if (nextPow2(a.k) <= kMaxWarpRegisterSelectK) {
            dispatchWarpSelectCapacity(
                    a.k, [&](auto kp) { scan::launchWarpScan<decltype(kp)::value>(a, stream); });
        } else {
            scan::launchWarpScan<kMaxWarpSelectK>(a, stream);
        }
        return;
    }
    if (!buffered && ivfQueryScanKernel(a) == IvfQueryScanKernel::kWarp) {
        // One warp per (query, chunk), computing the chunk's distances itself.
        dispatchWarpSelectCapacity(a.k, [&](auto kp) {
            constexpr int kKp = decltype(kp)::value;
            if (a.innerProduct) {
                scan::launchQueryWarpScan<kKp, true>(a, stream);
            } else {
                scan::launchQueryWarpScan<kKp, false>(a, stream);
            }
        });
        return;
    }
    const size_t selectBytes = selectBytesAligned(a.k);
    const unsigned blocks = unsigned(scan::workersFor(a, kMaxResidentBlocksPerSm));
    if (buffered) {
        raiseDynamicSmemLimit(windowScanKernel, selectBytes);
        windowScanKernel<<<blocks, kSelectThreads, selectBytes, stream>>>(a);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
        return;
    }
    const size_t smem = ivfScanSmemBytes(a.d, a.k);
    auto kernel = a.innerProduct ? scanKernel<1> : scanKernel<0>;
    raiseDynamicSmemLimit(kernel, smem);
    kernel<<<blocks, kSelectThreads, smem, stream>>>(a, selectBytes);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
