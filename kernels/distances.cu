// Squared norms of rows, and turning selection keys into FAISS distances.
#include <limits>

#include <faiss_ext/utils/CudaCheck.h>

#include "DistanceFinish.cuh"
#include "Distances.h"

namespace faiss_ext {
namespace kernels {

namespace {

// One warp per row: lanes stride over the dimensions, then a shuffle reduction.
__global__ void rowSquaredNormsKernel(const float* x, int64_t n, int d, float* out) {
    int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (row >= n) {
        return;
    }
    const float* v = x + row * d;
    float acc = 0.f;
    for (int j = lane; j < d; j += 32) {
        acc += v[j] * v[j];
    }
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    }
    if (lane == 0) {
        out[row] = acc;
    }
}

__global__ void finishKnnKernel(
        const float* inD,
        const int64_t* inI,
        int64_t ldIn,
        int64_t n,
        int k,
        DistanceFinish finish,
        const float* rowNorms,
        float* outD,
        int64_t* outI) {
    int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n * k) {
        return;
    }
    int64_t row = idx / k;
    int64_t col = idx - row * k;
    const int64_t id = inI[row * ldIn + col];
    outD[idx] = finishedDistance(inD[row * ldIn + col], id, finish, rowNorms ? rowNorms[row] : 0.f);
    outI[idx] = id;
}

__global__ void fillMissingKernel(float* outD, int64_t* outI, int64_t count, float value) {
    int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) {
        outD[i] = value;
        outI[i] = -1;
    }
}

} // namespace

void fillMissingResults(
        float* outD,
        int64_t* outI,
        int64_t count,
        DistanceFinish finish,
        cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    constexpr int kThreads = 256;
    const float inf = std::numeric_limits<float>::infinity();
    const float value = finish == DistanceFinish::kL2 ? inf : -inf;
    fillMissingKernel<<<unsigned((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            outD, outI, count, value);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void rowSquaredNorms(const float* x, int64_t n, int d, float* out, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    constexpr int kThreads = 256;
    int64_t blocks = (n * 32 + kThreads - 1) / kThreads;
    rowSquaredNormsKernel<<<unsigned(blocks), kThreads, 0, stream>>>(x, n, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void finishKnn(
        const float* inD,
        const int64_t* inI,
        int64_t ldIn,
        int64_t n,
        int k,
        DistanceFinish finish,
        const float* rowNorms,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    constexpr int kThreads = 256;
    int64_t blocks = (n * k + kThreads - 1) / kThreads;
    finishKnnKernel<<<unsigned(blocks), kThreads, 0, stream>>>(
            inD, inI, ldIn, n, k, finish, rowNorms, outD, outI);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
