// GpuIndexBang's inner product by the MIPS-to-L2 transform (BangInnerProduct.h): the
// queries' padding and the conversion of the results, one block per query.
#include <cmath>

#include <faiss_ext/utils/CudaCheck.h>

#include "BangInnerProduct.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 128;

__global__ void padQueriesKernel(const float* q, int d, int width, float* out) {
    const int64_t row = blockIdx.x;
    for (int j = threadIdx.x; j < width; j += kThreads) {
        out[row * width + j] = j < d ? q[row * d + j] : 0.f;
    }
}

__global__ void innerProductsKernel(
        const float* q,
        int d,
        float M2,
        int k,
        float* D,
        const int64_t* I) {
    __shared__ float partial[kThreads];
    const int64_t row = blockIdx.x;
    float s = 0.f;
    for (int j = threadIdx.x; j < d; j += kThreads) {
        const float v = q[row * d + j];
        s = fmaf(v, v, s);
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) {
            partial[threadIdx.x] += partial[threadIdx.x + width];
        }
        __syncthreads();
    }
    const float c = partial[0] + M2;
    for (int j = threadIdx.x; j < k; j += kThreads) {
        const int64_t e = row * k + j;
        D[e] = I[e] >= 0 ? 0.5f * (c - D[e]) : -INFINITY;
    }
}

} // namespace

void bangPadQueries(const float* q, int64_t n, int d, int width, float* out, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    padQueriesKernel<<<unsigned(n), kThreads, 0, stream>>>(q, d, width, out);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void bangInnerProductsFromL2(
        const float* q,
        int64_t n,
        int d,
        float M2,
        int k,
        float* D,
        const int64_t* I,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    innerProductsKernel<<<unsigned(n), kThreads, 0, stream>>>(q, d, M2, k, D, I);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace kernels
} // namespace faiss_ext
