// What the radix select's kernels share (radix_select.cu, radix_select_query.cu): the
// per-row state between passes, the scratch layout, and the end of a digit pass, where
// every block adds its counts to the row's histogram and the last one picks the digit.
#pragma once

#include <math_constants.h>
#include <cstddef>
#include <cstdint>
#include <cub/block/block_scan.cuh>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "RadixSelect.h"

namespace faiss_ext {
namespace kernels {
namespace radix {

constexpr int kThreads = 512;
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kBinsPerThread = kBins / kThreads;
static_assert(kBins % kThreads == 0, "bins spread evenly over the threads");
/// The first digit: the top kDigitBits of a key.
constexpr int kFirstShift = 32 - kDigitBits;
constexpr uint32_t kNoBin = 0xffffffffu;

/// Where one row's selection stands between passes.
struct RowState {
    uint32_t prefix;    ///< digits of the k-th key chosen so far
    uint32_t mask;      ///< bits of prefix that are chosen
    uint32_t threshold; ///< once resolved: every key below it is taken
    int remaining;      ///< keys of the chosen bin still to take (once resolved: ties)
    int resolved;       ///< threshold and remaining are final
    unsigned blocksDone;
    int taken;     ///< collect: output slots used
    int tiesTaken; ///< collect: keys equal to threshold taken
};

/// The rows' layout in scratch.
struct Scratch {
    RowState* states;
    uint32_t* hist; ///< nrows x kBins
    float* candD;   ///< nrows x k, unsorted
    int64_t* candI;

    static size_t align(size_t b) {
        return (b + 255) / 256 * 256;
    }
    static size_t zeroedBytes(int64_t nrows) {
        return align(size_t(nrows) * sizeof(RowState)) +
                align(size_t(nrows) * kBins * sizeof(uint32_t));
    }
    static size_t bytes(int64_t nrows, int k) {
        return zeroedBytes(nrows) + align(size_t(nrows) * k * sizeof(float)) +
                size_t(nrows) * k * sizeof(int64_t);
    }
    static Scratch carve(void* p, int64_t nrows, int k) {
        char* c = static_cast<char*>(p);
        Scratch s;
        s.states = reinterpret_cast<RowState*>(c);
        c += align(size_t(nrows) * sizeof(RowState));
        s.hist = reinterpret_cast<uint32_t*>(c);
        c += align(size_t(nrows) * kBins * sizeof(uint32_t));
        s.candD = reinterpret_cast<float*>(c);
        c += align(size_t(nrows) * k * sizeof(float));
        s.candI = reinterpret_cast<int64_t*>(c);
        return s;
    }
};

/// Adds one key's bin (kNoBin: none) to a block's histogram in shared memory. Every lane
/// of the warp calls it: the lanes that share a bin add to it once, which matters on the
/// first digit, where the keys of one row share a few exponents.
__device__ __forceinline__ void countBin(uint32_t* hist, uint32_t bin) {
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin != kNoBin && (threadIdx.x & 31) == __ffs(peers) - 1) {
        atomicAdd(&hist[bin], uint32_t(__popc(peers)));
    }
}

/// The end of a digit pass over `row` (all kThreads threads of every block of the row
/// call it once, after a barrier that follows their last countBin): adds the block's
/// counts to the row's histogram; the last block to do so finds the bin where the
/// running count reaches the `need`-th key and moves the row's state on. prefix and mask
/// are the state as read before the pass.
__device__ __forceinline__ void finishDigitPass(
        const uint32_t* hist,
        const Scratch& s,
        int64_t row,
        int shift,
        int bits,
        bool first,
        uint32_t prefix,
        uint32_t mask,
        uint32_t need) {
    __shared__ bool lastBlock;
    RowState* st = s.states + row;
    uint32_t* rowHist = s.hist + row * kBins;
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
        if (hist[b] != 0) {
            atomicAdd(rowHist + b, hist[b]);
        }
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        lastBlock = atomicAdd(&st->blocksDone, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!lastBlock) {
        return;
    }
    __threadfence();

    const uint32_t digitMask = (1u << bits) - 1;
    uint32_t counts[kBinsPerThread];
    uint32_t sum = 0;
    for (int j = 0; j < kBinsPerThread; ++j) {
        counts[j] = __ldcg(rowHist + threadIdx.x * kBinsPerThread + j);
        sum += counts[j];
    }
    using Scan = cub::BlockScan<uint32_t, kThreads>;
    __shared__ typename Scan::TempStorage scanStorage;
    uint32_t before = 0, total = 0;
    Scan(scanStorage).ExclusiveSum(sum, before, total);
    if (first && total <= need) {
        // Every candidate is a result.
        if (threadIdx.x == 0) {
            st->threshold = 0xffffffffu;
            st->remaining = 0;
            st->resolved = 1;
        }
    } else {
        for (int j = 0; j < kBinsPerThread; ++j) {
            if (before < need && need <= before + counts[j]) {
                const uint32_t bin = threadIdx.x * kBinsPerThread + j;
                const uint32_t binStart = prefix | (bin << shift);
                const uint32_t rem = need - before;
                if (rem == counts[j]) {
                    // The whole bin is taken: everything below its end.
                    st->threshold = uint32_t(min(
                            uint64_t(binStart) + (uint64_t(1) << shift), uint64_t(0xffffffffu)));
                    st->remaining = 0;
                    st->resolved = 1;
                } else if (shift == 0) {
                    // binStart is the k-th key itself; rem of its ties are taken.
                    st->threshold = binStart;
                    st->remaining = int(rem);
                    st->resolved = 1;
                } else {
                    st->prefix = binStart;
                    st->mask = mask | (digitMask << shift);
                    st->remaining = int(rem);
                }
            }
            before += counts[j];
        }
    }
    for (int j = 0; j < kBinsPerThread; ++j) {
        rowHist[threadIdx.x * kBinsPerThread + j] = 0;
    }
    if (threadIdx.x == 0) {
        st->blocksDone = 0;
    }
}

/// Blocks a pass gives a row: blocksPerRow, but no more than the row has threads' worth
/// of columns.
int64_t passBlocks(int64_t ncols, int blocksPerRow);

/// Throws on a k outside [1, kMaxSelectK], too many rows or too little scratch.
void checkArgs(const RadixSelectArgs& a, size_t scratchBytes);

/// The passes after the first, the collect and the sort, on `stream`: the rows' first
/// digit pass has run (its state is in s).
void selectAfterFirstPass(
        const RadixSelectArgs& a,
        const Scratch& s,
        int blocksPerRow,
        cudaStream_t stream);

} // namespace radix
} // namespace kernels
} // namespace faiss_ext
