// PlainProduct.h.
#include <algorithm>

#include <cuda_bf16.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "PlainProduct.h"

namespace faiss_ext {
namespace kernels {

namespace {

/// Queries a thread multiplies its base row with: each base element loaded once serves
/// this many products.
constexpr int kQueriesPerThread = 8;
constexpr int kThreads = 128;
/// Products summed apart before joining the total: the rounding error grows as
/// (kChunk + K / kChunk) ulps instead of K, inside every product's keyErrorBound.
constexpr int kChunk = 64;

__device__ float toFloat(float x) {
    return x;
}

__device__ float toFloat(__nv_bfloat16 x) {
    return __bfloat162float(x);
}

template <typename T>
__global__ void plainProductKernel(
        const T* __restrict__ q,
        int64_t nq,
        const T* __restrict__ b,
        int64_t nb,
        int K,
        float alpha,
        float* __restrict__ dist) {
    const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (col >= nb) {
        return;
    }
    const T* row = b + col * K;
    for (int64_t q0 = int64_t(blockIdx.y) * kQueriesPerThread; q0 < nq;
         q0 += int64_t(gridDim.y) * kQueriesPerThread) {
        const int rows = int(min(int64_t(kQueriesPerThread), nq - q0));
        const T* query = q + q0 * K;
        float acc[kQueriesPerThread] = {};
        for (int c0 = 0; c0 < K; c0 += kChunk) {
            float part[kQueriesPerThread] = {};
            for (int c = c0; c < min(c0 + kChunk, K); ++c) {
                const float v = toFloat(row[c]);
#pragma unroll
                for (int i = 0; i < kQueriesPerThread; ++i) {
                    if (i < rows) {
                        part[i] = fmaf(toFloat(query[int64_t(i) * K + c]), v, part[i]);
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < kQueriesPerThread; ++i) {
                acc[i] += part[i];
            }
        }
#pragma unroll
        for (int i = 0; i < kQueriesPerThread; ++i) {
            if (i < rows) {
                dist[(q0 + i) * nb + col] = alpha * acc[i];
            }
        }
    }
}

template <typename T>
void launch(
        const void* q,
        int64_t nq,
        const void* b,
        int64_t nb,
        int K,
        float alpha,
        float* dist,
        cudaStream_t stream) {
    const dim3 grid(
            unsigned((nb + kThreads - 1) / kThreads),
            unsigned(std::min<int64_t>((nq + kQueriesPerThread - 1) / kQueriesPerThread, 65535)));
    plainProductKernel<T><<<grid, kThreads, 0, stream>>>(
            static_cast<const T*>(q), nq, static_cast<const T*>(b), nb, K, alpha, dist);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace

void plainProduct(
        GemmProduct product,
        const void* q,
        int64_t nq,
        const void* b,
        int64_t nb,
        int K,
        float alpha,
        float* dist,
        cudaStream_t stream) {
    if (nq == 0 || nb == 0) {
        return;
    }
    if (product == GemmProduct::kBF16x3) {
        launch<__nv_bfloat16>(q, nq, b, nb, K, alpha, dist, stream);
    } else {
        launch<float>(q, nq, b, nb, K, alpha, dist, stream);
    }
}

} // namespace kernels
} // namespace faiss_ext
