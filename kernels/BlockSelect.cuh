// Streaming block top-k: one thread block selects the k smallest of a stream of
// (value, position) pairs with a runtime k <= kMaxSelectK.
//
// State in shared memory: the current best kp = nextPow2(k) pairs, sorted, and a
// candidate buffer. Each step the block reads kSelectStep values; a value enters the
// buffer only if it beats the current k-th best (the threshold), so after the first
// steps almost nothing passes and the loop runs at the speed of the loads. When the
// buffer could overflow on the next step, it is bitonic-sorted and merged into the
// best list, which tightens the threshold.
#pragma once

#include <cstdint>
#include <math_constants.h>

#include "Select.h"

namespace faiss_ext {
namespace kernels {

constexpr int kSelectThreads = 256;
constexpr int kSelectItems = 4;
constexpr int kSelectStep = kSelectThreads * kSelectItems;
/// Results per thread when a block writes k <= kMaxSelectK pairs out.
constexpr int kSelectOutPerThread = kMaxSelectK / kSelectThreads;

/// The candidate buffer holds at least the best list and one spare step, so a flush
/// runs only once a whole step's worth of candidates has gathered (with room for
/// just one step, any single candidate would force a sort every step).
__host__ __device__ inline int selectBufferCapacity(int k) {
    int kp = nextPow2(k);
    return 2 * (kp > kSelectStep ? kp : kSelectStep);
}

/// Shared memory layout of one block's selection state.
struct BlockSelectSmem {
    float* topD;
    int* topP;
    float* bufD;
    int* bufP;
    int* count;
    int k;
    int kp;
    int cap;

    __device__ static BlockSelectSmem carve(char* smem, int k) {
        BlockSelectSmem s;
        s.k = k;
        s.kp = nextPow2(k);
        s.cap = selectBufferCapacity(k);
        s.topD = reinterpret_cast<float*>(smem);
        s.bufD = s.topD + s.kp;
        s.topP = reinterpret_cast<int*>(s.bufD + s.cap);
        s.bufP = s.topP + s.kp;
        s.count = s.bufP + s.cap;
        return s;
    }
};

/// Orders pairs by (value, position): a total order, so the result does not depend on
/// the order in which warps appended candidates, and equal values (exact float ties)
/// come out the same way on every run.
template <int kThreads>
__device__ inline void compareSwap(float* d, int* p, int lo, int hi, bool ascending) {
    float a = d[lo];
    float b = d[hi];
    int pa = p[lo];
    int pb = p[hi];
    bool aAfterB = a > b || (a == b && pa > pb);
    if (aAfterB == ascending && (a != b || pa != pb)) {
        d[lo] = b;
        d[hi] = a;
        p[lo] = pb;
        p[hi] = pa;
    }
}

/// Sorts len (a power of two) pairs ascending. Ends with a barrier.
template <int kThreads>
__device__ void bitonicSort(float* d, int* p, int len) {
    for (int size = 2; size <= len; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < len / 2; i += kThreads) {
                int lo = 2 * i - (i & (stride - 1));
                compareSwap<kThreads>(d, p, lo, lo + stride, (lo & size) == 0);
            }
            __syncthreads();
        }
    }
}

/// Sorts a bitonic sequence of len (a power of two) pairs ascending. Ends with a barrier.
template <int kThreads>
__device__ void bitonicMerge(float* d, int* p, int len) {
    for (int stride = len >> 1; stride > 0; stride >>= 1) {
        for (int i = threadIdx.x; i < len / 2; i += kThreads) {
            int lo = 2 * i - (i & (stride - 1));
            compareSwap<kThreads>(d, p, lo, lo + stride, true);
        }
        __syncthreads();
    }
}

/// Merges the candidate buffer into the best list; returns the new threshold.
/// Call with all threads after a barrier.
template <int kThreads>
__device__ float flushCandidates(BlockSelectSmem& s) {
    int n = *s.count;
    int len = nextPow2(n > s.kp ? n : s.kp);
    for (int i = n + threadIdx.x; i < len; i += kThreads) {
        s.bufD[i] = CUDART_INF_F;
        s.bufP[i] = -1;
    }
    __syncthreads();
    bitonicSort<kThreads>(s.bufD, s.bufP, len);
    // best (ascending) against the buffer's first kp reversed: the pointwise minimum is
    // a bitonic sequence holding the kp smallest of both.
    for (int i = threadIdx.x; i < s.kp; i += kThreads) {
        float b = s.bufD[s.kp - 1 - i];
        int pb = s.bufP[s.kp - 1 - i];
        if (b < s.topD[i] || (b == s.topD[i] && pb < s.topP[i])) {
            s.topD[i] = b;
            s.topP[i] = pb;
        }
    }
    __syncthreads();
    bitonicMerge<kThreads>(s.topD, s.topP, s.kp);
    if (threadIdx.x == 0) {
        *s.count = 0;
    }
    float threshold = s.topD[s.k - 1];
    __syncthreads();
    return threshold;
}

/// Runs the selection over positions [0, n): load(pos) gives the value at pos.
/// Within a warp, consecutive lanes load consecutive positions. Leaves the best k
/// sorted in s.topD / s.topP (position -1 where fewer than k values were finite).
template <int kThreads, int kItems, typename Loader>
__device__ void blockSelectMin(BlockSelectSmem& s, int64_t n, const Loader& load) {
    for (int i = threadIdx.x; i < s.kp; i += kThreads) {
        s.topD[i] = CUDART_INF_F;
        s.topP[i] = -1;
    }
    if (threadIdx.x == 0) {
        *s.count = 0;
    }
    __syncthreads();

    const int lane = threadIdx.x & 31;
    const unsigned lanesBelow = (1u << lane) - 1;
    float threshold = CUDART_INF_F;
    for (int64_t base = 0; base < n; base += kThreads * kItems) {
        float v[kItems];
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            int64_t pos = base + j * kThreads + threadIdx.x;
            v[j] = pos < n ? load(pos) : CUDART_INF_F;
        }
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            bool pass = v[j] < threshold; // false for NaN
            unsigned mask = __ballot_sync(0xffffffffu, pass);
            if (mask) {
                int leader = __ffs(mask) - 1;
                int first = 0;
                if (lane == leader) {
                    first = atomicAdd(s.count, __popc(mask));
                }
                first = __shfl_sync(0xffffffffu, first, leader);
                if (pass) {
                    int slot = first + __popc(mask & lanesBelow);
                    s.bufD[slot] = v[j];
                    s.bufP[slot] = int(base + j * kThreads + threadIdx.x);
                }
            }
        }
        __syncthreads();
        bool full = *s.count > s.cap - kThreads * kItems;
        __syncthreads();
        if (full) {
            threshold = flushCandidates<kThreads>(s);
        }
    }
    if (*s.count > 0) {
        flushCandidates<kThreads>(s);
    }
}

} // namespace kernels
} // namespace faiss_ext
