// BANG greedy graph search: one thread block per query walks the graph from the entry
// point. Each iteration (fused): pick the best unvisited worklist entry as parent, drop
// its neighbours already seen (per-query Bloom filter), compute the others' exact
// squared L2 distances (8 lanes per neighbour, float4 loads, two rows per group in
// flight) as (distance, id) keys, and merge them into the sorted worklist of L entries
// by rank (each key's rank among the candidates plus among the worklist: no sort). The
// search ends when every worklist entry has been expanded.
#include <climits>

#include <math_constants.h>

#include "BangBloom.h"
#include "BangSearch.h"
#include "CudaCheck.h"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kGroup = 8; // lanes per neighbour
constexpr int kGroups = kBangThreads / kGroup;
/// Blocks per SM the register budget is held to (65536 / (6 * 256) = 42 registers).
constexpr int kBangMinBlocks = 6;

__host__ __device__ inline size_t align16(size_t v) {
    return (v + 15) & ~size_t(15);
}

/// Byte offsets of one block's shared state.
struct Layout {
    size_t keysA, keysB, cand, query, bloom, candId, scal, visA, visB, total;
};

__host__ __device__ inline Layout layoutFor(int L, int R, int d, bool withBloom) {
    const int P = nextPow2(R);
    Layout l;
    size_t off = 0;
    l.keysA = off;
    off += size_t(L) * 8;
    l.keysB = off;
    off += size_t(L) * 8;
    l.cand = off;
    off += size_t(P) * 8;
    off = align16(off);
    l.query = off;
    off += align16(size_t(d) * 4);
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
    l.total = align16(off);
    return l;
}

struct Smem {
    uint64_t* keys;     ///< current worklist, sorted, kBangEmptyKey at the end
    uint64_t* keysNext; ///< merge target
    uint8_t* vis;       ///< expanded flags of keys
    uint8_t* visNext;
    uint64_t* cand;     ///< this iteration's candidates (P keys)
    int32_t* candId;    ///< parent's neighbours that passed the filter, else -1
    float* q;
    uint32_t* bloom;    ///< shared Bloom filter (persistent kernel only)
    int* scal;
};

__device__ inline Smem carve(char* base, int L, int R, int d, bool withBloom) {
    const Layout l = layoutFor(L, R, d, withBloom);
    Smem s;
    s.keys = reinterpret_cast<uint64_t*>(base + l.keysA);
    s.keysNext = reinterpret_cast<uint64_t*>(base + l.keysB);
    s.cand = reinterpret_cast<uint64_t*>(base + l.cand);
    s.q = reinterpret_cast<float*>(base + l.query);
    s.bloom = withBloom ? reinterpret_cast<uint32_t*>(base + l.bloom) : nullptr;
    s.candId = reinterpret_cast<int32_t*>(base + l.candId);
    s.scal = reinterpret_cast<int*>(base + l.scal);
    s.vis = reinterpret_cast<uint8_t*>(base + l.visA);
    s.visNext = reinterpret_cast<uint8_t*>(base + l.visB);
    return s;
}

__device__ inline void bloomSet(uint32_t* words, uint32_t id) {
    const uint32_t a = bangBloomHash1(id), b = bangBloomHash2(id);
    atomicOr(&words[a >> 5], 1u << (a & 31));
    atomicOr(&words[b >> 5], 1u << (b & 31));
}

/// Squared L2 distances of q to rows x0 and x1, each summed by one group of 8 lanes:
/// two rows per group, so that both rows' loads are in flight together. Every lane of
/// the warp must call it (the reductions shuffle over the whole warp). An invalid row
/// is not read and its result is meaningless. All 8 lanes return the sums. A row's sum
/// is formed in the same order whatever the other row is.
__device__ __forceinline__ void groupL2Pair(
        const float* q,
        const float* __restrict__ x0,
        const float* __restrict__ x1,
        int d,
        int sub,
        bool valid0,
        bool valid1,
        float& out0,
        float& out1) {
    float acc0 = 0.f, acc1 = 0.f;
    if ((d & 3) == 0) {
        const float4* a4 = reinterpret_cast<const float4*>(x0);
        const float4* b4 = reinterpret_cast<const float4*>(x1);
        const float4* q4 = reinterpret_cast<const float4*>(q);
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
        for (int j = sub; j < (d >> 2); j += kGroup) {
            const float4 a = valid0 ? __ldg(a4 + j) : zero;
            const float4 b = valid1 ? __ldg(b4 + j) : zero;
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
            const float a = valid0 ? __ldg(x0 + j) : 0.f;
            const float b = valid1 ? __ldg(x1 + j) : 0.f;
            float t = q[j] - a;
            acc0 = fmaf(t, t, acc0);
            t = q[j] - b;
            acc1 = fmaf(t, t, acc1);
        }
    }
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 4);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 4);
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 2);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 2);
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 1);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 1);
    out0 = acc0;
    out1 = acc1;
}

/// One row's distance (groupL2Pair's arithmetic, for the entry point and the table).
__device__ __forceinline__ float groupL2(
        const float* q, const float* __restrict__ x, int d, int sub, bool valid) {
    float dist, unused;
    groupL2Pair(q, x, x, d, sub, valid, false, dist, unused);
    return dist;
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
__device__ bool loadQuery(const Smem& s, const float* qg, int d) {
    int bad = 0;
    for (int j = threadIdx.x; j < d; j += kBangThreads) {
        const float v = qg[j];
        s.q[j] = v;
        bad |= !isfinite(v);
    }
    return __syncthreads_or(bad) != 0;
}

/// Empty worklist. No barrier.
__device__ void clearWorklist(const Smem& s, int L) {
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        s.keys[i] = kBangEmptyKey;
        s.vis[i] = 0;
    }
}

/// The entry point as the only worklist entry, marked in the filter. The worklist
/// must be clear (and visible: call after a barrier). Ends with a barrier.
__device__ void seedEntry(const Smem& s, const BangGraphView& g, uint32_t* bloom) {
    if (threadIdx.x < 32) {
        const float dist = groupL2(
                s.q, g.vectors + int64_t(g.entry) * g.d, g.d, threadIdx.x % kGroup, true);
        if (threadIdx.x == 0) {
            s.keys[0] = bangKey(dist, g.entry);
            bloomSet(bloom, uint32_t(g.entry));
        }
    }
    __syncthreads();
}

/// Position of the best unexpanded worklist entry, or -1. Ends with a barrier.
__device__ int selectParent(const Smem& s, int L) {
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

/// Merges the (unsorted) candidates into the sorted worklist, keeping the best L:
/// every entry's new position is its rank among the worklist plus its rank among the
/// candidates (keys are unique: the filter never lets a node in twice), so no sort is
/// needed. keysNext / visNext must be cleared and visible. Swaps the buffers. Ends
/// with a barrier.
__device__ void mergeCandidates(Smem& s, int L, int P) {
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
__device__ void expandParent(Smem& s, const BangGraphView& g, uint32_t* bloom, int32_t parent, int L) {
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
        groupL2Pair(
                s.q, g.vectors + int64_t(id0 < 0 ? 0 : id0) * g.d,
                g.vectors + int64_t(id1 < 0 ? 0 : id1) * g.d, g.d, sub, id0 >= 0, id1 >= 0, d0,
                d1);
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
}

__device__ void writeResults(const uint64_t* keys, int k, float* outD, int64_t* outI) {
    for (int j = threadIdx.x; j < k; j += kBangThreads) {
        const uint64_t key = keys[j];
        const bool missing = key == kBangEmptyKey;
        outD[j] = missing ? CUDART_INF_F : bangKeyDist(key);
        outI[j] = missing ? -1 : int64_t(bangKeyId(key));
    }
}

__global__ void __launch_bounds__(kBangThreads, kBangMinBlocks)
        persistentKernel(BangGraphView g, BangSearchArgs a) {
    extern __shared__ __align__(16) char smem[];
    Smem s = carve(smem, a.L, g.R, g.d, true);
    const int64_t q = blockIdx.x;
    for (int i = threadIdx.x; i < kBangBloomWords; i += kBangThreads) {
        s.bloom[i] = 0;
    }
    clearWorklist(s, a.L);
    const bool bad = loadQuery(s, a.queries + q * g.d, g.d);
    int iterations = 0;
    if (!bad) {
        seedEntry(s, g, s.bloom);
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
            expandParent(s, g, s.bloom, parent, a.L);
        }
    }
    writeResults(s.keys, a.k, a.outD + q * a.k, a.outI + q * a.k);
    if (a.iterations != nullptr && threadIdx.x == 0) {
        a.iterations[q] = iterations;
    }
}

/// The step variant's per-query state in global memory.
struct StepState {
    uint64_t* keys;   ///< nq x L
    uint32_t* bloom;  ///< nq x kBangBloomWords
    int32_t* iters;   ///< nq
    int32_t* done;    ///< nq
    uint8_t* vis;     ///< nq x L
};

__host__ __device__ inline size_t stepStateBytes(int64_t nq, int L) {
    return size_t(nq) * (size_t(L) * 8 + size_t(kBangBloomWords) * 4 + 8 + size_t(L));
}

StepState carveState(void* base, int64_t nq, int L) {
    char* p = static_cast<char*>(base);
    StepState st;
    st.keys = reinterpret_cast<uint64_t*>(p);
    p += size_t(nq) * L * 8;
    st.bloom = reinterpret_cast<uint32_t*>(p);
    p += size_t(nq) * kBangBloomWords * 4;
    st.iters = reinterpret_cast<int32_t*>(p);
    p += size_t(nq) * 4;
    st.done = reinterpret_cast<int32_t*>(p);
    p += size_t(nq) * 4;
    st.vis = reinterpret_cast<uint8_t*>(p);
    return st;
}

__device__ void storeWorklist(const Smem& s, const StepState& st, int64_t q, int L) {
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        st.keys[q * L + i] = s.keys[i];
        st.vis[q * L + i] = s.vis[i];
    }
}

/// One iteration of every unfinished query. Only ever sets *continueFlag.
__global__ void __launch_bounds__(kBangThreads, kBangMinBlocks) stepKernel(
        BangGraphView g, BangSearchArgs a, StepState st, int* continueFlag, int first) {
    const int64_t q = blockIdx.x;
    if (!first && st.done[q]) {
        return;
    }
    extern __shared__ __align__(16) char smem[];
    Smem s = carve(smem, a.L, g.R, g.d, false);
    uint32_t* bloom = st.bloom + q * kBangBloomWords;
    const bool bad = loadQuery(s, a.queries + q * g.d, g.d);
    if (first) {
        clearWorklist(s, a.L);
        if (threadIdx.x == 0) {
            st.iters[q] = 0;
            st.done[q] = 0;
        }
        __syncthreads();
        if (bad) {
            storeWorklist(s, st, q, a.L);
            if (threadIdx.x == 0) {
                st.done[q] = 1;
            }
            return;
        }
        seedEntry(s, g, bloom);
    } else {
        for (int i = threadIdx.x; i < a.L; i += kBangThreads) {
            s.keys[i] = st.keys[q * a.L + i];
            s.vis[i] = st.vis[q * a.L + i];
        }
        __syncthreads();
    }
    int pos = selectParent(s, a.L);
    if (pos >= 0) {
        const int32_t parent = bangKeyId(s.keys[pos]);
        if (threadIdx.x == 0) {
            s.vis[pos] = 1;
            st.iters[q] += 1;
        }
        expandParent(s, g, bloom, parent, a.L);
        pos = selectParent(s, a.L);
    }
    storeWorklist(s, st, q, a.L);
    if (threadIdx.x == 0) {
        if (pos >= 0) {
            *continueFlag = 1;
        } else {
            st.done[q] = 1;
        }
    }
}

__global__ void stepResultsKernel(BangSearchArgs a, StepState st) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= a.nq * a.k) {
        return;
    }
    const int64_t q = i / a.k;
    const int j = int(i % a.k);
    const uint64_t key = st.keys[q * a.L + j];
    const bool missing = key == kBangEmptyKey;
    a.outD[i] = missing ? CUDART_INF_F : bangKeyDist(key);
    a.outI[i] = missing ? -1 : int64_t(bangKeyId(key));
    if (a.iterations != nullptr && j == 0) {
        a.iterations[q] = st.iters[q];
    }
}

__global__ void distanceTableKernel(
        const float* queries, int64_t nq, const float* base, int64_t nb, int d, float* out) {
    const int64_t pair = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kGroup;
    const int sub = threadIdx.x % kGroup;
    const bool valid = pair < nq * nb;
    const int64_t qi = valid ? pair / nb : 0;
    const int64_t b = valid ? pair % nb : 0;
    const float dist = groupL2(queries + qi * d, base + b * d, d, sub, valid);
    if (valid && sub == 0) {
        out[pair] = dist;
    }
}

template <typename Kernel>
void setSmem(Kernel kernel, size_t bytes) {
    if (bytes > 48 * 1024) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    }
}

void checkArgs(const BangGraphView& g, const BangSearchArgs& a) {
    FAISS_ASSERT(g.n >= 1 && g.n <= INT_MAX && g.d >= 1);
    FAISS_ASSERT(g.R >= 1 && g.R <= kBangMaxDegree);
    FAISS_ASSERT(g.entry >= 0 && g.entry < g.n);
    FAISS_ASSERT(a.L >= 1 && a.L <= kBangMaxL && a.k >= 1 && a.k <= a.L);
    FAISS_ASSERT(a.nq >= 1 && a.nq <= INT_MAX);
}

} // namespace

size_t bangPersistentSmemBytes(int L, int R, int d) {
    return layoutFor(L, R, d, true).total;
}

size_t bangStepSmemBytes(int L, int R, int d) {
    return layoutFor(L, R, d, false).total;
}

size_t bangStepStateBytesPerQuery(int L) {
    return stepStateBytes(1, L);
}

void bangSearchPersistent(const BangGraphView& g, const BangSearchArgs& a, cudaStream_t stream) {
    checkArgs(g, a);
    FAISS_ASSERT(a.visited == nullptr || a.maxVisited >= 1);
    const size_t smem = bangPersistentSmemBytes(a.L, g.R, g.d);
    setSmem(persistentKernel, smem);
    persistentKernel<<<unsigned(a.nq), kBangThreads, smem, stream>>>(g, a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

int bangSearchStepwise(
        const BangGraphView& g,
        const BangSearchArgs& a,
        void* state,
        size_t stateBytes,
        int* continueFlagDevice,
        cudaStream_t stream) {
    checkArgs(g, a);
    FAISS_ASSERT(a.visited == nullptr);
    FAISS_ASSERT(stateBytes >= stepStateBytes(a.nq, a.L));
    const StepState st = carveState(state, a.nq, a.L);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(
            st.bloom, 0, size_t(a.nq) * kBangBloomWords * 4, stream));
    const size_t smem = bangStepSmemBytes(a.L, g.R, g.d);
    setSmem(stepKernel, smem);
    int launches = 0;
    for (int first = 1;; first = 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(continueFlagDevice, 0, sizeof(int), stream));
        stepKernel<<<unsigned(a.nq), kBangThreads, smem, stream>>>(
                g, a, st, continueFlagDevice, first);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
        ++launches;
        int more = 0;
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                &more, continueFlagDevice, sizeof(int), cudaMemcpyDeviceToHost, stream));
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (!more) {
            break;
        }
    }
    const int64_t total = a.nq * a.k;
    stepResultsKernel<<<unsigned((total + 255) / 256), 256, 0, stream>>>(a, st);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    return launches;
}

void bangDistanceTable(
        const float* queries,
        int64_t nq,
        const float* base,
        int64_t nb,
        int d,
        float* out,
        cudaStream_t stream) {
    const int64_t pairs = nq * nb;
    if (pairs == 0) {
        return;
    }
    const int64_t blocks = (pairs + kGroups - 1) / kGroups;
    FAISS_THROW_IF_NOT_FMT(
            blocks <= INT_MAX, "bangDistanceTable: %lld pairs is too many",
            (long long)pairs);
    distanceTableKernel<<<unsigned(blocks), kBangThreads, 0, stream>>>(
            queries, nq, base, nb, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
