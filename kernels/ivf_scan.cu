// The list scan stage's selection. Per-query path: one block per (query, chunk of a
// probed list); the query sits in shared memory, each thread computes whole distances
// from the interleaved layout (a warp reads 32 consecutive vectors' float4 group in one
// 512-byte transaction) and feeds them to the block-wide streaming top-k. List-major
// path: the same slots read the distances ivf_list_major.cu precomputed, one warp per
// slot for k <= kMaxWarpSelectK, else one block.
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "IvfListLoader.cuh"
#include "IvfScan.h"
#include "IvfStore.h"
#include "LastAtMost.cuh"
#include "Select.h"
#include "SmemLimit.cuh"
#include "WarpSelect.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kOffsetThreads = 128; // 4 warps, one query each

// One warp per query: a running prefix sum over the probes, 32 at a time.
__global__ void chunkOffsetsKernel(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        const int64_t* listLen,
        int64_t chunkLen,
        int* offsets) {
    const int64_t q = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (q >= nq) {
        return;
    }
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
    if (lane == 0) {
        out[nprobe] = running;
    }
}

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

__device__ ScanSlot resolveSlot(const IvfScanArgs& a, int64_t q, int64_t slot) {
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
__device__ FilteredLoader<Inner> filtered(const IvfScanArgs& a, const ScanSlot& s, Inner inner) {
    return FilteredLoader<Inner>{
            inner, a.allow, a.allow ? a.listBitBase[s.list] + s.start : int64_t(0)};
}

__device__ const float* chunkDistances(const IvfScanArgs& a, int64_t q, const ScanSlot& s) {
    return a.distances + q * a.ldDistances + a.vectorOffsets[q * (a.nprobe + 1) + s.probe] +
            s.start;
}

/// kSource: 0 computes L2 from the lists, 1 inner product, 2 reads precomputed distances.
template <int kSource>
__global__ void __launch_bounds__(kSelectThreads)
        scanKernel(IvfScanArgs a, int64_t queryOffset, size_t selectBytes) {
    extern __shared__ __align__(16) char smem[];
    const int64_t q = queryOffset + blockIdx.y;
    const int64_t slot = blockIdx.x;
    float* outD = a.candD + q * (a.chunksPerQuery * a.k) + slot * a.k;
    int64_t* outI = a.candI + q * (a.chunksPerQuery * a.k) + slot * a.k;

    const ScanSlot ss = resolveSlot(a, q, slot);
    if (ss.n < 0) {
        for (int i = threadIdx.x; i < a.k; i += kSelectThreads) {
            outD[i] = CUDART_INF_F;
            outI[i] = -1;
        }
        return;
    }
    // blockSelectMin's first barrier orders the query writes before any load.
    BlockSelectSmem s = BlockSelectSmem::carve(smem, a.k);
    if (kSource == 2) {
        blockSelectMin<kSelectThreads, kSelectItems>(
                s, ss.n, filtered(a, ss, BufferLoader{chunkDistances(a, q, ss)}));
    } else {
        const int groups = ivfPaddedDim(a.d) / 4;
        float4* query = reinterpret_cast<float4*>(smem + selectBytes);
        const float* qsrc = a.queries + q * a.d;
        for (int j = threadIdx.x; j < 4 * groups; j += kSelectThreads) {
            reinterpret_cast<float*>(query)[j] = j < a.d ? qsrc[j] : 0.f;
        }
        ListLoader<kSource == 1> load{
                reinterpret_cast<const float4*>(a.listData[ss.list]), query, ss.start, groups};
        blockSelectMin<kSelectThreads, kSelectItems>(s, ss.n, filtered(a, ss, load));
    }

    const int64_t* ids = a.listIds[ss.list] + ss.start;
    for (int i = threadIdx.x; i < a.k; i += kSelectThreads) {
        const int p = s.position(i);
        outD[i] = s.value(i);
        outI[i] = p < 0 ? -1 : ids[p];
    }
}

constexpr int kWarpScanWarps = kSelectThreads / 32;

// One warp per (query, chunk) over precomputed distances.
__global__ void __launch_bounds__(kSelectThreads)
        warpScanKernel(IvfScanArgs a, int64_t queryOffset, int64_t nq) {
    extern __shared__ __align__(16) uint64_t warpSmem[];
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

    const ScanSlot ss = resolveSlot(a, q, slot);
    if (ss.n < 0) {
        for (int i = lane; i < a.k; i += 32) {
            outD[i] = CUDART_INF_F;
            outI[i] = -1;
        }
        return;
    }
    WarpSelect sel(warpSmem + warp * warpSelectSlots(a.k), a.k);
    sel.run(ss.n, filtered(a, ss, BufferLoader{chunkDistances(a, q, ss)}));
    const int64_t* ids = a.listIds[ss.list] + ss.start;
    for (int i = lane; i < a.k; i += 32) {
        const int p = sel.position(i);
        outD[i] = sel.value(i);
        outI[i] = p < 0 ? -1 : ids[p];
    }
}

size_t selectBytesAligned(int k) {
    return (blockSelectSmemBytes(k) + 15) / 16 * 16;
}

} // namespace

size_t ivfScanSmemBytes(int d, int k) {
    return selectBytesAligned(k) + size_t(ivfPaddedDim(d)) * sizeof(float);
}

void ivfChunkOffsets(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        const int64_t* listLen,
        int64_t chunkLen,
        int* offsets,
        cudaStream_t stream) {
    if (nq == 0) {
        return;
    }
    const int64_t threads = nq * 32;
    chunkOffsetsKernel<<<
            unsigned((threads + kOffsetThreads - 1) / kOffsetThreads), kOffsetThreads, 0, stream>>>(
            coarse, nq, nprobe, listLen, chunkLen, offsets);
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
        const size_t smem = size_t(kWarpScanWarps) * warpSelectSlots(a.k) * sizeof(uint64_t);
        raiseDynamicSmemLimit(warpScanKernel, smem);
        const int64_t maxQueries = std::max<int64_t>(1, (int64_t(1) << 30) / a.chunksPerQuery);
        for (int64_t q0 = 0; q0 < a.nq; q0 += maxQueries) {
            const int64_t nq = std::min(maxQueries, a.nq - q0);
            const int64_t warps = nq * a.chunksPerQuery;
            warpScanKernel<<<
                    unsigned((warps + kWarpScanWarps - 1) / kWarpScanWarps), kSelectThreads, smem,
                    stream>>>(a, q0, nq);
            FAISS_EXT_CUDA_CHECK_LAUNCH();
        }
        return;
    }
    const size_t selectBytes = selectBytesAligned(a.k);
    const size_t smem = buffered ? selectBytes : ivfScanSmemBytes(a.d, a.k);
    auto kernel = buffered ? scanKernel<2> : a.innerProduct ? scanKernel<1> : scanKernel<0>;
    raiseDynamicSmemLimit(kernel, smem);
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t q0 = 0; q0 < a.nq; q0 += kMaxGridY) {
        dim3 grid(unsigned(a.chunksPerQuery), unsigned(std::min(kMaxGridY, a.nq - q0)));
        kernel<<<grid, kSelectThreads, smem, stream>>>(a, q0, selectBytes);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace kernels
} // namespace faiss_ext
