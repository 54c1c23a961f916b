// The nearest-hub search of small batches and the entry keys (BangHubEntry.h).
#include <faiss_ext/utils/CudaCheck.h>

#include "BangHubEntry.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Hubs a block compares with its query: 8 a warp.
constexpr int kHubsPerBlock = 64;

__device__ inline uint64_t minKey(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

/// The key of a finite distance (negative rounding of an expanded form clamped to 0);
/// kBangNoEntry otherwise.
__device__ inline uint64_t entryKey(float dist, int64_t hub) {
    if (!isfinite(dist) || hub < 0) {
        return kBangNoEntry;
    }
    return (uint64_t(__float_as_uint(fmaxf(dist, 0.f))) << 32) | uint64_t(hub);
}

// Block (q, part): warp w takes hubs part * 64 + w, + 8, ...; lanes split the
// components; the block's best key goes to keys[q] by atomicMin.
__global__ void __launch_bounds__(kThreads) nearestHubsDirectKernel(
        const float* hubRows,
        int d,
        int64_t H,
        const float* queries,
        uint64_t* keys) {
    __shared__ uint64_t best[kWarps];
    const int64_t q = blockIdx.x;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const float* query = queries + q * d;
    uint64_t mine = kBangNoEntry;
    const int64_t h0 = int64_t(blockIdx.y) * kHubsPerBlock;
    for (int64_t h = h0 + warp; h < H && h < h0 + kHubsPerBlock; h += kWarps) {
        const float* x = hubRows + h * d;
        float s = 0.f;
        for (int c = lane; c < d; c += 32) {
            const float t = query[c] - x[c];
            s = fmaf(t, t, s);
        }
        for (int o = 16; o > 0; o /= 2) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
        }
        mine = minKey(mine, entryKey(s, h));
    }
    if (lane == 0) {
        best[warp] = mine;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kWarps; ++w) {
            mine = minKey(mine, best[w]);
        }
        if (mine != kBangNoEntry) {
            atomicMin(reinterpret_cast<unsigned long long*>(keys + q), mine);
        }
    }
}

__global__ void entryKeysKernel(
        const float* distances,
        const int64_t* hubs,
        int64_t nq,
        uint64_t* keys) {
    const int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (q < nq) {
        keys[q] = entryKey(distances[q], hubs[q]);
    }
}

} // namespace

void bangNearestHubsDirect(
        const float* hubRows,
        int d,
        int64_t H,
        const float* queries,
        int64_t nq,
        uint64_t* keys,
        cudaStream_t stream) {
    if (nq == 0) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(keys, 0xff, size_t(nq) * sizeof(uint64_t), stream));
    const int64_t parts = (H + kHubsPerBlock - 1) / kHubsPerBlock;
    FAISS_THROW_IF_NOT_FMT(
            H >= 1 && H < INT32_MAX && parts <= 65535 && nq < INT32_MAX,
            "bangNearestHubsDirect: %lld hubs, %lld queries", (long long)H, (long long)nq);
    const dim3 grid(static_cast<unsigned>(nq), static_cast<unsigned>(parts));
    nearestHubsDirectKernel<<<grid, kThreads, 0, stream>>>(hubRows, d, H, queries, keys);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void bangEntryKeys(
        const float* distances,
        const int64_t* hubs,
        int64_t nq,
        uint64_t* keys,
        cudaStream_t stream) {
    if (nq > 0) {
        entryKeysKernel<<<unsigned((nq + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
                distances, hubs, nq, keys);
        FAISS_EXT_CUDA_CHECK(cudaGetLastError());
    }
}

} // namespace kernels
} // namespace faiss_ext
