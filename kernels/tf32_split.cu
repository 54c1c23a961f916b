// 3xTF32 operand split (Tf32Split.h).
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "Tf32Split.h"

namespace faiss_ext {
namespace kernels {

namespace {

/// x rounded to the nearest TF32 value (ties away from zero), as an FP32 number whose
/// low 13 mantissa bits are zero, so the tensor cores' own conversion keeps it exactly.
/// Finite inputs only (the indexes refuse NaN and inf vectors).
__device__ __forceinline__ float roundToTF32(float x) {
    const unsigned u = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

__global__ void splitTF32Kernel(const float* x, int64_t n, int d, bool query, float* out) {
    const int64_t total = n * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d;
        const int j = int(i - row * d);
        const float v = x[i];
        const float hi = roundToTF32(v);
        const float lo = v - hi;
        float* o = out + row * 3 * d + j;
        o[0] = hi;
        o[d] = query ? hi : lo;
        o[2 * d] = query ? lo : hi;
    }
}

} // namespace

void splitTF32(
        const float* x,
        int64_t n,
        int d,
        Tf32SplitRole role,
        float* out,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((n * d + kThreads - 1) / kThreads, 65536);
    splitTF32Kernel<<<int(blocks), kThreads, 0, stream>>>(
            x, n, d, role == Tf32SplitRole::kQuery, out);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace kernels
} // namespace faiss_ext
