// RadixSelect.h. Per row, three histogram passes narrow the k-th smallest key down one
// digit at a time (11, 11 and 10 bits, most significant first); the last block to
// finish a pass picks the digit (no host round trip). A collect pass then writes the
// keys below the k-th and as many keys equal to it as are needed, and one block a row
// sorts those k (cub::BlockRadixSort).
#include <math_constants.h>
#include <algorithm>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "IdFilter.cuh"
#include "RadixSelect.h"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 512;
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kBinsPerThread = kBins / kThreads;
static_assert(kBins % kThreads == 0, "bins spread evenly over the threads");

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

/// The row's layout in scratch.
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

/// Column c's value, +inf where it is filtered out (+inf and NaN are never taken).
__device__ __forceinline__ float columnValue(
        const RadixSelectArgs& a,
        const float* row,
        int64_t c) {
    if (a.allow && !idFilterAllows(a.allow, c)) {
        return CUDART_INF_F;
    }
    return a.colBias ? row[c] + a.colBias[c] : row[c];
}

/// One digit pass: counts the row's candidates whose key matches the chosen prefix, by
/// the digit at `shift`; the last block picks the bin holding the k-th key.
__global__ void __launch_bounds__(kThreads)
        radixHistogramKernel(RadixSelectArgs a, Scratch s, int shift, int bits, bool first) {
    __shared__ uint32_t hist[kBins];
    __shared__ bool lastBlock;
    const int64_t row = blockIdx.y;
    RowState* st = s.states + row;
    if (st->resolved) {
        return;
    }
    // Read before the last block of this pass rewrites them.
    const uint32_t prefix = st->prefix;
    const uint32_t mask = st->mask;
    const uint32_t need = first ? uint32_t(a.k) : uint32_t(st->remaining);
    const uint32_t digitMask = (1u << bits) - 1;
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
        hist[b] = 0;
    }
    __syncthreads();
    const float* dist = a.dist + row * a.ldDist;
    // Every lane runs every step (the warp votes): the lanes of a warp that share a bin
    // add to it once, which matters on the first digit, where the keys of one row share
    // a few exponents.
    constexpr uint32_t kNoBin = 0xffffffffu;
    for (int64_t c0 = int64_t(blockIdx.x) * kThreads; c0 < a.ncols;
         c0 += int64_t(gridDim.x) * kThreads) {
        const int64_t c = c0 + threadIdx.x;
        uint32_t bin = kNoBin;
        if (c < a.ncols) {
            const float v = columnValue(a, dist, c);
            if (v < CUDART_INF_F) {
                const uint32_t key = orderedFloatBits(v);
                if ((key & mask) == prefix) {
                    bin = (key >> shift) & digitMask;
                }
            }
        }
        const unsigned peers = __match_any_sync(0xffffffffu, bin);
        if (bin != kNoBin && (threadIdx.x & 31) == __ffs(peers) - 1) {
            atomicAdd(&hist[bin], uint32_t(__popc(peers)));
        }
    }
    __syncthreads();
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

    // The last block: find the bin where the running count reaches the k-th key.
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

/// Writes the row's keys below the threshold, and `remaining` keys equal to it, to the
/// unsorted candidate slots.
__global__ void __launch_bounds__(kThreads) radixCollectKernel(RadixSelectArgs a, Scratch s) {
    const int64_t row = blockIdx.y;
    RowState* st = s.states + row;
    const uint32_t threshold = st->threshold;
    const int remaining = st->remaining;
    const float* dist = a.dist + row * a.ldDist;
    float* outD = s.candD + row * a.k;
    int64_t* outI = s.candI + row * a.k;
    for (int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x; c < a.ncols;
         c += int64_t(gridDim.x) * kThreads) {
        const float v = columnValue(a, dist, c);
        if (!(v < CUDART_INF_F)) {
            continue;
        }
        const uint32_t key = orderedFloatBits(v);
        bool take = key < threshold;
        if (!take && key == threshold && remaining > 0) {
            take = atomicAdd(&st->tiesTaken, 1) < remaining;
        }
        if (take) {
            const int slot = atomicAdd(&st->taken, 1);
            outD[slot] = v;
            outI[slot] = c;
        }
    }
}

/// Sorts each row's taken candidates (one block a row) into the output, ascending;
/// the slots past them are missing results (+inf, -1).
template <int kSortThreads, int kItems>
__global__ void __launch_bounds__(kSortThreads) radixSortTakenKernel(RadixSelectArgs a, Scratch s) {
    using Sort = cub::BlockRadixSort<uint32_t, kSortThreads, kItems, int>;
    __shared__ typename Sort::TempStorage storage;
    constexpr uint32_t kMissing = 0xffffffffu; // above every candidate's key (< +inf)
    const int64_t row = blockIdx.x;
    const int taken = s.states[row].taken;
    const float* candD = s.candD + row * a.k;
    const int64_t* candI = s.candI + row * a.k;
    uint32_t keys[kItems];
    int slots[kItems];
    for (int j = 0; j < kItems; ++j) {
        const int i = threadIdx.x * kItems + j;
        keys[j] = i < taken ? orderedFloatBits(candD[i]) : kMissing;
        slots[j] = i;
    }
    Sort(storage).Sort(keys, slots);
    for (int j = 0; j < kItems; ++j) {
        const int i = threadIdx.x * kItems + j;
        if (i < a.k) {
            const bool found = keys[j] != kMissing;
            a.outD[row * a.ldOut + i] = found ? candD[slots[j]] : CUDART_INF_F;
            a.outI[row * a.ldOut + i] = found ? candI[slots[j]] : -1;
        }
    }
}

template <int kSortThreads, int kItems>
void launchSortTaken(const RadixSelectArgs& a, const Scratch& s, cudaStream_t stream) {
    radixSortTakenKernel<kSortThreads, kItems>
            <<<unsigned(a.nrows), kSortThreads, 0, stream>>>(a, s);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace

size_t radixSelectScratchBytes(int64_t nrows, int k) {
    return Scratch::bytes(nrows, k);
}

void radixSelectRowsMin(
        const RadixSelectArgs& a,
        void* scratch,
        size_t scratchBytes,
        int blocksPerRow,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kMaxSelectK, "k=%d is outside [1, %d]", a.k, kMaxSelectK);
    FAISS_THROW_IF_NOT_FMT(
            a.nrows <= 65535, "radix select takes at most 65535 rows (%lld)", (long long)a.nrows);
    FAISS_THROW_IF_NOT_FMT(
            scratchBytes >= Scratch::bytes(a.nrows, a.k),
            "radix select scratch of %zu bytes is below the %zu needed", scratchBytes,
            Scratch::bytes(a.nrows, a.k));
    if (a.nrows == 0) {
        return;
    }
    const Scratch s = Scratch::carve(scratch, a.nrows, a.k);
    // States and histograms start at zero (the candidates' slots are counted).
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(scratch, 0, Scratch::zeroedBytes(a.nrows), stream));
    // No more blocks than a row has threads' worth of columns.
    const int64_t blocks = std::max<int64_t>(
            1, std::min<int64_t>(blocksPerRow, (a.ncols + kThreads - 1) / kThreads));
    const dim3 grid(unsigned(blocks), unsigned(a.nrows));
    int shift = 32;
    for (int pass = 0; pass < 3; ++pass) {
        const int bits = pass < 2 ? kDigitBits : 32 - 2 * kDigitBits;
        shift -= bits;
        radixHistogramKernel<<<grid, kThreads, 0, stream>>>(a, s, shift, bits, pass == 0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
    radixCollectKernel<<<grid, kThreads, 0, stream>>>(a, s);
    FAISS_EXT_CUDA_CHECK_LAUNCH();

    static_assert(512 * 4 >= kMaxSelectK, "the largest sort holds every k");
    if (a.k <= 128) {
        launchSortTaken<128, 1>(a, s, stream);
    } else if (a.k <= 512) {
        launchSortTaken<128, 4>(a, s, stream);
    } else {
        launchSortTaken<512, 4>(a, s, stream);
    }
}

} // namespace kernels
} // namespace faiss_ext
