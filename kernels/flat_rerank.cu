// Exact FP32 re-rank of a TF32 shortlist, with the check that makes it provably exact.
#include <math_constants.h>

#include <faiss_ext/utils/CudaCheck.h>
#include "BlockSelect.cuh"
#include "Rerank.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kRerankThreads = 256;
constexpr int kRerankWarps = kRerankThreads / 32;

__global__ void maxValueKernel(const float* values, int64_t n, float* out) {
    __shared__ float warpMax[32];
    float m = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        m = fmaxf(m, values[i]);
    }
    for (int off = 16; off > 0; off >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    }
    if ((threadIdx.x & 31) == 0) {
        warpMax[threadIdx.x / 32] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < blockDim.x / 32; ++w) {
            m = fmaxf(m, warpMax[w]);
        }
        *out = m;
    }
}

/// Bound on |TF32 key - exact key| in the metric's distance space, for a query of
/// squared norm qSq against any base vector of squared norm <= mSq.
/// TF32 keeps 10 mantissa bits: each rounded operand is off by < 2^-10 relative, so
/// each product by < 2^-9 + 2^-20, and the dot product by that times |q||b| (Cauchy-
/// Schwarz), plus the accumulation (d terms at 2^-22 each, generous for the tensor
/// cores' FP32 adds). The FP32 terms (norm addition, the direct re-rank sum) add
/// (d + 3) 2^-23 of their magnitude.
__device__ float tf32ErrorBound(float qSq, float mSq, int d, bool innerProduct) {
    const float q = sqrtf(qSq);
    const float m = sqrtf(mSq);
    const float dotErr = (ldexpf(1.f, -9) + ldexpf(1.f, -19) + d * ldexpf(1.f, -22)) * q * m;
    const float fp32Err = (d + 3) * ldexpf(1.f, -23) * (innerProduct ? q * m : (q + m) * (q + m));
    // 1/16 more for the rounding of this formula itself.
    return 1.0625f * ((innerProduct ? 1.f : 2.f) * dotErr + 2.f * fp32Err);
}

// One block per query: the warps compute the shortlist's exact keys, the block sorts
// them, and the first k are written if the boundary check holds.
__global__ void __launch_bounds__(kRerankThreads) rerankKernel(RerankArgs a, int len) {
    extern __shared__ __align__(16) uint64_t keys[];
    __shared__ int flagged;
    const int64_t row = blockIdx.x;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const float* q = a.queries + row * a.d;
    const int64_t* ids = a.candI + row * a.ldCand;

    for (int j = warp; j < len; j += kRerankWarps) {
        const int64_t id = j < a.shortlist ? ids[j] : -1;
        uint64_t key = kSelectEmptyKey;
        if (id >= 0) {
            const float* b = a.base + id * a.d;
            float acc = 0.f;
            for (int c = lane; c < a.d; c += 32) {
                const float x = q[c];
                const float y = b[c];
                acc = a.innerProduct ? fmaf(x, y, acc) : fmaf(x - y, x - y, acc);
            }
            for (int off = 16; off > 0; off >>= 1) {
                acc += __shfl_xor_sync(0xffffffffu, acc, off);
            }
            key = selectKey(a.innerProduct ? -acc : acc, j);
        }
        if (lane == 0) {
            keys[j] = key;
        }
    }
    __syncthreads();
    bitonicSort<kRerankThreads>(keys, len);

    if (threadIdx.x == 0) {
        const float kth = selectKeyValue(keys[a.k - 1]);
        const bool boundaryMissing = ids[a.shortlist] < 0;
        bool exact = boundaryMissing;
        if (!boundaryMissing) {
            const float qSq = a.queryNorms[row];
            const float boundary =
                    a.candD[row * a.ldCand + a.shortlist] + (a.innerProduct ? 0.f : qSq);
            const float err = tf32ErrorBound(qSq, *a.baseMaxSqNorm, a.d, a.innerProduct);
            exact = boundary - err > kth; // false when anything is NaN
        }
        flagged = !exact;
        if (!exact) {
            const int slot = atomicAdd(a.fallbackCount, 1);
            a.fallbackRows[slot] = a.rowBase + row;
        }
    }
    __syncthreads();
    if (flagged) {
        return;
    }
    for (int i = threadIdx.x; i < a.k; i += kRerankThreads) {
        const uint64_t key = keys[i];
        const int p = selectKeyPosition(key);
        const int64_t id = p < 0 ? -1 : ids[p];
        const float v = selectKeyValue(key);
        a.outD[row * a.k + i] = id < 0 ? (a.innerProduct ? -CUDART_INF_F : CUDART_INF_F)
                                       : (a.innerProduct ? -v : v);
        a.outI[row * a.k + i] = id;
    }
}

__global__ void gatherRowsKernel(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n * d) {
        const int64_t r = i / d;
        out[i] = x[rows[r] * d + (i - r * d)];
    }
}

__global__ void scatterResultsKernel(
        const float* D,
        const int64_t* I,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n * k) {
        const int64_t r = i / k;
        const int64_t dst = rows[r] * k + (i - r * k);
        outD[dst] = D[i];
        outI[dst] = I[i];
    }
}

unsigned blocksFor(int64_t n, int threads) {
    return unsigned((n + threads - 1) / threads);
}

} // namespace

void maxValue(const float* values, int64_t n, float* out, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(n >= 1, "maxValue: n=%lld", (long long)n);
    maxValueKernel<<<1, 1024, 0, stream>>>(values, n, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void rerankExact(const RerankArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= a.shortlist && a.shortlist < a.ldCand,
            "rerankExact: k=%d shortlist=%d with %lld candidate columns", a.k, a.shortlist,
            (long long)a.ldCand);
    if (a.nq == 0) {
        return;
    }
    const int len = nextPow2(a.shortlist);
    const size_t smem = size_t(len) * sizeof(uint64_t);
    if (smem > 48 * 1024) {
        FAISS_EXT_CUDA_CHECK(cudaFuncSetAttribute(
                rerankKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    }
    FAISS_THROW_IF_NOT_FMT(a.nq <= INT32_MAX, "rerankExact: %lld rows", (long long)a.nq);
    rerankKernel<<<unsigned(a.nq), kRerankThreads, smem, stream>>>(a, len);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

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
    gatherRowsKernel<<<blocksFor(n * d, 256), 256, 0, stream>>>(x, rows, n, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void scatterResults(
        const float* D,
        const int64_t* I,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    scatterResultsKernel<<<blocksFor(n * k, 256), 256, 0, stream>>>(D, I, rows, n, k, outD, outI);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
