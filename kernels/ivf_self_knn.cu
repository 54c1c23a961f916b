// IvfSelfKnn.h: the pairs' query ids, their sort by list, the lists' starts, and the
// merge of one list's results into its queries' running best.
#include <algorithm>
#include <climits>

#include <math_constants.h>

#include <cub/device/device_radix_sort.cuh>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "IvfSelfKnn.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kMergeThreads = 128;
constexpr int kMaxMergeK = 2048; // the shared rows (16 k bytes) within the default 48 KiB

unsigned blocksFor(int64_t n) {
    return unsigned(std::max<int64_t>(1, std::min<int64_t>(divUp<int64_t>(n, kThreads), 65536)));
}

__global__ void repeatedRowIdsKernel(int64_t first, int64_t total, int repeat, int64_t* out) {
    for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
         p += int64_t(gridDim.x) * blockDim.x) {
        out[p] = first + p / repeat;
    }
}

__global__ void narrowIdsKernel(const int64_t* in, int64_t count, int32_t* out) {
    for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
         p += int64_t(gridDim.x) * blockDim.x) {
        out[p] = int32_t(in[p]);
    }
}

__global__ void fillMissingRunningKernel(float* runD, int32_t* runI, int64_t count) {
    for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
         p += int64_t(gridDim.x) * blockDim.x) {
        runD[p] = CUDART_INF_F;
        runI[p] = -1;
    }
}

__global__ void markLaterProbesKernel(int64_t* lists, int64_t total, int nprobe, int64_t nlist) {
    for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
         p += int64_t(gridDim.x) * blockDim.x) {
        if (p % nprobe != 0) {
            lists[p] += nlist;
        }
    }
}

__global__ void runningBoundsKernel(
        const float* runD,
        int k,
        const int64_t* queryIds,
        int64_t q0,
        int64_t m,
        float* bounds) {
    for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < m;
         r += int64_t(gridDim.x) * blockDim.x) {
        bounds[r] = runD[(queryIds[r] - q0) * k + k - 1];
    }
}

__global__ void listStartsKernel(
        const int64_t* sorted,
        int64_t count,
        int64_t nlist,
        int64_t* starts) {
    const int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (l > nlist) {
        return;
    }
    int64_t lo = 0, hi = count;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < l) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    starts[l] = lo;
}

/// Entries of the ascending row `a` (k) below v (strictly, or up to v included).
template <bool kInclusive>
__device__ int countBelow(const float* a, int k, float v) {
    int lo = 0, hi = k;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (kInclusive ? a[mid] <= v : a[mid] < v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/// A block a result row: both rows into shared memory, then each entry goes to its rank
/// in the merged order (its index plus the other row's entries before it), if below k.
__global__ void mergeListResultsKernel(
        const float* resD,
        const int64_t* resI,
        int k,
        const int64_t* listIds,
        const int64_t* queryIds,
        int64_t q0,
        float* runD,
        int32_t* runI) {
    extern __shared__ float shared[];
    float* aD = shared;
    float* bD = aD + k;
    int32_t* aI = reinterpret_cast<int32_t*>(bD + k);
    int32_t* bI = aI + k;
    const int64_t r = blockIdx.x;
    const int64_t row = queryIds[r] - q0;
    float* outD = runD + row * k;
    int32_t* outI = runI + row * k;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        aD[j] = outD[j];
        aI[j] = outI[j];
        const int64_t local = resI[r * k + j];
        bD[j] = resD[r * k + j];
        bI[j] = local >= 0 ? int32_t(listIds[local]) : -1;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < 2 * k; j += blockDim.x) {
        const bool running = j < k;
        const int i = running ? j : j - k;
        const float v = running ? aD[i] : bD[i];
        // Running entries go before new ones of the same distance.
        const int rank = i + (running ? countBelow<false>(bD, k, v) : countBelow<true>(aD, k, v));
        if (rank < k) {
            outD[rank] = v;
            outI[rank] = running ? aI[i] : bI[i];
        }
    }
}

int endBitFor(int64_t nlist) {
    int bits = 1;
    while (bits < 63 && (int64_t(1) << bits) < nlist) {
        ++bits;
    }
    return bits;
}

} // namespace

void repeatedRowIds(int64_t first, int64_t n, int repeat, int64_t* out, cudaStream_t stream) {
    const int64_t total = n * repeat;
    if (total == 0) {
        return;
    }
    repeatedRowIdsKernel<<<blocksFor(total), kThreads, 0, stream>>>(first, total, repeat, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void narrowIds(const int64_t* in, int64_t count, int32_t* out, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    narrowIdsKernel<<<blocksFor(count), kThreads, 0, stream>>>(in, count, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void fillMissingRunning(float* runD, int32_t* runI, int64_t count, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    fillMissingRunningKernel<<<blocksFor(count), kThreads, 0, stream>>>(runD, runI, count);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void markLaterProbes(int64_t* lists, int64_t n, int nprobe, int64_t nlist, cudaStream_t stream) {
    const int64_t total = n * nprobe;
    if (total == 0 || nprobe == 1) {
        return;
    }
    markLaterProbesKernel<<<blocksFor(total), kThreads, 0, stream>>>(lists, total, nprobe, nlist);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void runningBounds(
        const float* runD,
        int k,
        const int64_t* queryIds,
        int64_t q0,
        int64_t m,
        float* bounds,
        cudaStream_t stream) {
    if (m == 0) {
        return;
    }
    runningBoundsKernel<<<blocksFor(m), kThreads, 0, stream>>>(runD, k, queryIds, q0, m, bounds);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

size_t sortByListTempBytes(int64_t count, int64_t nlist) {
    FAISS_THROW_IF_NOT_FMT(
            count >= 0 && count <= INT_MAX, "sortByList: %lld pairs (at most INT_MAX)",
            (long long)count);
    cub::DoubleBuffer<int64_t> lists(nullptr, nullptr);
    cub::DoubleBuffer<int64_t> values(nullptr, nullptr);
    size_t bytes = 0;
    FAISS_EXT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
            nullptr, bytes, lists, values, int(count), 0, endBitFor(nlist)));
    return bytes;
}

SortedByList sortByList(
        int64_t* lists,
        int64_t* listsAlt,
        int64_t* values,
        int64_t* valuesAlt,
        int64_t count,
        int64_t nlist,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream) {
    cub::DoubleBuffer<int64_t> l(lists, listsAlt);
    cub::DoubleBuffer<int64_t> v(values, valuesAlt);
    if (count > 0) {
        FAISS_EXT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
                temp, tempBytes, l, v, int(count), 0, endBitFor(nlist), stream));
    }
    return {l.Current(), v.Current()};
}

void listStarts(
        const int64_t* sortedLists,
        int64_t count,
        int64_t nlist,
        int64_t* starts,
        cudaStream_t stream) {
    listStartsKernel<<<unsigned(divUp<int64_t>(nlist + 1, kThreads)), kThreads, 0, stream>>>(
            sortedLists, count, nlist, starts);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void mergeListResults(
        const float* resD,
        const int64_t* resI,
        int64_t m,
        int k,
        const int64_t* listIds,
        const int64_t* queryIds,
        int64_t q0,
        float* runD,
        int32_t* runI,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(k >= 1 && k <= kMaxMergeK, "mergeListResults: k=%d", k);
    if (m == 0) {
        return;
    }
    const size_t smem = size_t(k) * 2 * (sizeof(float) + sizeof(int32_t));
    mergeListResultsKernel<<<unsigned(m), kMergeThreads, smem, stream>>>(
            resD, resI, k, listIds, queryIds, q0, runD, runI);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
