// RadixSelect.h. Per row, three histogram passes narrow the k-th smallest key down one
// digit at a time (11, 11 and 10 bits, most significant first); the last block to
// finish a pass picks the digit (no host round trip). A collect pass then writes the
// keys below the k-th and as many keys equal to it as are needed, and one block a row
// sorts those k (cub::BlockRadixSort).
#include <algorithm>
#include <cub/block/block_radix_sort.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "RadixSelectImpl.cuh"
#include "Select.h"

namespace faiss_ext {
namespace kernels {

namespace {

using radix::kBins;
using radix::kDigitBits;
using radix::kThreads;
using radix::RowState;
using radix::Scratch;

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
    // Every lane runs every step (countBin votes in the warp).
    for (int64_t c0 = int64_t(blockIdx.x) * kThreads; c0 < a.ncols;
         c0 += int64_t(gridDim.x) * kThreads) {
        const int64_t c = c0 + threadIdx.x;
        uint32_t bin = radix::kNoBin;
        if (c < a.ncols) {
            const float v = columnValue(a, dist, c);
            if (v < CUDART_INF_F) {
                const uint32_t key = orderedFloatBits(v);
                if ((key & mask) == prefix) {
                    bin = (key >> shift) & digitMask;
                }
            }
        }
        radix::countBin(hist, bin);
    }
    __syncthreads();
    radix::finishDigitPass(hist, s, row, shift, bits, first, prefix, mask, need);
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

namespace radix {

int64_t passBlocks(int64_t ncols, int blocksPerRow) {
    return std::max<int64_t>(1, std::min<int64_t>(blocksPerRow, (ncols + kThreads - 1) / kThreads));
}

void checkArgs(const RadixSelectArgs& a, size_t scratchBytes) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kMaxSelectK, "k=%d is outside [1, %d]", a.k, kMaxSelectK);
    FAISS_THROW_IF_NOT_FMT(
            a.nrows <= 65535, "radix select takes at most 65535 rows (%lld)", (long long)a.nrows);
    FAISS_THROW_IF_NOT_FMT(
            scratchBytes >= Scratch::bytes(a.nrows, a.k),
            "radix select scratch of %zu bytes is below the %zu needed", scratchBytes,
            Scratch::bytes(a.nrows, a.k));
}

void selectAfterFirstPass(
        const RadixSelectArgs& a,
        const Scratch& s,
        int blocksPerRow,
        cudaStream_t stream) {
    const dim3 grid(unsigned(passBlocks(a.ncols, blocksPerRow)), unsigned(a.nrows));
    int shift = kFirstShift;
    for (int pass = 1; pass < 3; ++pass) {
        const int bits = pass < 2 ? kDigitBits : 32 - 2 * kDigitBits;
        shift -= bits;
        radixHistogramKernel<<<grid, kThreads, 0, stream>>>(a, s, shift, bits, false);
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

} // namespace radix

size_t radixSelectScratchBytes(int64_t nrows, int k) {
    return Scratch::bytes(nrows, k);
}

void radixSelectRowsMin(
        const RadixSelectArgs& a,
        void* scratch,
        size_t scratchBytes,
        int blocksPerRow,
        cudaStream_t stream) {
    radix::checkArgs(a, scratchBytes);
    if (a.nrows == 0) {
        return;
    }
    const Scratch s = Scratch::carve(scratch, a.nrows, a.k);
    // States and histograms start at zero (the candidates' slots are counted).
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(scratch, 0, Scratch::zeroedBytes(a.nrows), stream));
    const dim3 grid(unsigned(radix::passBlocks(a.ncols, blocksPerRow)), unsigned(a.nrows));
    radixHistogramKernel<<<grid, kThreads, 0, stream>>>(a, s, radix::kFirstShift, kDigitBits, true);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    radix::selectAfterFirstPass(a, s, blocksPerRow, stream);
}

} // namespace kernels
} // namespace faiss_ext
