// 3xTF32 and bf16x3 operand splits (OperandSplit.h).
#include <algorithm>

#include <cuda_bf16.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "OperandSplit.h"

namespace faiss_ext {
namespace kernels {

namespace {

/// x rounded to the nearest TF32 value (ties away from zero), as an FP32 number whose
/// low 13 mantissa bits are zero, so the tensor cores' own conversion keeps it exactly.
__device__ __forceinline__ float roundToTF32(float x) {
    const unsigned u = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

/// The split of one element: 3 values of type T at out[0], out[d], out[2d].
struct Tf32Parts {
    using T = float;
    __device__ static void split(float v, float& a, float& b) {
        a = roundToTF32(v);
        b = v - a; // exact in FP32
    }
};

struct Bf16Parts {
    using T = __nv_bfloat16;
    __device__ static void split(float v, __nv_bfloat16& a, __nv_bfloat16& b) {
        a = __float2bfloat16_rn(v);
        b = __float2bfloat16_rn(v - __bfloat162float(a)); // v - a is exact in FP32
    }
};

/// Query rows [big, big, small], base rows [big, small, big]: the GEMM over K = 3d sums
/// big.big + big.small + small.big.
template <typename Parts>
__global__ void splitRowsKernel(
        const float* x,
        int64_t n,
        int d,
        bool query,
        typename Parts::T* out) {
    const int64_t total = n * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d;
        const int j = int(i - row * d);
        typename Parts::T big, small;
        Parts::split(x[i], big, small);
        typename Parts::T* o = out + row * 3 * d + j;
        o[0] = big;
        o[d] = query ? big : small;
        o[2 * d] = query ? small : big;
    }
}

template <typename Parts>
void launchSplit(const float* x, int64_t n, int d, SplitRole role, void* out, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((n * d + kThreads - 1) / kThreads, 65536);
    splitRowsKernel<Parts><<<int(blocks), kThreads, 0, stream>>>(
            x, n, d, role == SplitRole::kQuery, static_cast<typename Parts::T*>(out));
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

size_t splitRowBytes(GemmProduct product, int d) {
    switch (product) {
        case GemmProduct::kFloat32:
            return 0;
        case GemmProduct::kTF32x3:
            return size_t(3) * d * sizeof(float);
        case GemmProduct::kBF16x3:
            return size_t(3) * d * sizeof(__nv_bfloat16);
    }
    FAISS_THROW_FMT("unknown GemmProduct %d", int(product));
}

void splitRows(
        GemmProduct product,
        const float* x,
        int64_t n,
        int d,
        SplitRole role,
        void* out,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    switch (product) {
        case GemmProduct::kTF32x3:
            launchSplit<Tf32Parts>(x, n, d, role, out, stream);
            return;
        case GemmProduct::kBF16x3:
            launchSplit<Bf16Parts>(x, n, d, role, out, stream);
            return;
        case GemmProduct::kFloat32:
            break;
    }
    FAISS_THROW_FMT("splitRows: GemmProduct %d has no split", int(product));
}

} // namespace kernels
} // namespace faiss_ext
