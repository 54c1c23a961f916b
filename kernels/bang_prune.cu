// The graph build's pruning on the GPU (BangPrune.h): per page of nodes, the candidates'
// keys (squared L2 distance bits above the id), CUB's segmented sort of each node's
// keys, then one block per node walks its sorted keys: repeats and invalid ids dropped,
// then DiskANN's RobustPrune as robustPrune() in impl/BangPrune.cpp does it (the closest
// remaining candidate p* is selected, every remaining c with alpha * d(p*, c) <= d(node,
// c) is dropped, until R are selected; over the closest kBangPruneWalkPerEdge x R
// distinct candidates). The reverse edges: in-degree counts, then each
// edge written into its target's slot range.
//
// RobustPrune takes a few pivots a round, the same decisions as one p* at a time: the
// next P alive entries are the pivots; one pass over the alive entries after the first
// computes each one's distance to every earlier pivot; pivot 0 is p*, and pivot a is the
// next p* exactly when no selected pivot before it occludes it (the entries between
// pivots are dead already); an entry occluded by a selected pivot dies. One chain of
// barriers a round instead of one a selection; the distances to pivots that turn out
// occluded are the price.
//
// A node of at most kBangPruneSharedSortMax candidates keeps its keys and flags in shared
// memory, a larger one in global memory, so no node's candidate count is limited by
// shared memory (the second prune's reverse edges are unbounded: a hub can be the
// neighbour of very many nodes); shared memory also holds the staged rows (the node's,
// then a round's pivots'). The rows are read as floats or as bytes (RowLoad.cuh: the
// same values, so the same graph); staged rows are floats either way.
#include <algorithm>
#include <climits>
#include <cstdint>

#include <cub/device/device_segmented_sort.cuh>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "BangBloom.h"
#include "BangPrune.h"
#include "BlockSelect.cuh"
#include "RowLoad.cuh"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = kBangPruneThreads;
constexpr int kLanes = 8; // lanes per distance
constexpr int kGroups = kThreads / kLanes;
static_assert(kThreads % 32 == 0 && 32 % kLanes == 0, "groups must not straddle warps");
/// Most pivots a RobustPrune round, and the shared memory their rows may take (fewer
/// pivots for long rows: prunePivots).
constexpr int kMaxPivots = 8;
constexpr int kPivotBytes = 32 << 10;

/// Floats a staged row takes in shared memory (whole float4s).
__host__ __device__ inline int rowStride(int d) {
    return roundUp(d, 4);
}

/// Pivots a round at dimension d: as many rows as fit kPivotBytes, 1 to kMaxPivots.
int prunePivots(int d) {
    const int rows = kPivotBytes / (rowStride(d) * int(sizeof(float)));
    return std::max(1, std::min(kMaxPivots, rows));
}

/// Squared L2 distances of b (global memory, d components) to each of P rows in shared
/// memory (row a at rows + a * stride) whose bit is set in `want`, into dist[a] (the
/// others 0); b is loaded once for all of them. Each distance is summed by the 8 lanes
/// of one group: lane `sub` adds its components in increasing order with fmaf (4 per
/// float4 when d % 4 == 0), then the lanes' sums are added by the xor tree 4, 2, 1. The
/// order depends on d only, and (a - b)^2 == (b - a)^2, so d(a, b) == d(b, a) bit for bit,
/// and the one-row case (groupL2) sums exactly as the pivot rounds do. Every lane of the
/// warp must call it with the same `count` (rows summed, <= P; the shuffles span the
/// warp); a lane with want 0 reads nothing. All 8 lanes return the sums. b's components
/// are floats or bytes (T).
template <int P, typename T>
__device__ __forceinline__ void groupL2Rows(
        const float* rows,
        int stride,
        int count,
        const T* __restrict__ b,
        int d,
        int sub,
        unsigned want,
        float (&dist)[P]) {
#pragma unroll
    for (int a = 0; a < P; ++a) {
        dist[a] = 0.f;
    }
    if (want != 0u) {
        if ((d & 3) == 0) {
            for (int j = sub; j < (d >> 2); j += kLanes) {
                const float4 q = loadRow4(b, j);
#pragma unroll
                for (int a = 0; a < P; ++a) {
                    if ((want >> a) & 1u) {
                        const float4 p = reinterpret_cast<const float4*>(rows + a * stride)[j];
                        float t = p.x - q.x;
                        dist[a] = fmaf(t, t, dist[a]);
                        t = p.y - q.y;
                        dist[a] = fmaf(t, t, dist[a]);
                        t = p.z - q.z;
                        dist[a] = fmaf(t, t, dist[a]);
                        t = p.w - q.w;
                        dist[a] = fmaf(t, t, dist[a]);
                    }
                }
            }
        } else {
            for (int j = sub; j < d; j += kLanes) {
                const float q = loadRow1(b, j);
#pragma unroll
                for (int a = 0; a < P; ++a) {
                    if ((want >> a) & 1u) {
                        const float t = rows[a * stride + j] - q;
                        dist[a] = fmaf(t, t, dist[a]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int a = 0; a < P; ++a) {
        if (a < count) { // warp-uniform
            dist[a] += __shfl_xor_sync(0xffffffffu, dist[a], 4);
            dist[a] += __shfl_xor_sync(0xffffffffu, dist[a], 2);
            dist[a] += __shfl_xor_sync(0xffffffffu, dist[a], 1);
        }
    }
}

/// groupL2Rows of one row a (shared memory): the distance of a candidate to its node. An
/// invalid lane reads nothing and returns 0.
template <typename T>
__device__ __forceinline__ float groupL2(
        const float* a,
        const T* __restrict__ b,
        int d,
        int sub,
        bool valid) {
    float dist[1];
    groupL2Rows(a, 0, 1, b, d, sub, valid ? 1u : 0u, dist);
    return dist[0];
}

/// Copies row `row` of x (d components) into shared memory as floats; the caller
/// synchronises.
template <typename T>
__device__ __forceinline__ void stageRow(float* dst, const T* __restrict__ x, int64_t row, int d) {
    const T* src = x + size_t(row) * size_t(d);
    for (int j = threadIdx.x; j < d; j += kThreads) {
        dst[j] = float(src[j]);
    }
}

/// out[j] = bangKey(d(node, id), id) for the m candidate ids of node v (ids[j]), or
/// kBangEmptyKey for an id outside [0, n) or the node itself. `row`: the node's vector
/// in shared memory. Every thread of the block calls it.
template <typename T>
__device__ __forceinline__ void candidateKeys(
        const float* row,
        const T* __restrict__ x,
        int64_t n,
        int d,
        int64_t v,
        const int32_t* __restrict__ ids,
        int m,
        uint64_t* out) {
    const int group = threadIdx.x / kLanes, sub = threadIdx.x % kLanes;
    for (int base = 0; base < m; base += kGroups) { // the same trip count in every warp
        const int j = base + group;
        const int32_t id = j < m ? ids[j] : -1;
        const bool valid = id >= 0 && id < n && id != v;
        const float dist = groupL2(row, x + size_t(valid ? id : 0) * size_t(d), d, sub, valid);
        if (j < m && sub == 0) {
            out[j] = valid ? bangKey(dist, id) : kBangEmptyKey;
        }
    }
}

/// keys[e] for every entry e of the nodes with more than kBangPruneSharedSortMax
/// candidates (candidateKeys; the prune block of a smaller node makes its own). One block
/// per node.
template <typename T>
__global__ void __launch_bounds__(kThreads) keysKernel(
        const T* __restrict__ x,
        int64_t n,
        int d,
        int64_t v0,
        const int32_t* __restrict__ segments,
        const int32_t* __restrict__ ids,
        const int32_t* __restrict__ order,
        uint64_t* __restrict__ keys) {
    extern __shared__ float4 smemKeys[];
    float* node = reinterpret_cast<float*>(smemKeys);
    const int s = order ? order[blockIdx.x] : int(blockIdx.x);
    const int64_t v = v0 + s;
    const int begin = segments[s];
    const int m = segments[s + 1] - begin;
    if (m <= kBangPruneSharedSortMax) {
        return; // the whole block
    }
    stageRow(node, x, v, d);
    __syncthreads();
    candidateKeys(node, x, n, d, v, ids + begin, m, keys + begin);
}

/// One block per node over its sorted keys (see bangPrunePage): a node with at most
/// kBangPruneSharedSortMax candidates makes and sorts its keys in shared memory
/// (sharedCap of them: nextPow2 of the page's most), a larger one reads them from
/// sortedKeys (keysKernel, then CUB). alive: one byte per entry of the larger nodes,
/// this node's written by this block only (flags set here, then cleared by the prune);
/// plain loads and stores, ordered by __syncthreads. An entry's byte is 0 when it is dead,
/// else bit 0 set, and during a round bit a set when pivot a (1 .. 7) occludes it.
/// pivots: rows staged a RobustPrune round (prunePivots(d)).
template <typename T>
__global__ void __launch_bounds__(kThreads) pruneKernel(
        const T* __restrict__ x,
        int64_t n,
        int d,
        int64_t v0,
        const int32_t* __restrict__ segments,
        const int32_t* __restrict__ ids,
        const int32_t* __restrict__ order,
        const uint64_t* __restrict__ sortedKeys,
        uint8_t* alive,
        int sharedCap,
        int pivots,
        int R,
        float alpha,
        bool copyWhenFits,
        int32_t* __restrict__ graph) {
    extern __shared__ float4 smemPrune[];
    const int stride = rowStride(d);
    float* pivotRows = reinterpret_cast<float*>(smemPrune); // the node's vector, then pivots'
    uint64_t* sharedKeys = reinterpret_cast<uint64_t*>(pivotRows + pivots * stride);
    uint8_t* sharedLive = reinterpret_cast<uint8_t*>(sharedKeys + sharedCap);
    __shared__ int found;
    __shared__ int pivotCount;
    __shared__ int pivotPos[kMaxPivots];
    __shared__ uint8_t pivotMask[kMaxPivots]; // bit b: pivot b < a occludes pivot a
    const int s = order ? order[blockIdx.x] : int(blockIdx.x);
    const int begin = segments[s];
    const int m = segments[s + 1] - begin;
    const uint64_t* key = sortedKeys + begin;
    uint8_t* live = alive + begin;
    if (m <= kBangPruneSharedSortMax) { // block-uniform
        const int64_t v = v0 + s;
        stageRow(pivotRows, x, v, d);
        __syncthreads();
        candidateKeys(pivotRows, x, n, d, v, ids + begin, m, sharedKeys);
        const int len = m > 0 ? nextPow2(m) : 0;
        for (int j = m + int(threadIdx.x); j < len; j += kThreads) {
            sharedKeys[j] = kBangEmptyKey;
        }
        __syncthreads();
        bitonicSort<kThreads>(sharedKeys, len); // ends with a barrier: the node's row is free
        key = sharedKeys;
        live = sharedLive;
    }
    int32_t* row = graph + size_t(v0 + s) * size_t(R);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int group = threadIdx.x / kLanes, sub = threadIdx.x % kLanes;

    // A candidate is alive when valid and the first of its key (repeats of an id have
    // equal keys, adjacent after the sort).
    int unique = 0;
    for (int base = 0; base < m; base += kThreads) {
        const int j = base + int(threadIdx.x);
        bool a = false;
        if (j < m) {
            const uint64_t k = key[j];
            a = k != kBangEmptyKey && (j == 0 || key[j - 1] != k);
            live[j] = a ? 1 : 0;
        }
        unique += __syncthreads_count(a);
    }
    __syncthreads();

    if (copyWhenFits && unique <= R) {
        // The candidates themselves, in key order: warp 0 compacts them.
        if (warp == 0) {
            int pos = 0;
            for (int base = 0; base < m; base += 32) {
                const int j = base + lane;
                const bool a = j < m && live[j] != 0;
                const unsigned mask = __ballot_sync(0xffffffffu, a);
                if (a) {
                    row[pos + __popc(mask & ((1u << lane) - 1u))] = bangKeyId(key[j]);
                }
                pos += __popc(mask);
            }
            for (int t = pos + lane; t < R; t += 32) {
                row[t] = -1;
            }
        }
        return;
    }

    // RobustPrune over the entries up to the cap-th distinct candidate (warp 0 finds it
    // when there are more), all of them otherwise.
    const int cap = kBangPruneWalkPerEdge * R;
    int walk = m;
    if (unique > cap) { // block-uniform
        if (warp == 0) {
            int seen = 0;
            for (int base = 0; base < m; base += 32) {
                const int j = base + lane;
                unsigned mask = __ballot_sync(0xffffffffu, j < m && live[j] != 0);
                const int count = __popc(mask);
                if (seen + count >= cap) { // warp-uniform
                    for (int t = seen + 1; t < cap; ++t) {
                        mask &= mask - 1u; // drop the lowest set bit
                    }
                    if (lane == 0) {
                        found = base + __ffs(int(mask)); // one past the cap-th
                    }
                    break;
                }
                seen += count;
            }
        }
        __syncthreads();
        walk = found;
        __syncthreads(); // `found` is free again
    }

    // RobustPrune, a round of pivots at a time (the file comment). Every thread keeps the
    // same `selected` and `start`.
    int selected = 0;
    int start = 0;
    while (selected < R) {
        // The pivots: the first alive entries at or after start (warp 0; the others wait).
        if (warp == 0) {
            int count = 0;
            for (int base = start; base < walk && count < pivots; base += 32) {
                const int j = base + lane;
                const bool a = j < walk && live[j] != 0;
                const unsigned mask = __ballot_sync(0xffffffffu, a);
                const int rank = count + __popc(mask & ((1u << lane) - 1u));
                if (a && rank < pivots) {
                    pivotPos[rank] = j;
                }
                count += __popc(mask);
            }
            if (lane == 0) {
                pivotCount = min(count, pivots);
                pivotMask[0] = 0;
            }
        }
        __syncthreads();
        const int np = pivotCount;
        if (np == 0) {
            break; // no candidate left
        }
        const int first = pivotPos[0], last = pivotPos[np - 1];
        for (int t = threadIdx.x; t < np * d; t += kThreads) {
            const int a = t / d, c = t - a * d;
            pivotRows[a * stride + c] =
                    float(x[size_t(bangKeyId(key[pivotPos[a]])) * size_t(d) + size_t(c)]);
        }
        __syncthreads();
        // Each alive entry after pivot 0 against the pivots before it, one group an entry:
        // pivot 0 (p*) kills at once; a later pivot sets its bit, or for a pivot, its bit
        // in pivotMask. The entries between pivots are dead, so those alive in (first,
        // last] are the pivots, and an entry's pivots before it are a prefix.
        for (int base = first + 1; base < walk; base += kGroups) { // the same trip count everywhere
            const int j = base + group;
            const bool a = j < walk && live[j] != 0;
            const uint64_t kj = a ? key[j] : 0;
            const int32_t c = a ? bangKeyId(kj) : 0;
            int before = 0; // the pivots before entry j
            if (a) {
                while (before < np && pivotPos[before] < j) {
                    ++before;
                }
            }
            float dist[kMaxPivots];
            groupL2Rows(
                    pivotRows, stride, np, x + size_t(c) * size_t(d), d, sub, (1u << before) - 1u,
                    dist);
            // Every lane of the group has read live[j] before its lane 0 writes it (the
            // shuffles order execution, not memory: racecheck flags it without this).
            __syncwarp();
            if (a && sub == 0) {
                const float own = bangKeyDist(kj);
                unsigned occluded = 0;
#pragma unroll
                for (int p = 0; p < kMaxPivots; ++p) {
                    if (p < before && alpha * dist[p] <= own) {
                        occluded |= 1u << p;
                    }
                }
                if (j <= last) {
                    pivotMask[before] = uint8_t(occluded);
                } else {
                    live[j] = (occluded & 1u) != 0u ? 0 : uint8_t(1u | occluded);
                }
            }
        }
        __syncthreads();
        // The selected pivots, in order, until R: every thread decides alike.
        unsigned chosen = 1u;
        int taken = 1;
        for (int p = 1; p < np && selected + taken < R; ++p) {
            if ((pivotMask[p] & chosen) == 0u) {
                chosen |= 1u << p;
                ++taken;
            }
        }
        if (threadIdx.x == 0) {
            int out = selected;
            for (int p = 0; p < np; ++p) {
                if ((chosen >> p) & 1u) {
                    row[out++] = bangKeyId(key[pivotPos[p]]);
                }
            }
        }
        selected += taken;
        // The pivots are spent; an entry after them dies if a selected pivot occludes it.
        for (int j = first + int(threadIdx.x); j < walk; j += kThreads) {
            const unsigned l = live[j];
            if (l != 0u) {
                live[j] = j <= last || (l & chosen & ~1u) != 0u ? 0 : 1;
            }
        }
        start = last + 1;
        // The flags are final, the pivots' rows and positions free for the next round.
        __syncthreads();
    }
    for (int t = selected + int(threadIdx.x); t < R; t += kThreads) {
        row[t] = -1;
    }
}

__global__ void countInEdgesKernel(
        const int32_t* __restrict__ graph,
        int64_t total,
        int64_t n,
        int32_t* inDegree) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int32_t u = graph[e];
        if (u >= 0 && u < n) {
            atomicAdd(inDegree + u, 1);
        }
    }
}

/// graph: rows firstSource .. of the whole graph (total entries), so row e / R is node
/// firstSource + e / R.
__global__ void fillInEdgesKernel(
        const int32_t* __restrict__ graph,
        int64_t total,
        int64_t n,
        int R,
        int64_t firstSource,
        const int64_t* __restrict__ inOffsets,
        int32_t* cursor,
        int32_t* __restrict__ inIds) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int32_t u = graph[e];
        if (u >= 0 && u < n) {
            const int slot = atomicAdd(cursor + u, 1);
            inIds[inOffsets[u] + slot] = int32_t(firstSource + e / R);
        }
    }
}

__global__ void __launch_bounds__(kThreads) gatherKernel(
        const int32_t* __restrict__ graph,
        int R,
        const int64_t* __restrict__ inOffsets,
        const int32_t* __restrict__ inIds,
        int64_t v0,
        const int32_t* __restrict__ segments,
        int32_t* __restrict__ ids) {
    const int s = blockIdx.x;
    const int64_t v = v0 + s;
    const int begin = segments[s];
    const int m = segments[s + 1] - begin;
    const int64_t in0 = inOffsets[v];
    for (int t = threadIdx.x; t < m; t += kThreads) {
        ids[begin + t] = t < R ? graph[size_t(v) * size_t(R) + t] : inIds[in0 + (t - R)];
    }
}

/// Blocks of a grid-stride loop over `total` items.
unsigned strideBlocks(int64_t total) {
    const int64_t blocks = divUp<int64_t>(total, kThreads);
    return unsigned(blocks < (int64_t(1) << 20) ? blocks : (int64_t(1) << 20));
}

void checkPage(const BangPrunePage& p) {
    FAISS_ASSERT((p.vectors == nullptr) != (p.byteVectors == nullptr));
    FAISS_ASSERT(p.n >= 1 && p.n <= INT_MAX && p.d >= 1);
    FAISS_ASSERT(reinterpret_cast<uintptr_t>(p.vectors) % 16 == 0);
    FAISS_ASSERT(reinterpret_cast<uintptr_t>(p.byteVectors) % 4 == 0);
    FAISS_ASSERT(p.v0 >= 0 && p.nodes >= 1 && p.v0 + p.nodes <= p.n);
    FAISS_ASSERT(p.nodes <= kBangPruneMaxPageNodes && p.segments != nullptr);
    FAISS_ASSERT(p.entries >= 0 && p.entries <= kBangPruneMaxPageEntries);
    FAISS_ASSERT(p.entries == 0 || p.ids != nullptr);
    FAISS_ASSERT(p.longest >= 0 && p.longest <= p.entries);
    FAISS_ASSERT(p.longest <= kBangPruneSharedSortMax || p.sortEnds != nullptr);
}

/// The per-node kernels' dynamic shared memory: `rows` staged vectors (keysKernel: the
/// node's; the prune: its pivots'), and for the prune sharedCap keys and flags after them.
size_t pruneSmemBytes(int d, int rows, int sharedCap) {
    return size_t(rows) * size_t(rowStride(d)) * sizeof(float) +
            size_t(sharedCap) * (sizeof(uint64_t) + sizeof(uint8_t));
}

} // namespace

size_t bangPruneSmemBytes(int d) {
    return pruneSmemBytes(d, prunePivots(d), kBangPruneSharedSortMax);
}

size_t bangPruneSortTempBytes(int64_t entries, int64_t nodes) {
    FAISS_ASSERT(entries >= 0 && entries <= kBangPruneMaxPageEntries);
    FAISS_ASSERT(nodes >= 1 && nodes <= kBangPruneMaxPageNodes);
    if (entries == 0) {
        return 0;
    }
    cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
    const int32_t* offsets = nullptr;
    size_t bytes = 0;
    FAISS_EXT_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(
            nullptr, bytes, keys, int(entries), int(nodes), offsets, offsets + 1));
    return bytes;
}

namespace {

/// bangPrunePage over rows x of type T (page.vectors or page.byteVectors).
template <typename T>
void prunePage(
        const BangPrunePage& page,
        const T* x,
        const BangPruneWork& work,
        int R,
        float alpha,
        bool copyWhenFits,
        int32_t* graph,
        cudaStream_t stream) {
    const unsigned grid = unsigned(page.nodes);
    const uint64_t* sorted = work.keys;
    if (page.longest > kBangPruneSharedSortMax) {
        // The nodes above kBangPruneSharedSortMax: keys, then CUB's sort of their
        // segments only (sortEnds: the others end where they begin).
        FAISS_ASSERT(work.keys != nullptr && work.keysAlt != nullptr && work.alive != nullptr);
        FAISS_ASSERT(work.sortTempBytes >= bangPruneSortTempBytes(page.entries, page.nodes));
        const size_t keysSmem = pruneSmemBytes(page.d, 1, 0);
        raiseDynamicSmemLimit(keysKernel<T>, keysSmem);
        keysKernel<T><<<grid, kThreads, keysSmem, stream>>>(
                x, page.n, page.d, page.v0, page.segments, page.ids, page.order, work.keys);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
        cub::DoubleBuffer<uint64_t> keys(work.keys, work.keysAlt);
        size_t tempBytes = work.sortTempBytes;
        FAISS_EXT_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(
                work.sortTemp, tempBytes, keys, page.entries, page.nodes, page.segments,
                page.sortEnds, stream));
        sorted = keys.Current();
    }
    const int sharedCap =
            page.longest > 0 ? nextPow2(std::min(page.longest, kBangPruneSharedSortMax)) : 0;
    const int pivots = prunePivots(page.d);
    const size_t smem = pruneSmemBytes(page.d, pivots, sharedCap);
    raiseDynamicSmemLimit(pruneKernel<T>, smem);
    pruneKernel<T><<<grid, kThreads, smem, stream>>>(
            x, page.n, page.d, page.v0, page.segments, page.ids, page.order, sorted, work.alive,
            sharedCap, pivots, R, alpha, copyWhenFits, graph);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace

void bangPrunePage(
        const BangPrunePage& page,
        const BangPruneWork& work,
        int R,
        float alpha,
        bool copyWhenFits,
        int32_t* graph,
        cudaStream_t stream) {
    checkPage(page);
    FAISS_ASSERT(R >= 1 && graph != nullptr);
    if (page.byteVectors != nullptr) {
        prunePage(page, page.byteVectors, work, R, alpha, copyWhenFits, graph, stream);
    } else {
        prunePage(page, page.vectors, work, R, alpha, copyWhenFits, graph, stream);
    }
}

void bangCountInEdges(
        const int32_t* graph,
        int64_t n,
        int R,
        int64_t firstSource,
        int32_t* inDegree,
        cudaStream_t stream) {
    FAISS_ASSERT(n >= 1 && n <= INT_MAX && R >= 1 && firstSource >= 0 && firstSource < n);
    const int64_t total = (n - firstSource) * R;
    countInEdgesKernel<<<strideBlocks(total), kThreads, 0, stream>>>(
            graph + firstSource * R, total, n, inDegree);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void bangFillInEdges(
        const int32_t* graph,
        int64_t n,
        int R,
        int64_t firstSource,
        const int64_t* inOffsets,
        int32_t* cursor,
        int32_t* inIds,
        cudaStream_t stream) {
    FAISS_ASSERT(n >= 1 && n <= INT_MAX && R >= 1 && firstSource >= 0 && firstSource < n);
    const int64_t total = (n - firstSource) * R;
    fillInEdgesKernel<<<strideBlocks(total), kThreads, 0, stream>>>(
            graph + firstSource * R, total, n, R, firstSource, inOffsets, cursor, inIds);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void bangGatherOutAndInEdges(
        const int32_t* graph,
        int R,
        const int64_t* inOffsets,
        const int32_t* inIds,
        int64_t v0,
        int nodes,
        const int32_t* segments,
        int32_t* ids,
        cudaStream_t stream) {
    FAISS_ASSERT(R >= 1 && v0 >= 0 && nodes >= 1 && nodes <= kBangPruneMaxPageNodes);
    gatherKernel<<<unsigned(nodes), kThreads, 0, stream>>>(
            graph, R, inOffsets, inIds, v0, segments, ids);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
