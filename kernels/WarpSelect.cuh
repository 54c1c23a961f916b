// Streaming warp top-k in registers: one warp selects the k smallest of a stream of
// (value, position) pairs, for nextPow2(k) = kKp <= kMaxWarpRegisterSelectK (32), with
// no shared memory and no barrier (larger k: WarpSelectSmem.cuh). Studied from FAISS's
// WarpSelect (per-lane queues, warp-wide sorted list, shuffle merge networks).
//
// Every key is selectKey(value, position) (BlockSelect.cuh): a total order, value first,
// then position as unsigned. The warp keeps, in registers:
//  - the best list: the kKp smallest keys merged so far, ascending; lane i holds entry
//    i % kKp, so every aligned group of kKp lanes holds the whole list (the merge network
//    below is then the same code in every lane, and lane i < k holds result i);
//  - the threshold: entry k - 1 of the best list, the same in every lane (the empty key
//    while fewer than k values have been merged);
//  - a queue of kQueue keys a lane: its values whose key was below the threshold, not
//    yet merged.
// A step of values (kItems a lane) is first compared, as floats, against the
// threshold's value: only when some lane holds a value <= it (a superset of the keys
// below the threshold) are the step's values offered, each costing a key and a compare
// against the threshold; past the first steps most steps offer nothing. When some lane's queue
// is full (a warp vote after each value offered), the warp merges: the queues' slots
// are packed into rows of 32 keys (ballots; a slot's keys move into the row's empty
// lanes while they fit), and each row is bitonic-sorted within groups of kKp lanes by
// xor shuffles, the groups folded pairwise (the minimum of a sorted group and its
// partner group reversed is a bitonic sequence holding the kKp smallest of both; a
// bitonic merge sorts it) until every group holds the kKp smallest of the row, which is
// folded into the best list the same way. Every network has compile-time sizes: a row
// costs kKp = 16 21 compare-exchange stages, kKp = 1 six (a warp minimum).
// The result is the k smallest keys of the stream whatever the order of the merges: a
// key is dropped only when k smaller keys are already in the list.
// For kKp <= 4 there are no queues: each lane keeps its own kKp smallest keys sorted in
// registers and the lanes' lists are merged once at the end (runLaneLists); kKp = 1 is a
// lane minimum and a warp reduction (runMin). Rows that are 16-byte aligned can be read
// a float4 at a time (runQuads).
#pragma once

#include <math_constants.h>
#include <cassert>
#include <cstdint>

#include "BlockSelect.cuh"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

constexpr unsigned kWarpFullMask = 0xffffffffu;

/// key from lane (this lane ^ laneMask).
__device__ __forceinline__ uint64_t shuffleXorKey(uint64_t key, int laneMask) {
    const uint32_t lo = __shfl_xor_sync(kWarpFullMask, uint32_t(key), laneMask);
    const uint32_t hi = __shfl_xor_sync(kWarpFullMask, uint32_t(key >> 32), laneMask);
    return (uint64_t(hi) << 32) | lo;
}

/// key from lane srcLane.
__device__ __forceinline__ uint64_t shuffleKey(uint64_t key, int srcLane) {
    const uint32_t lo = __shfl_sync(kWarpFullMask, uint32_t(key), srcLane);
    const uint32_t hi = __shfl_sync(kWarpFullMask, uint32_t(key >> 32), srcLane);
    return (uint64_t(hi) << 32) | lo;
}

__device__ __forceinline__ uint64_t minKey(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

/// The lane of the n-th (from 0) set bit of mask; 31 or less when there is none.
__device__ __forceinline__ int nthSetBit(unsigned mask, int n) {
    int lane = 0;
#pragma unroll
    for (int width = 16; width > 0; width >>= 1) {
        const int low = __popc(mask & ((1u << width) - 1));
        if (n >= low) {
            n -= low;
            mask >>= width;
            lane += width;
        }
    }
    return lane;
}

/// One compare-exchange of a network across lanes: this lane and lane ^ stride swap keys
/// into order; the lower lane of the pair ends with the smaller key when `ascending`.
__device__ __forceinline__ uint64_t
warpCompareExchange(uint64_t key, int stride, bool ascending, int lane) {
    const uint64_t other = shuffleXorKey(key, stride);
    const bool keepSmaller = ((lane & stride) == 0) == ascending;
    return keepSmaller == (key < other) ? key : other;
}

/// Sorts the keys of every aligned group of kWidth lanes ascending (bitonic sort).
template <int kWidth>
__device__ __forceinline__ uint64_t warpSortGroups(uint64_t key, int lane) {
#pragma unroll
    for (int size = 2; size <= kWidth; size <<= 1) {
        // Blocks of `size` alternate direction, so each pair of them is bitonic; the last
        // pass sorts every group ascending.
        const bool ascending = size == kWidth || (lane & size) == 0;
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            key = warpCompareExchange(key, stride, ascending, lane);
        }
    }
    return key;
}

/// Sorts the bitonic sequence held by every aligned group of kWidth lanes ascending.
template <int kWidth>
__device__ __forceinline__ uint64_t warpMergeGroups(uint64_t key, int lane) {
#pragma unroll
    for (int stride = kWidth >> 1; stride > 0; stride >>= 1) {
        key = warpCompareExchange(key, stride, true, lane);
    }
    return key;
}

/// The kWidth smallest of the warp's 32 keys (one a lane), ascending, in every aligned
/// group of kWidth lanes.
template <int kWidth>
__device__ __forceinline__ uint64_t warpSmallestGroups(uint64_t key, int lane) {
    key = warpSortGroups<kWidth>(key, lane);
    // Level g: the groups of each half of a 2g-lane block hold the same list (the
    // smallest of that half); lane ^ (g | (kWidth - 1)) is the same entry counted from
    // the end in the other half.
#pragma unroll
    for (int g = kWidth; g < 32; g <<= 1) {
        key = warpMergeGroups<kWidth>(minKey(key, shuffleXorKey(key, g | (kWidth - 1))), lane);
    }
    return key;
}

/// One warp's selection state for nextPow2(k) == kKp (all 32 lanes construct it and call
/// run together).
template <int kKp>
struct WarpSelect {
    static_assert(
            kKp >= 1 && kKp <= kMaxWarpRegisterSelectK && (kKp & (kKp - 1)) == 0,
            "kKp is a power of two <= kMaxWarpRegisterSelectK");
    /// Thread queue slots a lane. Counted on the host (this code on an emulated warp,
    /// uniform values, k = 10 and 32 over 1024 to 4096 values, and the flat merge's
    /// segment-sorted candidates): 6 slots take 5-25% fewer shuffles than 4 and about as
    /// many as 8, which spills on sm_90; k <= 2 merges cheaply but the queues fill fast: 2.
    static constexpr int kQueue = kKp <= 2 ? 2 : 6;
    /// Largest kKp that keeps a sorted list a lane instead of queues (runLaneLists).
    static constexpr int kMaxLaneListKp = 4;
    /// Values a lane loads per step; the next step's loads are issued before the current
    /// step's values are offered (8 a step with 6 queue slots spilled on sm_90).
    static constexpr int kItems = 4;
    static constexpr int kStep = 32 * kItems;

    uint64_t best;          ///< entry lane % kKp of the best list
    uint64_t threshold;     ///< entry k - 1 of the best list (every lane)
    float thresholdValue;   ///< the value of threshold (+inf while it is the empty key)
    uint64_t queue[kQueue]; ///< newest first; slots past count hold kSelectEmptyKey
    int count;              ///< keys in this lane's queue
    const int kLast;        ///< k - 1
    const int lane;

    __device__ explicit WarpSelect(int k)
            : best(kSelectEmptyKey),
              threshold(kSelectEmptyKey),
              thresholdValue(selectKeyValue(kSelectEmptyKey)),
              count(0),
              kLast(k - 1),
              lane(threadIdx.x & 31) {
#pragma unroll
        for (int j = 0; j < kQueue; ++j) {
            queue[j] = kSelectEmptyKey;
        }
    }

    /// Offers this lane's value (no warp collective).
    __device__ __forceinline__ void offer(float v, int position) {
        const uint64_t key = selectKey(v, position);
        // v < +inf: neither NaN (whose keys sort on either side) nor +inf is a candidate.
        if (v < CUDART_INF_F && key < threshold) {
#pragma unroll
            for (int j = kQueue - 1; j > 0; --j) {
                queue[j] = queue[j - 1];
            }
            queue[0] = key;
            ++count;
        }
    }

    /// Drops slot 0 of this lane's queue (the others shift down).
    __device__ __forceinline__ void popSlot() {
#pragma unroll
        for (int s = 0; s + 1 < kQueue; ++s) {
            queue[s] = queue[s + 1];
        }
        queue[kQueue - 1] = kSelectEmptyKey;
    }

    /// Merges every lane's queue into the best list and empties the queues (all lanes).
    /// The queues' slots are packed into rows of 32 keys (the next slot's keys move into
    /// the row's empty lanes while they fit), so one lane with a full queue and few
    /// candidates elsewhere costs one network, not one a slot. Keys no longer below the
    /// threshold (tightened by the rows merged before) are dropped.
    __device__ void merge() {
        const unsigned lanesBelow = (1u << lane) - 1;
        int taken = 0; // slots taken from every queue (slots past count are empty keys)
#pragma unroll 1
        while (__any_sync(kWarpFullMask, taken < count)) {
            uint64_t row = queue[0] < threshold ? queue[0] : kSelectEmptyKey;
            popSlot();
            ++taken;
            unsigned rowMask = __ballot_sync(kWarpFullMask, row != kSelectEmptyKey);
#pragma unroll 1
            while (__any_sync(kWarpFullMask, taken < count)) {
                const unsigned slotMask = __ballot_sync(kWarpFullMask, queue[0] < threshold);
                if (__popc(rowMask) + __popc(slotMask) > 32) {
                    break;
                }
                if (slotMask != 0) {
                    // The r-th empty lane of the row takes the slot's r-th key.
                    const int r = __popc(~rowMask & lanesBelow);
                    const uint64_t moved = shuffleKey(queue[0], nthSetBit(slotMask, r));
                    if ((rowMask >> lane & 1) == 0 && r < __popc(slotMask)) {
                        row = moved;
                    }
                    rowMask = __ballot_sync(kWarpFullMask, row != kSelectEmptyKey);
                }
                popSlot();
                ++taken;
            }
            if (rowMask != 0) {
                const uint64_t smallest = warpSmallestGroups<kKp>(row, lane);
                // best ascending against the row's smallest reversed (lane ^ (kKp - 1)):
                // the minimum is bitonic and holds the kKp smallest of both.
                best = warpMergeGroups<kKp>(
                        minKey(best, kKp == 1 ? smallest : shuffleXorKey(smallest, kKp - 1)), lane);
                threshold = shuffleKey(best, kLast);
                thresholdValue = selectKeyValue(threshold);
            }
        }
        count = 0; // every slot below count was popped: the queues hold empty keys only
    }

    template <typename Loader>
    __device__ __forceinline__ void loadStep(
            float (&v)[kItems],
            int64_t base,
            int64_t n,
            const Loader& load) const {
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            const int64_t pos = base + j * 32 + lane;
            v[j] = pos < n ? load(pos) : CUDART_INF_F;
        }
    }

    /// Calls step(v, base) for each run of kStep positions [base, base + kStep) of
    /// [0, n): v[j] is the value at base + 32 j + lane (+inf past n), and the next run's
    /// loads are issued before the current one is handed over.
    template <typename Loader, typename Step>
    __device__ __forceinline__ void forEachStep(int64_t n, const Loader& load, Step&& step) const {
        float next[kItems];
        loadStep(next, 0, n, load);
        for (int64_t base = 0; base < n; base += kStep) {
            float v[kItems];
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                v[j] = next[j];
            }
            if (base + kStep < n) {
                loadStep(next, base + kStep, n, load);
            }
            step(v, base);
        }
    }

    /// Visits (value, position) for this lane's positions of [0, n): base + 32 j + lane of
    /// each run, the next run's loads in flight while this one is visited; afterRun() is
    /// called by the whole warp between runs (not after the last: nothing is left to use
    /// what it computes).
    template <typename Loader, typename Visit, typename AfterRun>
    __device__ __forceinline__ void forEachValue(
            int64_t n,
            const Loader& load,
            Visit&& visit,
            AfterRun&& afterRun) const {
        forEachStep(n, load, [&](float(&v)[kItems], int64_t base) {
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                visit(v[j], int(base + j * 32 + lane));
            }
            if (base + kStep < n) {
                afterRun();
            }
        });
    }

    /// Float4s a lane loads per run of forEachQuadValue.
    static constexpr int kQuadItems = 2;

    /// forEachValue for a loader of 16-byte aligned rows: load.quad(i) is positions 4 i ..
    /// 4 i + 3, loaded as one float4, so a lane has 4x the bytes of a scalar run in
    /// flight; afterRun() between whole runs as forEachValue; the positions past the last
    /// whole float4 are loaded one a lane (no afterRun: lanes differ there).
    template <typename QuadLoader, typename Visit, typename AfterRun>
    __device__ __forceinline__ void forEachQuadValue(
            int64_t n,
            const QuadLoader& load,
            Visit&& visit,
            AfterRun&& afterRun) const {
        constexpr int kRun = 32 * kQuadItems;
        const int64_t n4 = n / 4;
        auto loadRun = [&](float4(&q)[kQuadItems], int64_t base) {
#pragma unroll
            for (int j = 0; j < kQuadItems; ++j) {
                const int64_t i = base + j * 32 + lane;
                q[j] = i < n4 ? load.quad(i)
                              : make_float4(CUDART_INF_F, CUDART_INF_F, CUDART_INF_F, CUDART_INF_F);
            }
        };
        float4 next[kQuadItems];
        loadRun(next, 0);
        for (int64_t base = 0; base < n4; base += kRun) {
            float4 q[kQuadItems];
#pragma unroll
            for (int j = 0; j < kQuadItems; ++j) {
                q[j] = next[j];
            }
            if (base + kRun < n4) {
                loadRun(next, base + kRun);
            }
#pragma unroll
            for (int j = 0; j < kQuadItems; ++j) {
                const int pos = int(4 * (base + j * 32 + lane));
                visit(q[j].x, pos);
                visit(q[j].y, pos + 1);
                visit(q[j].z, pos + 2);
                visit(q[j].w, pos + 3);
            }
            if (base + kRun < n4) {
                afterRun();
            }
        }
        for (int64_t pos = 4 * n4 + lane; pos < n; pos += 32) {
            visit(load(pos), int(pos));
        }
    }

    /// Runs the selection over positions [0, n) (n < 2^31): load(pos) gives the value at
    /// pos; consecutive lanes load consecutive positions. Leaves the best k sorted in the
    /// best list (+inf with position -1 where fewer than k values were finite or -inf).
    template <typename Loader>
    __device__ void run(int64_t n, const Loader& load) {
        runWith([&](auto&& visit, auto&& afterRun) { forEachValue(n, load, visit, afterRun); }, n,
                load);
    }

    /// run over 16-byte aligned rows: load.quad(i) loads positions 4 i .. 4 i + 3 as one
    /// float4 (the queued path, kKp > kMaxLaneListKp, loads one value at a time).
    template <typename QuadLoader>
    __device__ void runQuads(int64_t n, const QuadLoader& load) {
        runWith([&](auto&& visit, auto&& afterRun) { forEachQuadValue(n, load, visit, afterRun); },
                n, load);
    }

    /// The one choice of selection by kKp: `values(visit, afterRun)` visits this lane's
    /// values, calling afterRun() with the whole warp between runs.
    template <typename Values, typename Loader>
    __device__ void runWith(Values&& values, int64_t n, const Loader& load) {
        if constexpr (kKp == 1) {
            runMin(values);
        } else if constexpr (kKp <= kMaxLaneListKp) {
            runLaneLists(values);
        } else {
            runQueues(n, load);
        }
    }

    /// The queued selection (the header comment) over positions [0, n).
    template <typename Loader>
    __device__ void runQueues(int64_t n, const Loader& load) {
        forEachStep(n, load, [&](float(&v)[kItems], int64_t base) {
            // A key below the threshold has a value <= the threshold's (NaN is neither).
            bool candidate = false;
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                candidate |= v[j] <= thresholdValue;
            }
            if (!__any_sync(kWarpFullMask, candidate)) {
                return;
            }
            // One value a lane at a time (a lane's queue gains at most one), shifting
            // v down so that it stays in registers without unrolling the merge.
            int64_t pos = base + lane;
#pragma unroll 1
            for (int j = 0; j < kItems; ++j) {
                offer(v[0], int(pos));
#pragma unroll
                for (int s = 0; s + 1 < kItems; ++s) {
                    v[s] = v[s + 1];
                }
                pos += 32;
                if (__any_sync(kWarpFullMask, count == kQueue)) {
                    merge();
                }
            }
        });
        if (__any_sync(kWarpFullMask, count > 0)) {
            merge();
        }
    }

    /// k = 1: each lane keeps the smallest key it visits, then the warp reduces them; no
    /// queues and no merges (the queued path merges a lane's two slots every few values
    /// while the minimum is still falling). Same keys, so the same result.
    template <typename Values>
    __device__ void runMin(Values&& values) {
        uint64_t key = kSelectEmptyKey;
        float keyValue = CUDART_INF_F; // the value of key: a smaller key has a value <= it
        values(
                [&](float v, int position) {
                    // As offer: neither NaN nor +inf is a candidate.
                    if (v <= keyValue && v < CUDART_INF_F) {
                        key = minKey(key, selectKey(v, position));
                        keyValue = v;
                    }
                },
                [] {});
#pragma unroll
        for (int m = 16; m >= 1; m >>= 1) {
            key = minKey(key, shuffleXorKey(key, m));
        }
        best = key;
        threshold = key;
    }

    /// kKp <= kMaxLaneListKp: each lane keeps the kKp smallest keys it visits, sorted, in
    /// registers; then the lanes' lists are merged into the best list one rank at a time
    /// (row r: every lane's r-th smallest), kKp networks in all. The k smallest keys of
    /// the stream are among the lanes' kKp smallest, so the same result as the queued
    /// path. A value is offered only if it is at most the lane's largest and the warp's
    /// bound: the k-th smallest of the lanes' smallest keys, refreshed after runs 1, 2, 4,
    /// 8, ... (a sort of 32 keys each). k distinct keys are at or below the bound, so a
    /// value above it is never among the k smallest; without it each lane inserts its own
    /// early values, and a warp pays for every lane's insertions in turn.
    template <typename Values>
    __device__ void runLaneLists(Values&& values) {
        uint64_t list[kKp];
#pragma unroll
        for (int r = 0; r < kKp; ++r) {
            list[r] = kSelectEmptyKey;
        }
        float largest = CUDART_INF_F; // the value of list[kKp - 1]
        float bound = CUDART_INF_F;   // the value of the warp's bound (the same in every lane)
        int runs = 0;
        values(
                [&](float v, int position) {
                    // As offer: neither NaN nor +inf is a candidate.
                    if (v <= largest && v <= bound && v < CUDART_INF_F) {
                        const uint64_t key = selectKey(v, position);
                        if (key < list[kKp - 1]) {
                            list[kKp - 1] = key;
#pragma unroll
                            for (int r = kKp - 1; r > 0; --r) {
                                const uint64_t lo = minKey(list[r - 1], list[r]);
                                list[r] = list[r - 1] < list[r] ? list[r] : list[r - 1];
                                list[r - 1] = lo;
                            }
                            largest = selectKeyValue(list[kKp - 1]);
                        }
                    }
                },
                [&] {
                    ++runs;
                    if ((runs & (runs - 1)) == 0) {
                        const uint64_t sorted = warpSortGroups<32>(list[0], lane);
                        bound = selectKeyValue(shuffleKey(sorted, kLast));
                    }
                });
#pragma unroll
        for (int r = 0; r < kKp; ++r) {
            if (!__any_sync(kWarpFullMask, list[r] != kSelectEmptyKey)) {
                break;
            }
            const uint64_t smallest = warpSmallestGroups<kKp>(list[r], lane);
            // As in merge: best ascending against the row's smallest reversed.
            best = warpMergeGroups<kKp>(minKey(best, shuffleXorKey(smallest, kKp - 1)), lane);
        }
        threshold = shuffleKey(best, kLast);
        thresholdValue = selectKeyValue(threshold);
    }

    /// Entry i < k of the result is held by lane i (and lane i + kKp, ...): only lane i
    /// may ask for it, as the callers' loops `for (i = lane; i < k; i += 32)` do.
    __device__ float value(int i) const {
        assert(i == lane);
        return selectKeyValue(best);
    }
    __device__ int position(int i) const {
        assert(i == lane);
        return selectKeyPosition(best);
    }
};

} // namespace kernels
} // namespace faiss_ext
