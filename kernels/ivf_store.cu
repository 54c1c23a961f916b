// Writing vectors into the interleaved list layout, and finding entries by id.
#include <cstdint>

#include <faiss_ext/utils/CudaCheck.h>

#include "IvfStore.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;

/// Float4 group g (components 4g .. 4g + 3) of vector v in a list's interleaved layout
/// (IvfStore.h), counted in float4s from the list's start.
__device__ inline int64_t groupIndex(int64_t v, int g, int groups) {
    return (v / 32) * (int64_t(32) * groups) + int64_t(g) * 32 + (v % 32);
}

__device__ inline bool isByte(float v) {
    return v >= 0.f && v <= 255.f && __float_as_uint(float(uint32_t(v))) == __float_as_uint(v);
}

// One thread per (vector, group of 4 components).
__global__ void appendKernel(
        const float* x,
        int64_t n,
        int d,
        int groups,
        const int64_t* listNos,
        const int64_t* offsets,
        const int64_t* ids,
        float* const* listData,
        int64_t* const* listIds,
        int* notBytes) {
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= n * groups) {
        return;
    }
    const int64_t i = t / groups;
    const int g = int(t - i * groups);
    const int64_t list = listNos[i];
    const int64_t v = offsets[i];
    const float* src = x + i * d;
    float4 val;
    val.x = 4 * g + 0 < d ? src[4 * g + 0] : 0.f;
    val.y = 4 * g + 1 < d ? src[4 * g + 1] : 0.f;
    val.z = 4 * g + 2 < d ? src[4 * g + 2] : 0.f;
    val.w = 4 * g + 3 < d ? src[4 * g + 3] : 0.f;
    float4* dst = reinterpret_cast<float4*>(listData[list]);
    dst[groupIndex(v, g, groups)] = val;
    if (notBytes && !(isByte(val.x) && isByte(val.y) && isByte(val.z) && isByte(val.w))) {
        *notBytes = 1;
    }
    if (g == 0) {
        listIds[list][v] = ids[i];
    }
}

// One block a span, its threads over (vector, group of 4 components): a float4 of the
// list in, its 4 bytes out (components 4g .. 4g + 3 are bytes 4 (g % 4) .. of 16-byte
// group g / 4).
__global__ void copyToBytesKernel(
        const float* const* listData,
        uint8_t* const* listBytes,
        int d,
        int groups,
        const int64_t* spans) {
    const int64_t list = spans[3 * blockIdx.x];
    const int64_t from = spans[3 * blockIdx.x + 1];
    const int64_t to = spans[3 * blockIdx.x + 2];
    const float4* src = reinterpret_cast<const float4*>(listData[list]);
    uint8_t* dst = listBytes[list];
    for (int64_t t = from * groups + threadIdx.x; t < to * groups; t += blockDim.x) {
        const int64_t v = t / groups;
        const int g = int(t - v * groups);
        const float4 val = src[groupIndex(v, g, groups)];
        const uint32_t word = uint32_t(val.x) | uint32_t(val.y) << 8 | uint32_t(val.z) << 16 |
                uint32_t(val.w) << 24;
        *reinterpret_cast<uint32_t*>(dst + ivfByteLayoutIndex(v, 4 * g, d)) = word;
    }
}

__global__ void findIdsKernel(
        const int64_t* const* listIds,
        const int64_t* listLen,
        int64_t nlist,
        int64_t i0,
        int64_t ni,
        unsigned long long* where,
        int* count) {
    for (int64_t list = blockIdx.x; list < nlist; list += gridDim.x) {
        const int64_t len = listLen[list];
        const int64_t* ids = listIds[list];
        for (int64_t p = threadIdx.x; p < len; p += blockDim.x) {
            const int64_t id = ids[p];
            // id - i0 can overflow int64 for ids far from i0; as unsigned it cannot.
            const uint64_t r = uint64_t(id) - uint64_t(i0);
            if (id >= i0 && r < uint64_t(ni)) {
                atomicAdd(count + r, 1);
                atomicMax(where + r, (unsigned long long)list << 32 | (unsigned long long)p);
            }
        }
    }
}

__global__ void gatherRowsKernel(
        const float* const* listData,
        int d,
        int dp,
        const unsigned long long* where,
        const int* count,
        int64_t ni,
        float* out) {
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= ni * d) {
        return;
    }
    const int64_t r = t / d;
    const int j = int(t - r * d);
    if (count[r] == 0) {
        return;
    }
    const int64_t list = int64_t(where[r] >> 32);
    const int64_t v = int64_t(where[r] & 0xffffffffull);
    out[t] = listData[list][4 * groupIndex(v, j / 4, dp / 4) + j % 4];
}

unsigned blocksFor(int64_t work) {
    return unsigned((work + kThreads - 1) / kThreads);
}

} // namespace

void ivfAppendVectors(
        const float* x,
        int64_t n,
        int d,
        const int64_t* listNos,
        const int64_t* offsets,
        const int64_t* ids,
        float* const* listData,
        int64_t* const* listIds,
        int* notBytes,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    const int groups = ivfPaddedDim(d) / 4;
    appendKernel<<<blocksFor(n * groups), kThreads, 0, stream>>>(
            x, n, d, groups, listNos, offsets, ids, listData, listIds, notBytes);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void ivfCopyToBytes(
        const float* const* listData,
        uint8_t* const* listBytes,
        int d,
        const int64_t* spans,
        int64_t count,
        cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    copyToBytesKernel<<<unsigned(count), kThreads, 0, stream>>>(
            listData, listBytes, d, ivfPaddedDim(d) / 4, spans);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void ivfFindIds(
        const int64_t* const* listIds,
        const int64_t* listLen,
        int64_t nlist,
        int64_t i0,
        int64_t ni,
        unsigned long long* where,
        int* count,
        cudaStream_t stream) {
    if (nlist == 0 || ni == 0) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(where, 0, size_t(ni) * sizeof(*where), stream));
    const unsigned grid = unsigned(nlist < 65536 ? nlist : 65536);
    findIdsKernel<<<grid, kThreads, 0, stream>>>(listIds, listLen, nlist, i0, ni, where, count);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void ivfGatherRows(
        const float* const* listData,
        int d,
        const unsigned long long* where,
        const int* count,
        int64_t ni,
        float* out,
        cudaStream_t stream) {
    if (ni == 0) {
        return;
    }
    gatherRowsKernel<<<blocksFor(ni * d), kThreads, 0, stream>>>(
            listData, d, ivfPaddedDim(d), where, count, ni, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
