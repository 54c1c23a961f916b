// Device code of the BANG greedy search (see bang_search.cu for the algorithm), one
// search loop for every walk (Walk): exact squared L2 distances from the full vectors
// stored as floats or as bytes (RowLoad.cuh: the same distances), or ADC distances from
// PQ codes and a per-query table in shared memory (BangPq.h), then an exact re-rank of
// the final worklist. The steps of one iteration, then the persistent kernel the library
// runs. Included by bang_search.cu (declarations of the launchers only: see the extern
// templates at the end), by the files that instantiate them, bang_search_exact.cu,
// bang_search_bytes.cu and bang_search_pq.cu, and by the bench-only stepwise kernel
// (bang_search_stepwise.cu), which runs the same steps one launch at a time.
#pragma once

#include <climits>

#include <math_constants.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "BangBloom.h"
#include "BangCandidates.h"
#include "BangHubEntry.h"
#include "BangPq.h"
#include "BangSearch.h"
#include "IdFilter.cuh"
#include "RowLoad.cuh"
#include "Select.h"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {
namespace bang {

constexpr int kGroup = 8; // lanes per neighbour
static_assert(kGroup == kBangPqLanes, "ADC sums use the groups' lanes");
constexpr int kGroups = kBangThreads / kGroup;
/// Blocks per SM the register budget is held to (65536 / (6 * 256) = 42 registers).
constexpr int kBangMinBlocks = 6;

/// How a search walks the graph: exact distances from the rows stored as floats or as
/// bytes, or ADC distances from PQ codes (re-ranked exactly from the float rows).
enum class Walk { kFloatRows, kByteRows, kPq };

/// The walk of a view.
inline Walk walkOf(const BangGraphView& g) {
    return g.pqM > 0 ? Walk::kPq : g.byteVectors != nullptr ? Walk::kByteRows : Walk::kFloatRows;
}

/// Byte offsets of one block's shared state.
struct Layout {
    size_t keysA, keysB, cand, query, table, bloom, candId, scal, visA, visB, resA, resB, total;
};

/// pqM: sub-quantizers of the ADC table (0: exact mode, no table). filtered: a filtered
/// search's result list (L keys and its merge target).
__host__ __device__ inline Layout layoutFor(
        int L,
        int R,
        int d,
        bool withBloom,
        int pqM,
        bool filtered = false) {
    const int P = nextPow2(R);
    Layout l;
    size_t off = 0;
    l.keysA = off;
    off += size_t(L) * 8;
    l.keysB = off;
    off += size_t(L) * 8;
    l.cand = off;
    off += size_t(P) * 8;
    off = roundUp<size_t>(off, 16);
    l.query = off;
    off += roundUp<size_t>(size_t(d) * 4, 16);
    l.table = off;
    off += size_t(pqM) * kBangPqCentroids * 4;
    l.bloom = off;
    off += withBloom ? size_t(kBangBloomWords) * 4 : 0;
    l.candId = off;
    off += size_t(P) * 4;
    l.scal = off;
    off += 16;
    l.visA = off;
    off += size_t(L);
    l.visB = off;
    off += size_t(L);
    off = roundUp<size_t>(off, 8);
    l.resA = off;
    off += filtered ? size_t(L) * 8 : 0;
    l.resB = off;
    off += filtered ? size_t(L) * 8 : 0;
    l.total = roundUp<size_t>(off, 16);
    return l;
}

struct Smem {
    uint64_t* keys;     ///< current worklist, sorted, kBangEmptyKey at the end
    uint64_t* keysNext; ///< merge target
    uint8_t* vis;       ///< expanded flags of keys
    uint8_t* visNext;
    uint64_t* cand;  ///< this iteration's candidates (P keys)
    int32_t* candId; ///< parent's neighbours that passed the filter, else -1
    float* q;
    float* table;    ///< PQ mode: the query's ADC table (pqM x 256)
    uint32_t* bloom; ///< shared Bloom filter (persistent kernel only)
    int* scal;
    /// Filtered search (BangSearchArgs::allow): the nodes that may be results, and the
    /// result list (sorted, only allowed nodes) beside the worklist, which still walks
    /// every node. Null otherwise.
    const uint32_t* allow;
    uint64_t* res;
    uint64_t* resNext;
};

__device__ inline Smem carve(
        char* base,
        int L,
        int R,
        int d,
        bool withBloom,
        int pqM,
        const uint32_t* allow = nullptr) {
    const Layout l = layoutFor(L, R, d, withBloom, pqM, allow != nullptr);
    Smem s;
    s.keys = reinterpret_cast<uint64_t*>(base + l.keysA);
    s.keysNext = reinterpret_cast<uint64_t*>(base + l.keysB);
    s.cand = reinterpret_cast<uint64_t*>(base + l.cand);
    s.q = reinterpret_cast<float*>(base + l.query);
    s.table = pqM > 0 ? reinterpret_cast<float*>(base + l.table) : nullptr;
    s.bloom = withBloom ? reinterpret_cast<uint32_t*>(base + l.bloom) : nullptr;
    s.candId = reinterpret_cast<int32_t*>(base + l.candId);
    s.scal = reinterpret_cast<int*>(base + l.scal);
    s.vis = reinterpret_cast<uint8_t*>(base + l.visA);
    s.visNext = reinterpret_cast<uint8_t*>(base + l.visB);
    s.allow = allow;
    s.res = allow ? reinterpret_cast<uint64_t*>(base + l.resA) : nullptr;
    s.resNext = allow ? reinterpret_cast<uint64_t*>(base + l.resB) : nullptr;
    return s;
}

__device__ inline void bloomSet(uint32_t* words, uint32_t id) {
    const uint32_t a = bangBloomHash1(id), b = bangBloomHash2(id);
    atomicOr(&words[a >> 5], 1u << (a & 31));
    atomicOr(&words[b >> 5], 1u << (b & 31));
}

/// Adds the 8 lanes' partial sums of each group (every lane of the warp must call
/// it); all 8 lanes get the totals. The order is bangPqDistance's.
__device__ __forceinline__ void groupReducePair(float& acc0, float& acc1) {
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 4);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 4);
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 2);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 2);
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 1);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 1);
}

/// Squared L2 distances of q to rows x0 and x1, each summed by one group of 8 lanes:
/// two rows per group, so that both rows' loads are in flight together. Every lane of
/// the warp must call it (the reductions shuffle over the whole warp). An invalid row
/// is not read and its result is meaningless. All 8 lanes return the sums. A row's sum
/// is formed in the same order whatever the other row is, and whether the rows are
/// floats or bytes (T).
template <typename T>
__device__ __forceinline__ void groupL2Pair(
        const float* q,
        const T* __restrict__ x0,
        const T* __restrict__ x1,
        int d,
        int sub,
        bool valid0,
        bool valid1,
        float& out0,
        float& out1) {
    float acc0 = 0.f, acc1 = 0.f;
    if ((d & 3) == 0) {
        const float4* q4 = reinterpret_cast<const float4*>(q);
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
        for (int j = sub; j < (d >> 2); j += kGroup) {
            const float4 a = valid0 ? loadRow4(x0, j) : zero;
            const float4 b = valid1 ? loadRow4(x1, j) : zero;
            const float4 c = q4[j];
            float t = c.x - a.x;
            acc0 = fmaf(t, t, acc0);
            t = c.y - a.y;
            acc0 = fmaf(t, t, acc0);
            t = c.z - a.z;
            acc0 = fmaf(t, t, acc0);
            t = c.w - a.w;
            acc0 = fmaf(t, t, acc0);
            t = c.x - b.x;
            acc1 = fmaf(t, t, acc1);
            t = c.y - b.y;
            acc1 = fmaf(t, t, acc1);
            t = c.z - b.z;
            acc1 = fmaf(t, t, acc1);
            t = c.w - b.w;
            acc1 = fmaf(t, t, acc1);
        }
    } else {
#pragma unroll 4
        for (int j = sub; j < d; j += kGroup) {
            const float a = valid0 ? loadRow1(x0, j) : 0.f;
            const float b = valid1 ? loadRow1(x1, j) : 0.f;
            float t = q[j] - a;
            acc0 = fmaf(t, t, acc0);
            t = q[j] - b;
            acc1 = fmaf(t, t, acc1);
        }
    }
    groupReducePair(acc0, acc1);
    out0 = acc0;
    out1 = acc1;
}

/// One row's distance (groupL2Pair's arithmetic, for the distance table of the tests).
__device__ __forceinline__ float groupL2(
        const float* q,
        const float* __restrict__ x,
        int d,
        int sub,
        bool valid) {
    float dist, unused;
    groupL2Pair(q, x, x, d, sub, valid, false, dist, unused);
    return dist;
}

/// ADC distances of code rows c0 and c1 (M bytes each) through the shared table, one
/// group of 8 lanes per row, lane `sub` summing sub-quantizers sub, sub + 8, ... (as
/// bangPqLaneSum); same calling rules as groupL2Pair.
__device__ __forceinline__ void groupAdcPair(
        const float* table,
        const uint8_t* __restrict__ c0,
        const uint8_t* __restrict__ c1,
        int M,
        int sub,
        bool valid0,
        bool valid1,
        float& out0,
        float& out1) {
    float acc0 = 0.f, acc1 = 0.f;
#pragma unroll 4
    for (int m = sub; m < M; m += kGroup) {
        const int b0 = valid0 ? int(__ldg(c0 + m)) : 0;
        const int b1 = valid1 ? int(__ldg(c1 + m)) : 0;
        acc0 += table[m * kBangPqCentroids + b0];
        acc1 += table[m * kBangPqCentroids + b1];
    }
    groupReducePair(acc0, acc1);
    out0 = acc0;
    out1 = acc1;
}

/// Traversal distances of nodes id0 and id1 (-1: none) in the search's walk.
template <Walk W>
__device__ __forceinline__ void traversalPair(
        const Smem& s,
        const BangGraphView& g,
        int32_t id0,
        int32_t id1,
        int sub,
        float& d0,
        float& d1) {
    const int64_t r0 = id0 < 0 ? 0 : id0, r1 = id1 < 0 ? 0 : id1;
    if constexpr (W == Walk::kPq) {
        groupAdcPair(
                s.table, g.codes + r0 * g.pqM, g.codes + r1 * g.pqM, g.pqM, sub, id0 >= 0, id1 >= 0,
                d0, d1);
    } else if constexpr (W == Walk::kByteRows) {
        groupL2Pair(
                s.q, g.byteVectors + r0 * g.d, g.byteVectors + r1 * g.d, g.d, sub, id0 >= 0,
                id1 >= 0, d0, d1);
    } else {
        groupL2Pair(
                s.q, g.vectors + r0 * g.d, g.vectors + r1 * g.d, g.d, sub, id0 >= 0, id1 >= 0, d0,
                d1);
    }
}

/// PQ mode: fills the query's ADC table (the query must be loaded and visible). Ends
/// with a barrier. Exact mode: nothing.
template <Walk W>
__device__ void buildTable(const Smem& s, const BangGraphView& g) {
    if constexpr (W == Walk::kPq) {
        const int dsub = g.d / g.pqM;
        for (int e = threadIdx.x; e < g.pqM * kBangPqCentroids; e += kBangThreads) {
            const int m = e / kBangPqCentroids;
            s.table[e] = bangPqTableEntry(s.q + m * dsub, g.pqCentroids + size_t(e) * dsub, dsub);
        }
        __syncthreads();
    }
}

/// Number of entries of the unsorted array a[0, m) below key.
__device__ inline int countBelowUnsorted(const uint64_t* a, int m, uint64_t key) {
    int c = 0;
    for (int i = 0; i < m; ++i) {
        c += a[i] < key;
    }
    return c;
}

/// Number of entries of the sorted array a[0, m) below key.
__device__ inline int countBelow(const uint64_t* a, int m, uint64_t key) {
    int lo = 0, hi = m;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (a[mid] < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/// Copies the query to shared memory; returns (to every thread) whether it holds a
/// NaN or an infinity. Ends with a barrier.
__device__ inline bool loadQuery(const Smem& s, const float* qg, int d) {
    int bad = 0;
    for (int j = threadIdx.x; j < d; j += kBangThreads) {
        const float v = qg[j];
        s.q[j] = v;
        bad |= !isfinite(v);
    }
    return __syncthreads_or(bad) != 0;
}

/// Empty worklist. No barrier.
__device__ inline void clearWorklist(const Smem& s, int L) {
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        s.keys[i] = kBangEmptyKey;
        s.vis[i] = 0;
        if (s.res) {
            s.res[i] = kBangEmptyKey;
        }
    }
}

/// Where query q starts: its hub (BangSearchArgs::entryKeys) or the graph's entry point.
__device__ inline int32_t queryEntry(const BangGraphView& g, const BangSearchArgs& a, int64_t q) {
    const int64_t h = a.entryKeys ? bangEntryHub(a.entryKeys[q]) : -1;
    return h >= 0 ? int32_t(bangHubNode(h, g.n, a.hubs)) : g.entry;
}

/// `entry` as the only worklist entry, marked in the filter. The worklist must be clear
/// (and visible: call after a barrier), and in PQ mode the table built. Ends with a
/// barrier.
template <Walk W>
__device__ void seedEntry(const Smem& s, const BangGraphView& g, int32_t entry, uint32_t* bloom) {
    if (threadIdx.x < 32) {
        float dist, unused;
        traversalPair<W>(s, g, entry, -1, threadIdx.x % kGroup, dist, unused);
        if (threadIdx.x == 0) {
            s.keys[0] = bangKey(dist, entry);
            bloomSet(bloom, uint32_t(entry));
            if (s.res && idFilterAllows(s.allow, entry)) {
                s.res[0] = s.keys[0];
            }
        }
    }
    __syncthreads();
}

/// Position of the best unexpanded worklist entry, or -1. Ends with a barrier.
__device__ inline int selectParent(const Smem& s, int L) {
    if (threadIdx.x == 0) {
        s.scal[0] = INT_MAX;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        if (s.keys[i] != kBangEmptyKey && !s.vis[i]) {
            atomicMin(&s.scal[0], i);
        }
    }
    __syncthreads();
    const int pos = s.scal[0];
    __syncthreads();
    return pos == INT_MAX ? -1 : pos;
}

/// Filtered search: merges the allowed candidates into the sorted result list (as
/// mergeCandidates, without expanded flags). Must follow mergeCandidates (s.cand is
/// then free to change). Swaps the result buffers. Ends with a barrier.
__device__ inline void mergeResults(Smem& s, int L, int P) {
    for (int j = threadIdx.x; j < P; j += kBangThreads) {
        const uint64_t key = s.cand[j];
        if (key != kBangEmptyKey && !idFilterAllows(s.allow, bangKeyId(key))) {
            s.cand[j] = kBangEmptyKey;
        }
    }
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        s.resNext[i] = kBangEmptyKey;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        const uint64_t key = s.res[i];
        if (key != kBangEmptyKey) {
            const int pos = i + countBelowUnsorted(s.cand, P, key);
            if (pos < L) {
                s.resNext[pos] = key;
            }
        }
    }
    for (int j = threadIdx.x; j < P; j += kBangThreads) {
        const uint64_t key = s.cand[j];
        if (key != kBangEmptyKey) {
            const int pos = countBelowUnsorted(s.cand, P, key) + countBelow(s.res, L, key);
            if (pos < L) {
                s.resNext[pos] = key;
            }
        }
    }
    __syncthreads();
    uint64_t* r = s.res;
    s.res = s.resNext;
    s.resNext = r;
}

/// Merges the (unsorted) candidates into the sorted worklist, keeping the best L:
/// every entry's new position is its rank among the worklist plus its rank among the
/// candidates (keys are unique: the filter never lets a node in twice), so no sort is
/// needed. keysNext / visNext must be cleared and visible. Swaps the buffers. Ends
/// with a barrier.
__device__ inline void mergeCandidates(Smem& s, int L, int P) {
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        const uint64_t key = s.keys[i];
        if (key != kBangEmptyKey) {
            const int pos = i + countBelowUnsorted(s.cand, P, key);
            if (pos < L) {
                s.keysNext[pos] = key;
                s.visNext[pos] = s.vis[i];
            }
        }
    }
    for (int j = threadIdx.x; j < P; j += kBangThreads) {
        const uint64_t key = s.cand[j];
        if (key != kBangEmptyKey) {
            const int pos = countBelowUnsorted(s.cand, P, key) + countBelow(s.keys, L, key);
            if (pos < L) {
                s.keysNext[pos] = key;
                s.visNext[pos] = 0;
            }
        }
    }
    __syncthreads();
    uint64_t* k = s.keys;
    s.keys = s.keysNext;
    s.keysNext = k;
    uint8_t* v = s.vis;
    s.vis = s.visNext;
    s.visNext = v;
}

/// One iteration after the parent was chosen: filter, distances, merge.
/// All the filter's tests come before its insertions (a barrier apart), so the result
/// does not depend on thread timing. Ends with a barrier.
template <Walk W>
__device__ void expandParent(
        Smem& s,
        const BangGraphView& g,
        uint32_t* bloom,
        int32_t parent,
        int L) {
    const int P = nextPow2(g.R);
    const int32_t* row = g.graph + int64_t(parent) * g.R;
    for (int i = threadIdx.x; i < P; i += kBangThreads) {
        int32_t id = -1;
        if (i < g.R) {
            id = row[i];
            if (id >= 0 && bangBloomTest(bloom, uint32_t(id))) {
                id = -1;
            }
        }
        s.candId[i] = id;
    }
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        s.keysNext[i] = kBangEmptyKey;
        s.visNext[i] = 0;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < g.R; i += kBangThreads) {
        const int32_t id = s.candId[i];
        if (id >= 0) {
            bloomSet(bloom, uint32_t(id));
        }
    }
    const int grp = threadIdx.x / kGroup, sub = threadIdx.x % kGroup;
    for (int base = 0; base < P; base += 2 * kGroups) {
        const int slot0 = base + grp, slot1 = base + kGroups + grp;
        const int32_t id0 = slot0 < P ? s.candId[slot0] : -1;
        const int32_t id1 = slot1 < P ? s.candId[slot1] : -1;
        float d0, d1;
        traversalPair<W>(s, g, id0, id1, sub, d0, d1);
        if (sub == 0) {
            if (slot0 < P) {
                s.cand[slot0] = id0 >= 0 ? bangKey(d0, id0) : kBangEmptyKey;
            }
            if (slot1 < P) {
                s.cand[slot1] = id1 >= 0 ? bangKey(d1, id1) : kBangEmptyKey;
            }
        }
    }
    __syncthreads();
    mergeCandidates(s, L, P);
    if (s.res) {
        mergeResults(s, L, P);
    }
}

/// PQ mode's end: replaces the L (ADC distance, id) keys of `keys` by exact (squared L2
/// distance, id) keys of the same nodes, sorted. The query must be loaded and visible;
/// scratch (L keys) is overwritten. Ends with a barrier.
__device__ inline void rerankExactList(
        const Smem& s,
        const BangGraphView& g,
        int L,
        uint64_t* keys,
        uint64_t* scratch) {
    const int grp = threadIdx.x / kGroup, sub = threadIdx.x % kGroup;
    for (int base = 0; base < L; base += 2 * kGroups) {
        const int i0 = base + grp, i1 = base + kGroups + grp;
        const uint64_t k0 = i0 < L ? keys[i0] : kBangEmptyKey;
        const uint64_t k1 = i1 < L ? keys[i1] : kBangEmptyKey;
        const int32_t id0 = k0 == kBangEmptyKey ? -1 : bangKeyId(k0);
        const int32_t id1 = k1 == kBangEmptyKey ? -1 : bangKeyId(k1);
        float d0, d1;
        groupL2Pair(
                s.q, g.vectors + int64_t(id0 < 0 ? 0 : id0) * g.d,
                g.vectors + int64_t(id1 < 0 ? 0 : id1) * g.d, g.d, sub, id0 >= 0, id1 >= 0, d0, d1);
        if (sub == 0) {
            if (i0 < L) {
                scratch[i0] = id0 >= 0 ? bangKey(d0, id0) : kBangEmptyKey;
            }
            if (i1 < L) {
                scratch[i1] = id1 >= 0 ? bangKey(d1, id1) : kBangEmptyKey;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        keys[i] = kBangEmptyKey;
    }
    __syncthreads();
    // Keys are unique (the worklist never holds a node twice): each one's rank is its
    // position.
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        const uint64_t key = scratch[i];
        if (key != kBangEmptyKey) {
            keys[countBelowUnsorted(scratch, L, key)] = key;
        }
    }
    __syncthreads();
}

/// PQ mode's end for the worklist (rerankExactList over keys, keysNext as scratch).
__device__ inline void rerankExact(const Smem& s, const BangGraphView& g, int L) {
    rerankExactList(s, g, L, s.keys, s.keysNext);
}

__device__ inline void writeResults(const uint64_t* keys, int k, float* outD, int64_t* outI) {
    for (int j = threadIdx.x; j < k; j += kBangThreads) {
        const uint64_t key = keys[j];
        const bool missing = key == kBangEmptyKey;
        outD[j] = missing ? CUDART_INF_F : bangKeyDist(key);
        outI[j] = missing ? -1 : int64_t(bangKeyId(key));
    }
}

/// Sub-quantizers of the table a search of this walk holds in shared memory.
template <Walk W>
__host__ __device__ inline int tableM(const BangGraphView& g) {
    return W == Walk::kPq ? g.pqM : 0;
}

template <Walk W>
__global__ void __launch_bounds__(kBangThreads, kBangMinBlocks)
        persistentKernel(BangGraphView g, BangSearchArgs a) {
    extern __shared__ __align__(16) char smem[];
    Smem s = carve(smem, a.L, g.R, g.d, true, tableM<W>(g), a.allow);
    const int64_t q = blockIdx.x;
    for (int i = threadIdx.x; i < kBangBloomWords; i += kBangThreads) {
        s.bloom[i] = 0;
    }
    clearWorklist(s, a.L);
    const bool bad = loadQuery(s, a.queries + q * g.d, g.d);
    int iterations = 0;
    if (!bad) {
        buildTable<W>(s, g);
        seedEntry<W>(s, g, queryEntry(g, a, q), s.bloom);
        while (true) {
            const int pos = selectParent(s, a.L);
            if (pos < 0) {
                break;
            }
            const int32_t parent = bangKeyId(s.keys[pos]);
            if (threadIdx.x == 0) {
                s.vis[pos] = 1;
                if (a.visited != nullptr && iterations < a.maxVisited) {
                    a.visited[q * a.maxVisited + iterations] = parent;
                }
            }
            ++iterations;
            expandParent<W>(s, g, s.bloom, parent, a.L);
        }
        if constexpr (W == Walk::kPq) {
            if (s.res) {
                rerankExactList(s, g, a.L, s.res, s.resNext);
            } else {
                rerankExact(s, g, a.L);
            }
        }
    }
    writeResults(s.res ? s.res : s.keys, a.k, a.outD + q * a.k, a.outI + q * a.k);
    if (a.iterations != nullptr && threadIdx.x == 0) {
        a.iterations[q] = iterations;
    }
}

/// The launcher of one walk (arguments checked by the caller in bang_search.cu).
template <Walk W>
void persistentLaunch(const BangGraphView& g, const BangSearchArgs& a, cudaStream_t stream) {
    const size_t smem = layoutFor(a.L, g.R, g.d, true, tableM<W>(g), a.allow != nullptr).total;
    raiseDynamicSmemLimit(persistentKernel<W>, smem);
    persistentKernel<W><<<unsigned(a.nq), kBangThreads, smem, stream>>>(g, a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

extern template void persistentLaunch<Walk::kFloatRows>(
        const BangGraphView&,
        const BangSearchArgs&,
        cudaStream_t);
extern template void persistentLaunch<Walk::kByteRows>(
        const BangGraphView&,
        const BangSearchArgs&,
        cudaStream_t);
extern template void persistentLaunch<Walk::kPq>(
        const BangGraphView&,
        const BangSearchArgs&,
        cudaStream_t);

} // namespace bang
} // namespace kernels
} // namespace faiss_ext
