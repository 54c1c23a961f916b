// Streaming warp top-k in shared memory: one warp selects the k smallest of a stream of
// (value, position) pairs, kMaxWarpRegisterSelectK < nextPow2(k) <= kMaxWarpSelectK,
// with no block barrier. Used by the list-major IVF scan for those k only; smaller k use
// the register-resident WarpSelect (WarpSelect.cuh), one dispatcher in ivf_scan.cu choosing.
//
// Same scheme as BlockSelect.cuh, at warp scope: the best kp = nextPow2(k) keys sit
// sorted in shared memory, candidates that beat the k-th best (the threshold) are
// appended to a buffer by ballot (the count is a warp-uniform register, no atomics),
// and a full buffer is bitonic-sorted and merged in with __syncwarp between stages.
// The first flush comes as soon as k candidates have gathered, so the threshold is
// finite after the first step instead of after a whole buffer.
#pragma once

#include <math_constants.h>
#include <cstdint>

#include "BlockSelect.cuh"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

constexpr int kWarpSelectItems = 4;
constexpr int kWarpSelectStep = 32 * kWarpSelectItems;

/// Candidate buffer of one warp: a power of two with room for the best list and a
/// spare step.
__host__ __device__ constexpr int warpSelectBufferCapacity(int k) {
    return 2 * (nextPow2(k) > kWarpSelectStep ? nextPow2(k) : kWarpSelectStep);
}

/// Shared memory keys (8 bytes each) one warp's selection state needs.
__host__ __device__ constexpr int warpSelectSlots(int k) {
    return nextPow2(k) + warpSelectBufferCapacity(k);
}

/// Sorts len (a power of two) keys ascending with the 32 lanes of one warp.
__device__ inline void warpBitonicSort(uint64_t* keys, int len) {
    const int lane = threadIdx.x & 31;
    for (int size = 2; size <= len; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = lane; i < len / 2; i += 32) {
                int lo = 2 * i - (i & (stride - 1));
                compareSwap(keys, lo, lo + stride, (lo & size) == 0);
            }
            __syncwarp();
        }
    }
}

/// Sorts a bitonic sequence of len (a power of two) keys ascending, one warp.
__device__ inline void warpBitonicMerge(uint64_t* keys, int len) {
    const int lane = threadIdx.x & 31;
    for (int stride = len >> 1; stride > 0; stride >>= 1) {
        for (int i = lane; i < len / 2; i += 32) {
            int lo = 2 * i - (i & (stride - 1));
            compareSwap(keys, lo, lo + stride, true);
        }
        __syncwarp();
    }
}

/// One warp's selection state, carved from warpSelectSlots(k) keys of shared memory.
struct WarpSelectSmem {
    uint64_t* top; ///< kp best keys, sorted
    uint64_t* buf; ///< cap candidate keys
    int k;
    int kp;
    int cap;
    int count;       ///< candidates in buf (warp-uniform)
    float threshold; ///< value of the k-th best so far (warp-uniform)

    __device__ WarpSelectSmem(uint64_t* smem, int k_) : k(k_), kp(nextPow2(k_)) {
        cap = warpSelectBufferCapacity(k_);
        top = smem;
        buf = smem + kp;
        count = 0;
        threshold = CUDART_INF_F;
        for (int i = threadIdx.x & 31; i < kp; i += 32) {
            top[i] = kSelectEmptyKey;
        }
        __syncwarp();
    }

    /// Offers one value per lane (all 32 lanes must call).
    __device__ void add(float v, int position) {
        const int lane = threadIdx.x & 31;
        const bool pass = v < threshold; // false for NaN and +inf
        const unsigned mask = __ballot_sync(0xffffffffu, pass);
        if (pass) {
            buf[count + __popc(mask & ((1u << lane) - 1))] = selectKey(v, position);
        }
        count += __popc(mask);
    }

    /// Merges the buffer in when it could overflow on the next step, or as soon as it
    /// holds k candidates while the best list is still open (threshold +inf).
    __device__ void maybeFlush() {
        if (count > cap - kWarpSelectStep || (count >= k && threshold == CUDART_INF_F)) {
            flush();
        }
    }

    __device__ void flush() {
        const int lane = threadIdx.x & 31;
        const int len = nextPow2(count > kp ? count : kp);
        for (int i = count + lane; i < len; i += 32) {
            buf[i] = kSelectEmptyKey;
        }
        __syncwarp();
        warpBitonicSort(buf, len);
        // best (ascending) against the buffer's first kp reversed: the pointwise
        // minimum is a bitonic sequence holding the kp smallest of both.
        for (int i = lane; i < kp; i += 32) {
            const uint64_t b = buf[kp - 1 - i];
            if (b < top[i]) {
                top[i] = b;
            }
        }
        __syncwarp();
        warpBitonicMerge(top, kp);
        count = 0;
        threshold = selectKeyValue(top[k - 1]);
        __syncwarp();
    }

    /// Runs the selection over positions [0, n): load(pos) gives the value at pos;
    /// consecutive lanes load consecutive positions. Leaves the best k sorted in top
    /// (position -1 where fewer than k values were finite).
    template <typename Loader>
    __device__ void run(int64_t n, const Loader& load) {
        const int lane = threadIdx.x & 31;
        for (int64_t base = 0; base < n; base += kWarpSelectStep) {
            float v[kWarpSelectItems];
#pragma unroll
            for (int j = 0; j < kWarpSelectItems; ++j) {
                const int64_t pos = base + j * 32 + lane;
                v[j] = pos < n ? load(pos) : CUDART_INF_F;
            }
#pragma unroll
            for (int j = 0; j < kWarpSelectItems; ++j) {
                add(v[j], int(base + j * 32 + lane));
            }
            maybeFlush();
        }
        if (count > 0) {
            flush();
        }
    }

    __device__ float value(int i) const {
        return selectKeyValue(top[i]);
    }
    __device__ int position(int i) const {
        return selectKeyPosition(top[i]);
    }
};

} // namespace kernels
} // namespace faiss_ext
