// List-major IVF distances: the batch's probes grouped by list (counting sort, one-block
// CUB scan of the per-list counts), then a persistent grid of product tiles (a group of
// 16-64 of a list's queries x 256-64 of its vectors), each list tile read from memory
// once per group of queries instead of once per query.
#include <cuda_pipeline.h>
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
/// Query-vector products of one work item per component: 4 queries x 4 vectors a thread.
constexpr int kItemProducts = 16 * kThreads;
constexpr int kMaxG = 64;                 ///< most queries in a work item's group
constexpr int kMaxV = kItemProducts / 16; ///< most list vectors in a tile (groups of 16)
constexpr int kChunk = 16;                ///< components staged in shared memory per step

/// Queries in each group of a list probed by `count` queries: the smallest of 16, 32 and
/// 64 that holds them all (64 above).
__device__ inline int listMajorGroup(int count) {
    return count <= 16 ? 16 : count <= 32 ? 32 : kMaxG;
}

/// List vectors in each tile of a list whose groups hold g queries.
__device__ inline int listMajorTile(int g) {
    return kItemProducts / g;
}

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
        const int g = listMajorGroup(counts[l]);
        const int64_t groups = (counts[l] + g - 1) / g;
        const int v = listMajorTile(g);
        const int64_t tiles = (listLen[l] + v - 1) / v;
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

/// One work item of the product: a group of a list's queries and a tile of its vectors.
struct ListMajorItem {
    int list;
    int first;    ///< the list's first grouped pair
    int nQueries; ///< queries probing the list
    int g;        ///< queries a group (listMajorGroup)
    int v;        ///< vectors a tile (listMajorTile)
    int g0;       ///< the group's first query among the list's
    int gCount;   ///< queries in this group
    int64_t v0;   ///< the tile's first vector
    int vCount;   ///< vectors in this tile
};

__device__ inline ListMajorItem listMajorItem(const IvfListMajorArgs& a, int w) {
    ListMajorItem it;
    it.list = lastAtMost(a.groups.workStart, int(a.nlist), w);
    it.first = a.groups.listStart[it.list];
    it.nQueries = a.groups.listStart[it.list + 1] - it.first;
    it.g = listMajorGroup(it.nQueries);
    it.v = listMajorTile(it.g);
    const int64_t len = a.listLen[it.list];
    const int tiles = int((len + it.v - 1) / it.v);
    const int local = w - a.groups.workStart[it.list];
    it.g0 = (local / tiles) * it.g;
    it.v0 = int64_t(local % tiles) * it.v;
    it.gCount = min(it.g, it.nQueries - it.g0);
    it.vCount = int(min(int64_t(it.v), len - it.v0));
    return it;
}

/// The chunk `chunk` (kChunk components) of a work item's queries and list tile, copied
/// asynchronously into one buffer; past d, the tile or the group: zeros. Queries are
/// copied 16 bytes at a time where their rows allow it (`vectorQueries`: d % 4 == 0 and a
/// 16-byte aligned array), else component by component; the tile as the interleaved
/// lists' float4s. g and the tile width are powers of two, so the elements are indexed
/// with shifts: this loop runs once per chunk and thread, beside 512 FP32 operations.
__device__ inline void loadChunk(
        const IvfListMajorArgs& a,
        const ListMajorItem& it,
        const int* rowOf,
        int chunk,
        bool vectorQueries,
        float4 (*qT)[kMaxG],
        float4 (*vT)[kMaxV]) {
    static_assert(kChunk == 16, "the element indexing assumes 4 float4s a chunk");
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    // Element idx = 32 m + 8 gl + r: query 8 m + r, components 4 gl .. 4 gl + 3. Eight
    // consecutive lanes fill eight consecutive float4s of one row of qT (no bank
    // conflict); each query's 64 bytes come from four lanes.
    for (int idx = threadIdx.x; idx < it.g * (kChunk / 4); idx += kThreads) {
        const int g = (idx & 7) | ((idx >> 5) << 3);
        const int gl = (idx >> 3) & 3;
        const int comp = chunk * kChunk + 4 * gl;
        const int row = rowOf[g];
        float4* dst = &qT[gl][g];
        if (row < 0 || comp >= a.d) {
            *dst = zero;
            continue;
        }
        const float* src = a.queries + int64_t(row) * a.d + comp;
        if (vectorQueries) {
            __pipeline_memcpy_async(dst, src, sizeof(float4));
        } else {
            float* parts = reinterpret_cast<float*>(dst);
            for (int e = 0; e < 4; ++e) {
                if (comp + e < a.d) {
                    __pipeline_memcpy_async(parts + e, src + e, sizeof(float));
                } else {
                    parts[e] = 0.f;
                }
            }
        }
    }
    const int groups = ivfPaddedDim(a.d) / 4;
    const float4* data = reinterpret_cast<const float4*>(a.listData[it.list]);
    const int vShift = __ffs(it.v) - 1;
    for (int idx = threadIdx.x; idx < it.v * (kChunk / 4); idx += kThreads) {
        const int vi = idx & (it.v - 1);
        const int gl = idx >> vShift;
        const int gi = chunk * (kChunk / 4) + gl;
        const int64_t v = it.v0 + vi;
        if (vi < it.vCount && gi < groups) {
            __pipeline_memcpy_async(
                    &vT[gl][vi],
                    &data[(v >> 5) * (int64_t(32) * groups) + int64_t(gi) * 32 + (v & 31)],
                    sizeof(float4));
        } else {
            vT[gl][vi] = zero;
        }
    }
    __pipeline_commit();
}

// At most 85 registers a thread, so that 3 blocks (24 warps) share an SM: the products
// are latency-bound below that (2 blocks an SM issued 0.56 instructions a cycle).
template <bool kInnerProduct>
__global__ void __launch_bounds__(kThreads, 3)
        listMajorKernel(IvfListMajorArgs a, bool vectorQueries) {
    // Two buffers of one chunk each: the next chunk is copied in while this one is
    // multiplied. Element [c / 4][i] holds components c .. c + 3 of query (vector) i.
    __shared__ float4 qT[2][kChunk / 4][kMaxG];
    __shared__ float4 vT[2][kChunk / 4][kMaxV];
    __shared__ int pairOf[kMaxG];
    __shared__ int rowOf[kMaxG]; ///< the query row of pairOf's pair (-1: none)
    const int chunks = (ivfPaddedDim(a.d) + kChunk - 1) / kChunk;
    const int total = a.groups.workStart[a.nlist];

    for (int w = blockIdx.x; w < total; w += gridDim.x) {
        const ListMajorItem it = listMajorItem(a, w);
        // Thread layout of the item: (g / 4) rows of queries 4 ty .. 4 ty + 3 and
        // (1024 / g) columns of vectors tx, tx + tn, tx + 2 tn, tx + 3 tn.
        const int tn = it.v / 4;
        const int ty = threadIdx.x / tn;
        const int tx = threadIdx.x % tn;

        __syncthreads(); // the previous item is done with pairOf and the buffers
        if (threadIdx.x < it.g) {
            const int q = it.g0 + threadIdx.x;
            const int pair = q < it.nQueries ? a.groups.pairs[it.first + q] : -1;
            pairOf[threadIdx.x] = pair;
            rowOf[threadIdx.x] = pair >= 0 ? pair / a.nprobe : -1;
        }
        __syncthreads();
        loadChunk(a, it, rowOf, 0, vectorQueries, qT[0], vT[0]);

        // Threads whose 4 queries are all past the group's last one, or whose vectors
        // are all past the tile's end, skip the products: whole warps of them leave the
        // FP32 pipes to the other warps of the SM.
        const bool active = 4 * ty < it.gCount && tx < it.vCount;
        float acc0[4][4], acc1[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                acc0[i][j] = 0.f;
                acc1[i][j] = 0.f;
            }
        }
        for (int c = 0; c < chunks; ++c) {
            const int buf = c & 1;
            if (c + 1 < chunks) {
                __syncthreads(); // the other buffer's chunk (c - 1) is consumed
                loadChunk(a, it, rowOf, c + 1, vectorQueries, qT[buf ^ 1], vT[buf ^ 1]);
                __pipeline_wait_prior(1);
            } else {
                __pipeline_wait_prior(0);
            }
            __syncthreads(); // chunk c is in place
            if (!active) {
                continue;
            }
            // Components in increasing order, even ones into acc0 and odd into acc1:
            // the per-query scan's operations (IvfListLoader.cuh), so both give the same
            // bits.
#pragma unroll
            for (int gl = 0; gl < kChunk / 4; ++gl) {
                float4 q[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    q[i] = qT[buf][gl][4 * ty + i];
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float4 x = vT[buf][gl][tx + j * tn];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        if (kInnerProduct) {
                            acc0[i][j] = fmaf(q[i].x, x.x, acc0[i][j]);
                            acc1[i][j] = fmaf(q[i].y, x.y, acc1[i][j]);
                            acc0[i][j] = fmaf(q[i].z, x.z, acc0[i][j]);
                            acc1[i][j] = fmaf(q[i].w, x.w, acc1[i][j]);
                        } else {
                            const float e0 = q[i].x - x.x, e1 = q[i].y - x.y;
                            const float e2 = q[i].z - x.z, e3 = q[i].w - x.w;
                            acc0[i][j] = fmaf(e0, e0, acc0[i][j]);
                            acc1[i][j] = fmaf(e1, e1, acc1[i][j]);
                            acc0[i][j] = fmaf(e2, e2, acc0[i][j]);
                            acc1[i][j] = fmaf(e3, e3, acc1[i][j]);
                        }
                    }
                }
            }
        }
        if (!active) {
            continue;
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int g = 4 * ty + i;
            if (g >= it.gCount) {
                continue;
            }
            const int pair = pairOf[g];
            const int64_t q = pair / a.nprobe;
            const int p = pair % a.nprobe;
            float* row = a.distances + q * a.ldDistances + a.vectorOffsets[q * (a.nprobe + 1) + p] +
                    it.v0;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int vi = tx + j * tn;
                if (vi < it.vCount) {
                    const float s = acc0[i][j] + acc1[i][j];
                    const bool allowed = !a.allow ||
                            idFilterAllows(a.allow, a.listBitBase[it.list] + it.v0 + vi);
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
    // Persistent grid, one wave of resident blocks: the work count lives on the device
    // (no host round trip).
    const auto kernel = a.innerProduct ? listMajorKernel<true> : listMajorKernel<false>;
    int perSm = 0;
    FAISS_EXT_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kThreads, 0));
    const unsigned grid = unsigned(std::max(1, smCount) * std::max(1, perSm));
    const bool vectorQueries =
            a.d % 4 == 0 && reinterpret_cast<uintptr_t>(a.queries) % sizeof(float4) == 0;
    kernel<<<grid, kThreads, 0, stream>>>(a, vectorQueries);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
