// selectRowsMin's short-row path: one block holds a whole (row, segment) of at most
// kShortSelectMaxCols keys in registers and radix-selects its k-th smallest (four
// 8-bit digits, most significant first, each a shared-memory histogram of the keys
// still matching the digits chosen so far), takes the keys below it and the first ties
// by column, and sorts those k; a row with at most k candidates (a row bound, or +inf
// and NaN, leave the others out) skips the digits and sorts just its candidates. One
// launch and no merge; for the few rows of a small batch (the coarse search of an IVF
// query over a few thousand centroids) it replaces a warp per 1024 columns and their
// merge, and it serves the Bang build's millions of short rows (benchs/NOTES.md).
#include <math_constants.h>
#include <cub/block/block_scan.cuh>

#include "SelectRowsImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace rows {

namespace {

/// Above every candidate's key: +inf, NaN and padding; taken only as missing results.
constexpr uint32_t kNotTaken = 0xffffffffu;
constexpr int kDigitBits = 8;
constexpr int kBins = 1 << kDigitBits;

/// orderedFloatBits inverted.
__device__ __forceinline__ float floatOfOrderedBits(uint32_t u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
        shortSelectRowsKernel(SelectRowsArgs a, int64_t segLen, int64_t rowOffset) {
    static_assert(kThreads * kItems >= kMaxSelectK, "a row holds at least k keys");
    using Scan = cub::BlockScan<int, kThreads>;
    __shared__ typename Scan::TempStorage scanStorage;
    __shared__ uint32_t hist[kBins];
    __shared__ uint32_t chosenPrefix;
    __shared__ int chosenRemaining;
    __shared__ int takenCount;
    __shared__ uint64_t taken[kMaxSelectK]; ///< (key, column) of the k taken
    const int lane = threadIdx.x & 31;
    const int64_t row = rowOffset + blockIdx.y;
    const int64_t seg = blockIdx.x;
    const int64_t segStart = seg * segLen;
    const int segN = int(segmentColumns(a, row, segStart, segLen));
    const BiasedRowLoader load = rowLoader(a, row, segStart);

    // Column threadIdx.x * kItems + j: a block scan in thread order is in column order.
    uint32_t keys[kItems];
    int candidates = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const int c = threadIdx.x * kItems + j;
        const float v = c < segN ? load(c) : CUDART_INF_F;
        keys[j] = v < CUDART_INF_F ? orderedFloatBits(v) : kNotTaken; // never NaN or +inf
        candidates += keys[j] != kNotTaken;
    }
    if (threadIdx.x == 0) {
        takenCount = 0;
    }
    int rowCandidates = 0;
    Scan(scanStorage).ExclusiveSum(candidates, candidates, rowCandidates);
    __syncthreads(); // scanStorage is used again below

    // The k-th smallest key, one digit at a time; `remaining`: how many keys matching
    // the prefix are still to be taken (the row holds at least k keys, padding
    // included, so some bin always holds the remaining-th). With at most k candidates
    // every one is taken: the k-th is a missing result (kNotTaken).
    const bool takeAll = rowCandidates <= a.k;
    uint32_t prefix = 0, mask = 0;
    int remaining = a.k;
    for (int shift = takeAll ? -1 : 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
        for (int b = threadIdx.x; b < kBins; b += kThreads) {
            hist[b] = 0;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            const bool match = (keys[j] & mask) == prefix;
            const uint32_t digit = (keys[j] >> shift) & (kBins - 1);
            // The lanes adding to one bin add once (a row's keys share their top bits).
            const unsigned peers = __match_any_sync(0xffffffffu, match ? digit : uint32_t(kBins));
            if (match && lane == __ffs(peers) - 1) {
                atomicAdd(&hist[digit], uint32_t(__popc(peers)));
            }
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            constexpr int kPerLane = kBins / 32;
            uint32_t count[kPerLane];
            uint32_t sum = 0;
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                count[i] = hist[lane * kPerLane + i];
                sum += count[i];
            }
            uint32_t inclusive = sum;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const uint32_t v = __shfl_up_sync(0xffffffffu, inclusive, o);
                if (lane >= o) {
                    inclusive += v;
                }
            }
            uint32_t before = inclusive - sum;
            if (before < uint32_t(remaining) && uint32_t(remaining) <= inclusive) {
                int i = 0;
                while (before + count[i] < uint32_t(remaining)) {
                    before += count[i];
                    ++i;
                }
                chosenPrefix = prefix | (uint32_t(lane * kPerLane + i) << shift);
                chosenRemaining = remaining - int(before);
            }
        }
        __syncthreads();
        prefix = chosenPrefix;
        remaining = chosenRemaining;
        mask |= uint32_t(kBins - 1) << shift;
    }

    // Take every key below the k-th and its first `remaining` ties by column: k keys
    // (with takeAll, the candidates only; the rest of the k are missing).
    if (takeAll) {
        prefix = kNotTaken;
        remaining = 0;
    }
    int ties = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        ties += keys[j] == prefix;
    }
    int tieRank = 0;
    Scan(scanStorage).ExclusiveSum(ties, tieRank);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const bool take = keys[j] < prefix || (keys[j] == prefix && tieRank++ < remaining);
        if (take) {
            const int slot = atomicAdd(&takenCount, 1);
            taken[slot] = (uint64_t(keys[j]) << 32) | uint32_t(threadIdx.x * kItems + j);
        }
    }
    const int len = nextPow2(a.k);
    const int filled = takeAll ? rowCandidates : a.k;
    for (int i = filled + threadIdx.x; i < len; i += kThreads) {
        taken[i] = ~uint64_t(0);
    }
    __syncthreads();
    // The entries past nextPow2(filled) are all ~0: already in order.
    bitonicSort<kThreads>(taken, filled > 0 ? nextPow2(filled) : 0);

    // Every id is read before any result is written: the output may alias the input ids.
    constexpr int kPer = kMaxSelectK / kThreads;
    float outD[kPer];
    int64_t outI[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int rank = j * kThreads + threadIdx.x;
        if (rank < a.k) {
            const uint32_t key = uint32_t(taken[rank] >> 32);
            const int col = int(uint32_t(taken[rank]));
            const bool found = key != kNotTaken;
            outD[j] = found ? floatOfOrderedBits(key) : CUDART_INF_F;
            outI[j] = !found  ? -1
                    : a.inIds ? a.inIds[row * a.ldIds + segStart + col]
                              : a.idBase + segStart + col;
        }
    }
    __syncthreads();
    float* dRow = a.outD + row * a.ldOut + seg * a.k;
    int64_t* iRow = a.outI + row * a.ldOut + seg * a.k;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        const int rank = j * kThreads + threadIdx.x;
        if (rank < a.k) {
            dRow[rank] = outD[j];
            iRow[rank] = outI[j];
        }
    }
}

template <int kThreads, int kItems>
void launchShort(const SelectRowsArgs& a, int64_t segLen, int64_t nseg, cudaStream_t stream) {
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t r0 = 0; r0 < a.nrows; r0 += kMaxGridY) {
        const dim3 grid(unsigned(nseg), unsigned(std::min(kMaxGridY, a.nrows - r0)));
        shortSelectRowsKernel<kThreads, kItems><<<grid, kThreads, 0, stream>>>(a, segLen, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace

void launchShortSelectRows(
        const SelectRowsArgs& a,
        int64_t segLen,
        int64_t nseg,
        cudaStream_t stream) {
    static_assert(kShortSelectMaxCols == 256 * 32, "the largest block holds a whole segment");
    const int64_t cols = std::min(segLen, a.ncols);
    if (a.nrows * nseg > kShortSelectMaxBlocks) {
        // Many rows (the Bang build's per-list k-NN: millions of rows of a few thousand
        // columns): 256 threads a row. Measured on an H100 at 2M x 128, lists of ~1400:
        // 1.14 s of selections against 1.43 s with 512-thread blocks (benchs/NOTES.md).
        if (cols <= 2048) {
            launchShort<256, 8>(a, segLen, nseg, stream);
        } else if (cols <= 4096) {
            launchShort<256, 16>(a, segLen, nseg, stream);
        } else {
            launchShort<256, 32>(a, segLen, nseg, stream);
        }
    } else if (cols <= 2048) {
        launchShort<512, 4>(a, segLen, nseg, stream);
    } else if (cols <= 4096) {
        launchShort<1024, 4>(a, segLen, nseg, stream);
    } else {
        launchShort<1024, 8>(a, segLen, nseg, stream);
    }
}

} // namespace rows
} // namespace kernels
} // namespace faiss_ext
