// The rule for non-finite queries: a warp per query checks its components and, where
// one is NaN or infinite, overwrites the query's results with missing ones.
#include <algorithm>
#include <limits>

#include <faiss_ext/utils/CudaCheck.h>
#include "NonFinite.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__global__ void __launch_bounds__(kThreads) clearNonFiniteKernel(
        const float* __restrict__ x,
        int64_t n,
        int d,
        int k,
        float missing,
        float* __restrict__ D,
        int64_t* __restrict__ I) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = int64_t(gridDim.x) * kWarps;
    for (int64_t q = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; q < n; q += warps) {
        const float* v = x + q * d;
        bool bad = false;
        for (int j = lane; j < d; j += 32) {
            bad |= !isfinite(v[j]);
        }
        if (__any_sync(0xffffffffu, bad)) {
            for (int j = lane; j < k; j += 32) {
                D[q * k + j] = missing;
                I[q * k + j] = -1;
            }
        }
    }
}

} // namespace

void clearNonFiniteQueryResults(
        const float* x,
        int64_t n,
        int d,
        int k,
        bool innerProduct,
        float* D,
        int64_t* I,
        cudaStream_t stream) {
    if (n <= 0) {
        return;
    }
    const int64_t blocks = std::min<int64_t>((n + kWarps - 1) / kWarps, 8192);
    const float inf = std::numeric_limits<float>::infinity();
    clearNonFiniteKernel<<<int(blocks), kThreads, 0, stream>>>(
            x, n, d, k, innerProduct ? -inf : inf, D, I);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
