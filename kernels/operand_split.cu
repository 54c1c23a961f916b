// 3xTF32 and bf16x3 operand splits (OperandSplit.h).
#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "OperandSplit.h"
#include "Tf32Round.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

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

constexpr int kSplitThreads = 256;
constexpr int kSplitWarps = kSplitThreads / 32;

/// Query rows [big, big, small], base rows [big, small, big]: the GEMM over K = 3d sums
/// big.big + big.small + small.big. One warp a row (rows strided over the grid), lanes
/// over its columns: no per-element division, and with Vec = 4 (d a multiple of 4,
/// aligned rows) one float4 load and three 4-element stores a lane and step.
template <typename Parts, int Vec>
__global__ void splitRowsKernel(
        const float* x,
        int64_t n,
        int d,
        bool query,
        typename Parts::T* out) {
    using T = typename Parts::T;
    struct alignas(Vec * sizeof(T)) Group {
        T v[Vec];
    };
    struct alignas(Vec * sizeof(float)) Source {
        float v[Vec];
    };
    const int lane = threadIdx.x % 32;
    const int groups = d / Vec;
    for (int64_t row = int64_t(blockIdx.x) * kSplitWarps + threadIdx.x / 32; row < n;
         row += int64_t(gridDim.x) * kSplitWarps) {
        const Source* src = reinterpret_cast<const Source*>(x + row * d);
        Group* dst = reinterpret_cast<Group*>(out + row * 3 * d);
        for (int g = lane; g < groups; g += 32) {
            const Source s = src[g];
            Group big, small;
#pragma unroll
            for (int e = 0; e < Vec; ++e) {
                Parts::split(s.v[e], big.v[e], small.v[e]);
            }
            dst[g] = big;
            dst[groups + g] = query ? big : small;
            dst[2 * groups + g] = query ? small : big;
        }
    }
}

template <typename Parts>
void launchSplit(const float* x, int64_t n, int d, SplitRole role, void* out, cudaStream_t stream) {
    using T = typename Parts::T;
    const int64_t blocks = std::min<int64_t>((n + kSplitWarps - 1) / kSplitWarps, 65536);
    const bool query = role == SplitRole::kQuery;
    T* o = static_cast<T*>(out);
    const bool vec4 = d % 4 == 0 && reinterpret_cast<uintptr_t>(x) % (4 * sizeof(float)) == 0 &&
            reinterpret_cast<uintptr_t>(out) % (4 * sizeof(T)) == 0;
    if (vec4) {
        splitRowsKernel<Parts, 4><<<int(blocks), kSplitThreads, 0, stream>>>(x, n, d, query, o);
    } else {
        splitRowsKernel<Parts, 1><<<int(blocks), kSplitThreads, 0, stream>>>(x, n, d, query, o);
    }
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

size_t splitRowBytes(GemmProduct product, int d) {
    switch (product) {
        case GemmProduct::kFloat32:
        case GemmProduct::kTF32:
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
        case GemmProduct::kTF32:
            break;
    }
    FAISS_THROW_FMT("splitRows: GemmProduct %d has no split", int(product));
}

} // namespace kernels
} // namespace faiss_ext
