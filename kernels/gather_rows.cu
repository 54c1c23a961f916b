// GatherRows.h.
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "GatherRows.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;

int blocksFor(int64_t count) {
    return int(std::min<int64_t>((count + kThreads - 1) / kThreads, 65536));
}

template <typename In, typename Out>
__global__ void gatherRowsKernel(const In* x, const int64_t* rows, int64_t n, int d, Out* out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * d;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / d;
        out[i] = Out(x[rows[r] * d + (i - r * d)]);
    }
}

template <typename In, typename Out>
void gather(const In* x, const int64_t* rows, int64_t n, int d, Out* out, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    gatherRowsKernel<<<blocksFor(n * d), kThreads, 0, stream>>>(x, rows, n, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

__global__ void bytesToFloatsKernel(const uint8_t* x, size_t count, float* out) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += size_t(gridDim.x) * blockDim.x) {
        out[i] = float(x[i]);
    }
}

__global__ void floatsToBytesKernel(const float* x, size_t count, uint8_t* out, int* notBytes) {
    bool bad = false;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += size_t(gridDim.x) * blockDim.x) {
        const float v = x[i];
        // A NaN fails every comparison, so it is caught by the range test.
        const bool byte = v >= 0.f && v <= 255.f && v == truncf(v);
        bad |= !byte;
        out[i] = byte ? uint8_t(v) : 0;
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) {
        *notBytes = 1;
    }
}

} // namespace

void gatherRows(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream) {
    gather(x, rows, n, d, out, stream);
}

void gatherRows(
        const uint8_t* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream) {
    gather(x, rows, n, d, out, stream);
}

void gatherRows(
        const uint8_t* x,
        const int64_t* rows,
        int64_t n,
        int d,
        uint8_t* out,
        cudaStream_t stream) {
    gather(x, rows, n, d, out, stream);
}

void bytesToFloats(const uint8_t* x, size_t count, float* out, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    bytesToFloatsKernel<<<blocksFor(int64_t(count)), kThreads, 0, stream>>>(x, count, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void floatsToBytes(const float* x, size_t count, uint8_t* out, int* notBytes, cudaStream_t stream) {
    if (count == 0) {
        return;
    }
    floatsToBytesKernel<<<blocksFor(int64_t(count)), kThreads, 0, stream>>>(
            x, count, out, notBytes);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
