// The flat search's threshold path (ThresholdFilter.h).
#include <algorithm>

#include <math_constants.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "RerankBand.h"
#include "ThresholdFilter.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

/// A non-negative float's bits order like the float: atomicMax on them is a float max.
__global__ void maxSquaredNormKernel(
        const float* base,
        const float* norms,
        int64_t nb,
        int d,
        unsigned* out) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
    float best = 0.f;
    for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < nb;
         row += warps) {
        float v = 0.f;
        if (norms != nullptr) {
            v = norms[row];
        } else {
            const float* x = base + row * d;
            for (int j = lane; j < d; j += 32) {
                v += x[j] * x[j];
            }
            for (int off = 16; off > 0; off >>= 1) {
                v += __shfl_xor_sync(kFullMask, v, off);
            }
        }
        best = fmaxf(best, v);
    }
    for (int off = 16; off > 0; off >>= 1) {
        best = fmaxf(best, __shfl_xor_sync(kFullMask, best, off));
    }
    if (lane == 0) {
        atomicMax(out, __float_as_uint(best));
    }
}

__global__ void keyThresholdsKernel(
        const float* kth,
        int64_t ldKth,
        int64_t n,
        const float* queryNorms,
        const float* maxBaseNorm,
        KeyErrorBound bound,
        bool l2,
        float* thresholds) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= n) {
        return;
    }
    const float e = keyErrorOf(bound, queryNorms[r], *maxBaseNorm, l2);
    const float qn = fmaxf(queryNorms[r], 0.f);
    const float dist = kth[r * ldKth];
    const float key = l2 ? dist - qn : -dist;
    // The subtraction and the sum round too: a relative 2^-22 of the terms on top.
    thresholds[r] = key + e + (fabsf(dist) + qn) * 2.4e-7f;
}

constexpr int kFilterThreads = 256;
/// Rows a block filters: each thread loads its columns' bias and allowed bits once and
/// reuses them this many times.
constexpr int kFilterRows = 8;

/// out[j] = p[j] for j < kCols and j < left (0 past it): one float4 load when kCols is 4
/// and all four exist (p 16-byte aligned).
template <int kCols>
__device__ __forceinline__ void loadColumns(const float* p, bool whole, int64_t left, float* out) {
    if constexpr (kCols == 4) {
        if (whole) {
            const float4 v = *reinterpret_cast<const float4*>(p);
            out[0] = v.x;
            out[1] = v.y;
            out[2] = v.z;
            out[3] = v.w;
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
        out[j] = j < left ? p[j] : 0.f;
    }
}

/// Each thread owns kCols consecutive columns (4: one float4 load a row, when the rows
/// are 16-byte aligned) of kFilterRows rows. A row's key passes when key + bias <=
/// threshold and its id is allowed; the survivors (rare) are appended, id and key, with
/// one atomic a warp and a row.
template <int kCols>
__global__ void __launch_bounds__(kFilterThreads) appendUnderThresholdKernel(
        const float* dist,
        int64_t ldDist,
        int64_t nrows,
        int64_t ncols,
        const float* colBias,
        const float* thresholds,
        const uint32_t* allow,
        int32_t idBase,
        int32_t* ids,
        float* keys,
        int64_t capacity,
        uint32_t* counts) {
    const int64_t c = (int64_t(blockIdx.x) * kFilterThreads + threadIdx.x) * kCols;
    const int64_t r0 = int64_t(blockIdx.y) * kFilterRows;
    const int lane = threadIdx.x & 31;
    const bool whole = c + kCols <= ncols;
    float bias[kCols];
    unsigned usable = 0; // bit j: column c + j exists and its id is allowed
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
        const int64_t col = c + j;
        bias[j] = 0.f;
        if (col < ncols) {
            const int64_t id = idBase + col;
            const bool allowed = allow == nullptr || ((allow[id >> 5] >> (id & 31)) & 1u);
            usable |= unsigned(allowed) << j;
        }
    }
    if (colBias != nullptr) {
        loadColumns<kCols>(colBias + c, whole, ncols - c, bias);
    }
    for (int rr = 0; rr < kFilterRows; ++rr) {
        const int64_t r = r0 + rr;
        if (r >= nrows) {
            break; // the same for the whole block
        }
        float key[kCols];
        loadColumns<kCols>(dist + r * ldDist + c, whole, ncols - c, key);
        const float t = thresholds[r];
        unsigned pass = 0;
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
            key[j] += bias[j];
            pass |= unsigned(key[j] <= t) << j;
        }
        pass &= usable;
        // Survivors are rare (about C / 4 of a query's nb keys): most warps go on here.
        if (__ballot_sync(kFullMask, pass != 0) == 0) {
            continue;
        }
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
            const bool mine = (pass >> j) & 1u;
            const unsigned m = __ballot_sync(kFullMask, mine);
            if (m == 0) {
                continue;
            }
            const int leader = __ffs(m) - 1;
            uint32_t first = 0;
            if (lane == leader) {
                first = atomicAdd(&counts[r], uint32_t(__popc(m)));
            }
            first = __shfl_sync(kFullMask, first, leader);
            if (mine) {
                const int64_t pos = int64_t(first) + __popc(m & ((1u << lane) - 1u));
                if (pos < capacity) {
                    ids[r * capacity + pos] = idBase + int32_t(c + j);
                    keys[r * capacity + pos] = key[j];
                }
            }
        }
    }
}

constexpr int kPadThreads = 256;

__global__ void padListedKeysKernel(float* keys, const uint32_t* counts, int64_t capacity) {
    const int64_t r = blockIdx.y;
    const int64_t j = int64_t(blockIdx.x) * kPadThreads + threadIdx.x;
    if (j < capacity && j >= int64_t(counts[r])) {
        keys[r * capacity + j] = CUDART_INF_F;
    }
}

__global__ void rerankBandLimitsKernel(
        const float* kthKeys,
        int64_t ldKth,
        int64_t n,
        const float* queryNorms,
        const float* maxBaseNorm,
        KeyErrorBound keyBound,
        float rerankRel,
        bool l2,
        float* limits) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r < n) {
        limits[r] = rerankBandLimit(
                kthKeys[r * ldKth], queryNorms[r], *maxBaseNorm, keyBound, rerankRel, l2);
    }
}

/// The re-rank's distance of query q to base row b, computed by a whole warp (every
/// lane gets it): sum (q_j - b_j)^2 for L2, -sum q_j b_j for inner product. Each lane
/// sums its ceil(d / 32) terms, then five shuffle sums add the lanes: the order
/// rerankErrorRel (RerankBand.h) bounds.
__device__ __forceinline__ float exactDistance(
        const float* q,
        const float* b,
        int d,
        bool l2,
        int lane) {
    float acc = 0.f;
    for (int i = lane; i < d; i += 32) {
        if (l2) {
            const float t = q[i] - b[i];
            acc += t * t;
        } else {
            acc += q[i] * b[i];
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(kFullMask, acc, off);
    }
    return l2 ? acc : -acc;
}

/// 8 warps, each reads 32 listed slots (an id and key a lane) and re-ranks, one after
/// the other, those inside the band. Row r's ids, keys and results start at r * ld;
/// counts (null: every slot) says how many of its slots are listed.
constexpr int kRerankThreads = 256;

template <typename Id>
__global__ void __launch_bounds__(kRerankThreads) rerankListedKernel(
        const float* queries,
        const float* base,
        int d,
        bool l2,
        const Id* ids,
        const float* keys,
        int64_t ld,
        const float* limits,
        const uint32_t* counts,
        int64_t capacity,
        float* outD,
        int64_t* outI) {
    const int64_t r = blockIdx.y;
    const int64_t listed = counts != nullptr ? int64_t(counts[r]) : capacity;
    const int64_t count = listed < capacity ? listed : capacity;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int64_t first = int64_t(blockIdx.x) * kRerankThreads + warp * 32;
    const int64_t slot = first + lane;
    // Slots past the count, missing ids (-1, key +inf) and listed ids outside the band
    // (they cannot be among the k nearest) get +inf.
    bool inBand = false;
    int64_t myId = -1;
    if (slot < count) {
        myId = int64_t(ids[r * ld + slot]);
        inBand = myId >= 0 && keys[r * ld + slot] <= limits[r];
    }
    if (slot < capacity && !inBand) {
        outD[r * ld + slot] = CUDART_INF_F;
        outI[r * ld + slot] = -1;
    }
    const float* q = queries + r * d;
    for (unsigned pending = __ballot_sync(kFullMask, inBand); pending != 0;
         pending &= pending - 1) {
        const int src = __ffs(pending) - 1;
        const int64_t id = __shfl_sync(kFullMask, myId, src);
        const float dist = exactDistance(q, base + id * d, d, l2, lane);
        if (lane == 0) {
            outD[r * ld + first + src] = dist;
            outI[r * ld + first + src] = id;
        }
    }
}

/// rerankRow: each warp takes 32 consecutive values, then computes the exact distances
/// of those inside the band one after the other. A warp reads its values before it
/// writes any, so the row is rewritten in place.
__global__ void __launch_bounds__(kRerankThreads) rerankRowKernel(
        const float* query,
        const float* base,
        int d,
        bool l2,
        float* values,
        int64_t ncols,
        const float* limit) {
    const int lane = threadIdx.x & 31;
    const int64_t first = (int64_t(blockIdx.x) * kRerankThreads + threadIdx.x) / 32 * 32;
    const int64_t c = first + lane;
    const float v = c < ncols ? values[c] : CUDART_INF_F;
    // +inf: filtered out (or never a result), even under a limit of +inf.
    const bool inBand = v < CUDART_INF_F && v <= *limit;
    if (c < ncols && !inBand && v != CUDART_INF_F) {
        values[c] = CUDART_INF_F;
    }
    for (unsigned pending = __ballot_sync(kFullMask, inBand); pending != 0;
         pending &= pending - 1) {
        const int src = __ffs(pending) - 1;
        const float dist = exactDistance(query, base + (first + src) * d, d, l2, lane);
        if (lane == 0) {
            values[first + src] = dist;
        }
    }
}

__global__ void strideBitmapKernel(
        const uint32_t* allow,
        int64_t stride,
        int64_t rows,
        uint32_t* out) {
    const int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (w * 32 >= rows) {
        return;
    }
    uint32_t word = 0;
    for (int j = 0; j < 32 && w * 32 + j < rows; ++j) {
        const int64_t id = (w * 32 + j) * stride;
        word |= ((allow[id >> 5] >> (id & 31)) & 1u) << j;
    }
    out[w] = word;
}

__global__ void overflowRowsKernel(
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        int64_t* rows,
        int* nOver) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r < nrows && int64_t(counts[r]) > capacity) {
        rows[atomicAdd(nOver, 1)] = r;
    }
}

__global__ void scatterResultRowsKernel(
        const float* inD,
        const int64_t* inI,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n * k) {
        return;
    }
    const int64_t i = idx / k;
    const int64_t j = idx - i * k;
    outD[rows[i] * k + j] = inD[idx];
    outI[rows[i] * k + j] = inI[idx];
}

int blocksFor(int64_t work, int threads) {
    return int(std::max<int64_t>(1, divUp<int64_t>(work, threads)));
}

} // namespace

KeyErrorBound keyErrorBound(int d, GemmProduct product) {
    constexpr double u = 1.0 / (1 << 24); // FP32's unit roundoff
    KeyErrorBound b;
    // Squared norms (rowSquaredNorms: d / 32 terms a lane, then 5 shuffle sums) and the
    // key's own sum: far below (d + 8) u, doubled for margin.
    b.normRel = float(2 * (d + 8) * u);
    switch (product) {
        case GemmProduct::kFloat32:
            // FP32 accumulation in any order: gamma_d = d u, doubled for margin.
            b.dotRel = float(2 * (d + 4) * u);
            return b;
        case GemmProduct::kTF32:
            // Per product, both operands rounded to TF32 (2^-11 each, 2^-10 if the
            // conversion truncates); then the accumulation as for 3xTF32 over d / 8
            // k-steps; doubled for margin.
            b.dotRel = float(2 * (2.0 / (1 << 10) + (1.0 * d / 8 + 16) / (1 << 23)));
            return b;
        case GemmProduct::kTF32x3:
            // Per product, the dropped lo.lo term (2^-22) and the TF32 conversion of both
            // lo parts (2^-21 each); then the tensor cores' accumulation, which truncates
            // once per k-step of 8 products (3d / 8 steps), taken at 3 ulps a step (2^-23
            // each) plus 16 for cuBLAS's reductions; doubled for margin.
            b.dotRel = float(2 * (1.25 / (1 << 20) + (9.0 * d / 8 + 16) / (1 << 23)));
            return b;
        case GemmProduct::kBF16x3:
            // Per product, the dropped h.l, l.h and m.m terms, each at most
            // 2^-16 (1 + 2^-8)^2 of |q_j| |b_j| (bf16 keeps 8 significant bits); then the
            // accumulation as for 3xTF32 but with k-steps of 16 products; doubled.
            b.dotRel = float(2 * (3.05 / (1 << 16) + (9.0 * d / 16 + 16) / (1 << 23)));
            return b;
    }
    FAISS_THROW_FMT("unknown GemmProduct %d", int(product));
}

void maxSquaredNorm(
        const float* base,
        const float* norms,
        int64_t nb,
        int d,
        float* out,
        cudaStream_t stream) {
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));
    if (nb == 0) {
        return;
    }
    constexpr int kThreads = 256;
    const int blocks = int(std::min<int64_t>(divUp<int64_t>(nb * 32, kThreads), 4096));
    maxSquaredNormKernel<<<blocks, kThreads, 0, stream>>>(
            base, norms, nb, d, reinterpret_cast<unsigned*>(out));
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void keyThresholds(
        const float* kth,
        int64_t ldKth,
        int64_t n,
        const float* queryNorms,
        const float* maxBaseNorm,
        KeyErrorBound bound,
        bool l2,
        float* thresholds,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    keyThresholdsKernel<<<blocksFor(n, 256), 256, 0, stream>>>(
            kth, ldKth, n, queryNorms, maxBaseNorm, bound, l2, thresholds);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void appendUnderThreshold(
        const float* dist,
        int64_t ldDist,
        int64_t nrows,
        int64_t ncols,
        const float* colBias,
        const float* thresholds,
        const uint32_t* allow,
        int32_t idBase,
        int32_t* ids,
        float* keys,
        int64_t capacity,
        uint32_t* counts,
        cudaStream_t stream) {
    if (nrows == 0 || ncols == 0) {
        return;
    }
    const int64_t rowBlocks = divUp<int64_t>(nrows, kFilterRows);
    FAISS_THROW_IF_NOT_FMT(rowBlocks <= 65535, "appendUnderThreshold: %lld rows", (long long)nrows);
    // float4 loads need 16-byte aligned rows and bias.
    const bool aligned = ldDist % 4 == 0 && reinterpret_cast<uintptr_t>(dist) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(colBias) % 16 == 0;
    if (aligned) {
        const dim3 grid(unsigned(divUp<int64_t>(ncols, kFilterThreads * 4)), unsigned(rowBlocks));
        appendUnderThresholdKernel<4><<<grid, kFilterThreads, 0, stream>>>(
                dist, ldDist, nrows, ncols, colBias, thresholds, allow, idBase, ids, keys, capacity,
                counts);
    } else {
        const dim3 grid(unsigned(divUp<int64_t>(ncols, kFilterThreads)), unsigned(rowBlocks));
        appendUnderThresholdKernel<1><<<grid, kFilterThreads, 0, stream>>>(
                dist, ldDist, nrows, ncols, colBias, thresholds, allow, idBase, ids, keys, capacity,
                counts);
    }
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void padListedKeys(
        float* keys,
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        cudaStream_t stream) {
    if (nrows == 0) {
        return;
    }
    FAISS_THROW_IF_NOT_FMT(nrows <= 65535, "padListedKeys: %lld rows", (long long)nrows);
    const dim3 grid(unsigned(divUp<int64_t>(capacity, kPadThreads)), unsigned(nrows));
    padListedKeysKernel<<<grid, kPadThreads, 0, stream>>>(keys, counts, capacity);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void rerankBandLimits(
        const float* kthKeys,
        int64_t ldKth,
        int64_t n,
        const float* queryNorms,
        const float* maxBaseNorm,
        KeyErrorBound keyBound,
        int d,
        bool l2,
        float* limits,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    rerankBandLimitsKernel<<<blocksFor(n, 256), 256, 0, stream>>>(
            kthKeys, ldKth, n, queryNorms, maxBaseNorm, keyBound, rerankErrorRel(d), l2, limits);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

namespace {

/// Launches rerankListedKernel over nrows rows of `slots` slots, ids, keys and results
/// at a row stride of ld; `name` is the entry point's, for the error.
template <typename Id>
void launchRerank(
        const char* name,
        const float* queries,
        const float* base,
        int d,
        bool l2,
        const Id* ids,
        const float* keys,
        int64_t ld,
        const float* limits,
        const uint32_t* counts,
        int64_t nrows,
        int64_t slots,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    if (nrows == 0) {
        return;
    }
    FAISS_THROW_IF_NOT_FMT(nrows <= 65535, "%s: %lld rows", name, (long long)nrows);
    const dim3 grid(unsigned(divUp<int64_t>(slots, kRerankThreads)), unsigned(nrows));
    rerankListedKernel<<<grid, kRerankThreads, 0, stream>>>(
            queries, base, d, l2, ids, keys, ld, limits, counts, slots, outD, outI);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void rerankListed(
        const float* queries,
        const float* base,
        int d,
        bool l2,
        const int32_t* ids,
        const float* keys,
        const float* limits,
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    launchRerank(
            "rerankListed", queries, base, d, l2, ids, keys, capacity, limits, counts, nrows,
            capacity, outD, outI, stream);
}

void rerankKept(
        const float* queries,
        const float* base,
        int d,
        bool l2,
        const int64_t* ids,
        const float* keys,
        int64_t ld,
        const float* limits,
        int64_t nrows,
        int64_t kept,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    launchRerank(
            "rerankKept", queries, base, d, l2, ids, keys, ld, limits, nullptr, nrows, kept, outD,
            outI, stream);
}

void rerankRow(
        const float* query,
        const float* base,
        int d,
        bool l2,
        float* values,
        int64_t ncols,
        const float* limit,
        cudaStream_t stream) {
    if (ncols == 0) {
        return;
    }
    rerankRowKernel<<<blocksFor(ncols, kRerankThreads), kRerankThreads, 0, stream>>>(
            query, base, d, l2, values, ncols, limit);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void strideBitmap(
        const uint32_t* allow,
        int64_t stride,
        int64_t rows,
        uint32_t* out,
        cudaStream_t stream) {
    const int64_t words = divUp<int64_t>(rows, 32);
    if (words == 0) {
        return;
    }
    strideBitmapKernel<<<blocksFor(words, 256), 256, 0, stream>>>(allow, stride, rows, out);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void overflowRows(
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        int64_t* rows,
        int* nOver,
        cudaStream_t stream) {
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(nOver, 0, sizeof(int), stream));
    if (nrows == 0) {
        return;
    }
    overflowRowsKernel<<<blocksFor(nrows, 256), 256, 0, stream>>>(
            counts, nrows, capacity, rows, nOver);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void scatterResultRows(
        const float* inD,
        const int64_t* inI,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    scatterResultRowsKernel<<<blocksFor(n * k, 256), 256, 0, stream>>>(
            inD, inI, rows, n, k, outD, outI);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace kernels
} // namespace faiss_ext
