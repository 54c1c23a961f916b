// GatherRows.h.
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "GatherRows.h"

namespace faiss_ext {
namespace kernels {

namespace {

__global__ void gatherRowsKernel(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * d;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / d;
        out[i] = x[rows[r] * d + (i - r * d)];
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
    if (n == 0) {
        return;
    }
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((n * d + kThreads - 1) / kThreads, 65536);
    gatherRowsKernel<<<int(blocks), kThreads, 0, stream>>>(x, rows, n, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
