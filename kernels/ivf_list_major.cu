// List-major IVF distances: the batch's probes grouped by list (counting sort, one-block
// CUB scan of the per-list counts), then a persistent grid of 64-query x 128-vector product
// tiles, each list tile read from memory once per group of 64 queries instead of once per
// query.
#include <math_constants.h>
#include <cub/block/block_scan.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "IdFilter.cuh"
#include "IvfListMajor.h"
#include "IvfStore.h"
#include "LastAtMost.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kG = kListMajorQueries;
constexpr int kV = kListMajorVectors;
constexpr int kChunk = 32; ///< components staged in shared memory per step

constexpr int kScanThreads = 1024;

/// Scratch layout (ints): counts, listStart, cursor, work, workStart (nlist + 1 each),
/// then the grouped pairs.
struct GroupScratch {
    int* counts;
    int* listStart;
    int* cursor;
    int* work;
    int* workStart;
    int* pairs;
};

GroupScratch carve(void* scratch, int64_t nlist) {
    GroupScratch s;
    int* p = static_cast<int*>(scratch);
    s.counts = p;
    s.listStart = p + (nlist + 1);
    s.cursor = p + 2 * (nlist + 1);
    s.work = p + 3 * (nlist + 1);
    s.workStart = p + 4 * (nlist + 1);
    s.pairs = p + 5 * (nlist + 1);
    return s;
}

// Exclusive prefix sum of n ints by one block: each thread sums a contiguous run, a
// CUB block scan offsets the runs, each thread writes its run.
__global__ void __launch_bounds__(kScanThreads)
        exclusiveScanKernel(const int* in, int64_t n, int* out) {
    using BlockScan = cub::BlockScan<int, kScanThreads>;
    __shared__ typename BlockScan::TempStorage temp;
    const int64_t per = (n + kScanThreads - 1) / kScanThreads;
    const int64_t begin = min(n, threadIdx.x * per);
    const int64_t end = min(n, begin + per);
    int sum = 0;
    for (int64_t i = begin; i < end; ++i) {
        sum += in[i];
    }
    int offset = 0;
    BlockScan(temp).ExclusiveSum(sum, offset);
    for (int64_t i = begin; i < end; ++i) {
        const int v = in[i];
        out[i] = offset;
        offset += v;
    }
}

__global__ void countProbesKernel(const int64_t* coarse, int64_t pairs, int* counts) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < pairs && coarse[i] >= 0) {
        atomicAdd(&counts[coarse[i]], 1);
    }
}

// Per list: work items (query groups x vector tiles); the cursor starts at listStart.
__global__ void listWorkKernel(
        const int* counts,
        const int* listStart,
        const int64_t* listLen,
        int64_t nlist,
        int* work,
        int* cursor) {
    const int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (l < nlist) {
        const int64_t groups = (counts[l] + kG - 1) / kG;
        const int64_t tiles = (listLen[l] + kV - 1) / kV;
        work[l] = int(groups * tiles);
        cursor[l] = listStart[l];
    } else if (l == nlist) {
        work[l] = 0;
    }
}

__global__ void scatterProbesKernel(
        const int64_t* coarse,
        int64_t pairs,
        int* cursor,
        int* grouped) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < pairs && coarse[i] >= 0) {
        grouped[atomicAdd(&cursor[coarse[i]], 1)] = int(i);
    }
}

template <bool kInnerProduct>
__global__ void __launch_bounds__(kThreads) listMajorKernel(IvfListMajorArgs a) {
    // Component-major tiles: a thread's 4 queries (and 4 + 4 vectors) of one component
    // are one 16-byte load each.
    __shared__ __align__(16) float qT[kChunk][kG + 4];
    __shared__ __align__(16) float bT[kChunk][kV + 4];
    __shared__ int pairOf[kG];
    const int tx = threadIdx.x % 16; // vectors 4 tx + j and kV / 2 + 4 tx + j
    const int ty = threadIdx.x / 16; // queries 4 ty + i
    const int dp = ivfPaddedDim(a.d);
    const int groups = dp / 4;
    const int total = a.groups.workStart[a.nlist];

    for (int w = blockIdx.x; w < total; w += gridDim.x) {
        const int l = lastAtMost(a.groups.workStart, int(a.nlist), w);
        const int64_t len = a.listLen[l];
        const int first = a.groups.listStart[l];
        const int nQueries = a.groups.listStart[l + 1] - first;
        const int tiles = int((len + kV - 1) / kV);
        const int local = w - a.groups.workStart[l];
        const int g0 = (local / tiles) * kG;
        const int64_t v0 = int64_t(local % tiles) * kV;
        const int gCount = min(kG, nQueries - g0);
        const int vCount = int(min(int64_t(kV), len - v0));
        const float4* data = reinterpret_cast<const float4*>(a.listData[l]);

        __syncthreads(); // the previous item is done with pairOf and the tiles
        if (threadIdx.x < kG) {
            pairOf[threadIdx.x] =
                    threadIdx.x < gCount ? a.groups.pairs[first + g0 + threadIdx.x] : -1;
        }
        float acc0[4][8], acc1[4][8];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                acc0[i][j] = 0.f;
                acc1[i][j] = 0.f;
            }
        }
        for (int c0 = 0; c0 < dp; c0 += kChunk) {
            __syncthreads(); // pairOf written; the previous chunk consumed
            for (int idx = threadIdx.x; idx < kG * kChunk; idx += kThreads) {
                const int g = idx / kChunk;
                const int c = idx % kChunk;
                const int pair = pairOf[g];
                qT[c][g] = pair >= 0 && c0 + c < a.d
                        ? a.queries[int64_t(pair / a.nprobe) * a.d + c0 + c]
                        : 0.f;
            }
            for (int idx = threadIdx.x; idx < kV * (kChunk / 4); idx += kThreads) {
                const int vi = idx % kV;
                const int cg = idx / kV;
                const int gi = c0 / 4 + cg;
                const int64_t v = v0 + vi;
                float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
                if (vi < vCount && gi < groups) {
                    x = data[(v >> 5) * (int64_t(32) * groups) + int64_t(gi) * 32 + (v & 31)];
                }
                bT[cg * 4 + 0][vi] = x.x;
                bT[cg * 4 + 1][vi] = x.y;
                bT[cg * 4 + 2][vi] = x.z;
                bT[cg * 4 + 3][vi] = x.w;
            }
            __syncthreads();
            // Threads whose 4 queries are all past the group's last one (a list's last
            // group is partly empty) skip the products: whole warps of them leave the
            // FP32 pipes to the other warps of the SM.
            const int cEnd = 4 * ty < gCount ? kChunk : 0;
            // Even components into acc0, odd into acc1, in increasing order: the same
            // operations as the per-query scan, so both paths give the same bits.
#pragma unroll 2
            for (int c = 0; c < cEnd; c += 2) {
                const float4 qa4 = *reinterpret_cast<const float4*>(&qT[c][4 * ty]);
                const float4 qb4 = *reinterpret_cast<const float4*>(&qT[c + 1][4 * ty]);
                const float4 ba0 = *reinterpret_cast<const float4*>(&bT[c][4 * tx]);
                const float4 ba1 = *reinterpret_cast<const float4*>(&bT[c][kV / 2 + 4 * tx]);
                const float4 bb0 = *reinterpret_cast<const float4*>(&bT[c + 1][4 * tx]);
                const float4 bb1 = *reinterpret_cast<const float4*>(&bT[c + 1][kV / 2 + 4 * tx]);
                const float qa[4] = {qa4.x, qa4.y, qa4.z, qa4.w};
                const float qb[4] = {qb4.x, qb4.y, qb4.z, qb4.w};
                const float ba[8] = {ba0.x, ba0.y, ba0.z, ba0.w, ba1.x, ba1.y, ba1.z, ba1.w};
                const float bb[8] = {bb0.x, bb0.y, bb0.z, bb0.w, bb1.x, bb1.y, bb1.z, bb1.w};
#pragma unroll
                for (int i = 0; i < 4; ++i) {
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        if (kInnerProduct) {
                            acc0[i][j] = fmaf(qa[i], ba[j], acc0[i][j]);
                            acc1[i][j] = fmaf(qb[i], bb[j], acc1[i][j]);
                        } else {
                            const float t0 = qa[i] - ba[j];
                            const float t1 = qb[i] - bb[j];
                            acc0[i][j] = fmaf(t0, t0, acc0[i][j]);
                            acc1[i][j] = fmaf(t1, t1, acc1[i][j]);
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int g = 4 * ty + i;
            if (g >= gCount) {
                continue;
            }
            const int pair = pairOf[g];
            const int64_t q = pair / a.nprobe;
            const int p = pair % a.nprobe;
            float* row =
                    a.distances + q * a.ldDistances + a.vectorOffsets[q * (a.nprobe + 1) + p] + v0;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int vi = (j < 4 ? 0 : kV / 2) + 4 * tx + (j & 3);
                if (vi < vCount) {
                    const float s = acc0[i][j] + acc1[i][j];
                    const bool allowed =
                            !a.allow || idFilterAllows(a.allow, a.listBitBase[l] + v0 + vi);
                    row[vi] = !allowed ? CUDART_INF_F : kInnerProduct ? -s : s;
                }
            }
        }
    }
}

unsigned blocksFor(int64_t n) {
    return unsigned((n + kThreads - 1) / kThreads);
}

} // namespace

size_t ivfGroupScratchBytes(int64_t nlist, int64_t pairs) {
    return (size_t(5) * (nlist + 1) + size_t(pairs)) * sizeof(int);
}

IvfProbeGroups ivfGroupProbesByList(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        int64_t nlist,
        const int64_t* listLen,
        void* scratch,
        size_t scratchBytes,
        cudaStream_t stream) {
    const int64_t pairs = nq * nprobe;
    FAISS_THROW_IF_NOT_FMT(
            pairs < INT32_MAX && nlist < INT32_MAX &&
                    scratchBytes >= ivfGroupScratchBytes(nlist, pairs),
            "ivfGroupProbesByList: %lld probes over %lld lists with %zu scratch bytes",
            (long long)pairs, (long long)nlist, scratchBytes);
    GroupScratch s = carve(scratch, nlist);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(s.counts, 0, size_t(nlist + 1) * sizeof(int), stream));
    if (pairs > 0) {
        countProbesKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(coarse, pairs, s.counts);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
    exclusiveScanKernel<<<1, kScanThreads, 0, stream>>>(s.counts, nlist + 1, s.listStart);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    listWorkKernel<<<blocksFor(nlist + 1), kThreads, 0, stream>>>(
            s.counts, s.listStart, listLen, nlist, s.work, s.cursor);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    exclusiveScanKernel<<<1, kScanThreads, 0, stream>>>(s.work, nlist + 1, s.workStart);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    if (pairs > 0) {
        scatterProbesKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(
                coarse, pairs, s.cursor, s.pairs);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
    IvfProbeGroups g;
    g.listStart = s.listStart;
    g.pairs = s.pairs;
    g.workStart = s.workStart;
    return g;
}

void ivfListMajorDistances(const IvfListMajorArgs& a, int smCount, cudaStream_t stream) {
    if (a.nq == 0) {
        return;
    }
    // Persistent grid: the work count lives on the device (no host round trip).
    const unsigned grid = unsigned(std::max(1, smCount) * 4);
    if (a.innerProduct) {
        listMajorKernel<true><<<grid, kThreads, 0, stream>>>(a);
    } else {
        listMajorKernel<false><<<grid, kThreads, 0, stream>>>(a);
    }
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
