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

#include <math_constants.h>
#include <cstdint>

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

/// The float's bits made monotonic: unsigned order is the floats' order (-inf first,
/// -0.0 before +0.0, NaN of either sign at the ends).
__device__ __forceinline__ uint32_t orderedFloatBits(float value) {
    const uint32_t u = __float_as_uint(value);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/// A (value, position) pair as one 64-bit key that orders like the pair: the float's
/// ordered bits in the high word, the position in the low word (as unsigned, so
/// -1 sorts last). One load and one compare per element in the sorts, and a total
/// order, so equal values come out the same way whatever order warps appended them in.
__device__ __forceinline__ uint64_t selectKey(float value, int position) {
    return (uint64_t(orderedFloatBits(value)) << 32) | uint32_t(position);
}

__device__ __forceinline__ float selectKeyValue(uint64_t key) {
    uint32_t u = uint32_t(key >> 32);
    u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    return __uint_as_float(u);
}

__device__ __forceinline__ int selectKeyPosition(uint64_t key) {
    return int(uint32_t(key));
}

/// selectKey(+inf, -1): an empty slot, after every real candidate.
constexpr uint64_t kSelectEmptyKey = 0xff800000ffffffffull;

/// Shared memory layout of one block's selection state.
struct BlockSelectSmem {
    uint64_t* top; ///< kp best keys, sorted
    uint64_t* buf; ///< cap candidate keys
    int* count;
    int k;
    int kp;
    int cap;

    __device__ static BlockSelectSmem carve(char* smem, int k) {
        BlockSelectSmem s;
        s.k = k;
        s.kp = nextPow2(k);
        s.cap = selectBufferCapacity(k);
        s.top = reinterpret_cast<uint64_t*>(smem);
        s.buf = s.top + s.kp;
        s.count = reinterpret_cast<int*>(s.buf + s.cap);
        return s;
    }
    __device__ float value(int i) const {
        return selectKeyValue(top[i]);
    }
    __device__ int position(int i) const {
        return selectKeyPosition(top[i]);
    }
};

__device__ inline void compareSwap(uint64_t* keys, int lo, int hi, bool ascending) {
    uint64_t a = keys[lo];
    uint64_t b = keys[hi];
    if ((a > b) == ascending && a != b) {
        keys[lo] = b;
        keys[hi] = a;
    }
}

/// Sorts len (a power of two) keys ascending. Ends with a barrier.
template <int kThreads>
__device__ void bitonicSort(uint64_t* keys, int len) {
    for (int size = 2; size <= len; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < len / 2; i += kThreads) {
                int lo = 2 * i - (i & (stride - 1));
                compareSwap(keys, lo, lo + stride, (lo & size) == 0);
            }
            __syncthreads();
        }
    }
}

/// Sorts a bitonic sequence of len (a power of two) keys ascending. Ends with a barrier.
template <int kThreads>
__device__ void bitonicMerge(uint64_t* keys, int len) {
    for (int stride = len >> 1; stride > 0; stride >>= 1) {
        for (int i = threadIdx.x; i < len / 2; i += kThreads) {
            int lo = 2 * i - (i & (stride - 1));
            compareSwap(keys, lo, lo + stride, true);
        }
        __syncthreads();
    }
}

/// Merges the candidate buffer into the best list; returns the new threshold (the k-th
/// best key's ordered float bits). Call with all threads after a barrier.
template <int kThreads>
__device__ uint32_t flushCandidates(BlockSelectSmem& s) {
    int n = *s.count;
    int len = nextPow2(n > s.kp ? n : s.kp);
    for (int i = n + threadIdx.x; i < len; i += kThreads) {
        s.buf[i] = kSelectEmptyKey;
    }
    __syncthreads();
    bitonicSort<kThreads>(s.buf, len);
    // best (ascending) against the buffer's first kp reversed: the pointwise minimum is
    // a bitonic sequence holding the kp smallest of both.
    for (int i = threadIdx.x; i < s.kp; i += kThreads) {
        uint64_t b = s.buf[s.kp - 1 - i];
        if (b < s.top[i]) {
            s.top[i] = b;
        }
    }
    __syncthreads();
    bitonicMerge<kThreads>(s.top, s.kp);
    if (threadIdx.x == 0) {
        *s.count = 0;
    }
    const uint32_t threshold = uint32_t(s.top[s.k - 1] >> 32);
    __syncthreads();
    return threshold;
}

/// Runs the selection over positions [0, n): load(pos) gives the value at pos.
/// Within a warp, consecutive lanes load consecutive positions. Leaves the best k
/// sorted in s.top (position -1 where fewer than k values were finite). Positions
/// [0, sorted), sorted <= s.k, must hold values in ascending order (NaN and +inf last,
/// as a previous selection wrote them): they become the best list as they are, so a
/// merge of a running best with a few new values sorts only the new ones. The result is
/// the same as with sorted = 0.
template <int kThreads, int kItems, typename Loader>
__device__ void blockSelectMin(
        BlockSelectSmem& s,
        int64_t n,
        const Loader& load,
        int64_t sorted = 0) {
    for (int i = threadIdx.x; i < s.kp; i += kThreads) {
        uint64_t key = kSelectEmptyKey;
        if (i < sorted) {
            const float v = load(i);
            key = v < CUDART_INF_F ? selectKey(v, i) : kSelectEmptyKey; // as the stream's pass
        }
        s.top[i] = key;
    }
    if (threadIdx.x == 0) {
        *s.count = 0;
    }
    __syncthreads();

    const int lane = threadIdx.x & 31;
    const unsigned lanesBelow = (1u << lane) - 1;
    // Compared as ordered bits, not floats: -0.0 beats a +0.0 threshold, as in selectKey.
    uint32_t threshold =
            sorted >= s.k ? uint32_t(s.top[s.k - 1] >> 32) : orderedFloatBits(CUDART_INF_F);
    for (int64_t base = sorted; base < n; base += kThreads * kItems) {
        float v[kItems];
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            int64_t pos = base + j * kThreads + threadIdx.x;
            v[j] = pos < n ? load(pos) : CUDART_INF_F;
        }
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            const bool pass = orderedFloatBits(v[j]) < threshold && !isnan(v[j]);
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
                    s.buf[slot] = selectKey(v[j], int(base + j * kThreads + threadIdx.x));
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
