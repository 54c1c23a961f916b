// RadixSelect.h, radixSelectQuery. One query's distances to the whole base and the
// radix select's first digit pass in one kernel: the base is read once, from DRAM, and
// the values it gives are counted while they are written, so the row of values is read
// back (from L2) only by the later passes. At batch 1 the read of the base is nearly all
// of the search; a separate GEMV and first pass cost a launch and a pass over the row.
// The same kernel reads a float16 copy of the base instead (half the bytes).
#include <cuda_fp16.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "RadixSelectImpl.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

using radix::kBins;
using radix::kThreads;
using radix::Scratch;

/// Base rows a warp has in flight: one float4 of each a lane per step.
constexpr int kRowsPerWarp = 8;
constexpr int kWarps = kThreads / 32;
/// The query is held in shared memory.
constexpr int kMaxQueryFloats = 8192;
static_assert(kMaxQueryFloats % 4 == 0, "the padded query fits as well");

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

/// Four elements of one base row as floats: a float4 of the float base, or four halves
/// of the float16 copy times the row's scale (exact: a power of two).
template <bool kHalf>
__device__ __forceinline__ float4
loadChunk(const RadixQueryProduct& p, int64_t row, int c, int chunks);

template <>
__device__ __forceinline__ float4
loadChunk<false>(const RadixQueryProduct& p, int64_t row, int c, int chunks) {
    // The base is read once: stream it past L2, which keeps the row of values.
    return __ldcs(reinterpret_cast<const float4*>(p.base) + row * chunks + c);
}

template <>
__device__ __forceinline__ float4
loadChunk<true>(const RadixQueryProduct& p, int64_t row, int c, int chunks) {
    const uint2 bits = __ldcs(reinterpret_cast<const uint2*>(p.base16) + row * chunks + c);
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&bits.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&bits.y));
    const float s = p.scales16[row];
    return make_float4(lo.x * s, lo.y * s, hi.x * s, hi.y * s);
}

template <bool kHalf>
__global__ void __launch_bounds__(kThreads, 2)
        radixQueryFirstPassKernel(RadixSelectArgs a, RadixQueryProduct p, Scratch s) {
    extern __shared__ float4 query4[];
    __shared__ uint32_t hist[kBins];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    // Chunks of four elements a row; the float16 copy's rows are zero padded to them, and
    // so is the query here.
    const int chunks = (p.d + 3) / 4;
    if (kHalf) {
        float* q = reinterpret_cast<float*>(query4);
        for (int i = threadIdx.x; i < chunks * 4; i += kThreads) {
            q[i] = i < p.d ? p.query[i] : 0.f;
        }
    } else {
        const float4* q4 = reinterpret_cast<const float4*>(p.query);
        for (int i = threadIdx.x; i < chunks; i += kThreads) {
            query4[i] = q4[i];
        }
    }
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
        hist[b] = 0;
    }
    __syncthreads();
    if (p.queryNormSq != nullptr && blockIdx.x == 0 && warp == 0) {
        float sum = 0.f;
        for (int i = lane; i < chunks; i += 32) {
            sum = dot4(query4[i], query4[i], sum);
        }
        for (int o = 16; o > 0; o >>= 1) {
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        }
        if (lane == 0) {
            *p.queryNormSq = sum;
        }
    }

    const int64_t stride = int64_t(gridDim.x) * kWarps * kRowsPerWarp;
    for (int64_t r0 = (int64_t(blockIdx.x) * kWarps + warp) * kRowsPerWarp; r0 < a.ncols;
         r0 += stride) {
        float acc[kRowsPerWarp];
        for (int r = 0; r < kRowsPerWarp; ++r) {
            acc[r] = 0.f;
        }
        for (int c = lane; c < chunks; c += 32) {
            const float4 qv = query4[c];
            float4 bv[kRowsPerWarp];
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) {
                bv[r] = r0 + r < a.ncols ? loadChunk<kHalf>(p, r0 + r, c, chunks)
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) {
                acc[r] = dot4(qv, bv[r], acc[r]);
            }
        }
        // Every lane gets every row's sum; lane r keeps row r0 + r's.
        float mine = 0.f;
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            for (int o = 16; o > 0; o >>= 1) {
                acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
            }
            if (lane == r) {
                mine = acc[r];
            }
        }
        const int64_t c = r0 + lane;
        uint32_t bin = radix::kNoBin;
        if (lane < kRowsPerWarp && c < a.ncols) {
            float v = p.alpha * mine;
            if (a.colBias != nullptr) {
                v += a.colBias[c];
            }
            if (a.allow != nullptr && !idFilterAllows(a.allow, c)) {
                v = CUDART_INF_F;
            }
            p.values[c] = v;
            if (v < CUDART_INF_F) {
                bin = orderedFloatBits(v) >> radix::kFirstShift;
            }
        }
        radix::countBin(hist, bin);
    }
    __syncthreads();
    radix::finishDigitPass(
            hist, s, 0, radix::kFirstShift, radix::kDigitBits, true, 0u, 0u, uint32_t(a.k));
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

} // namespace

bool radixQueryFits(const RadixQueryProduct& p) {
    if (p.d < 1 || p.d > kMaxQueryFloats) {
        return false;
    }
    if (p.base16 != nullptr) {
        return reinterpret_cast<uintptr_t>(p.base16) % 8 == 0 && p.scales16 != nullptr;
    }
    return p.d % 4 == 0 && aligned16(p.query) && aligned16(p.base);
}

void radixSelectQuery(
        const RadixSelectArgs& args,
        const RadixQueryProduct& product,
        void* scratch,
        size_t scratchBytes,
        int blocks,
        cudaStream_t stream) {
    radix::checkArgs(args, scratchBytes);
    FAISS_THROW_IF_NOT_FMT(
            args.nrows == 1 && product.values != nullptr,
            "radixSelectQuery takes one row of values (%lld rows)", (long long)args.nrows);
    FAISS_THROW_IF_NOT_FMT(
            radixQueryFits(product),
            "radixSelectQuery needs d up to %d, and a multiple of 4 with 16-byte aligned "
            "rows when it reads the float base (d=%d)",
            kMaxQueryFloats, product.d);
    const Scratch s = Scratch::carve(scratch, 1, args.k);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(scratch, 0, Scratch::zeroedBytes(1), stream));
    const int64_t grid = radix::passBlocks(args.ncols, blocks);
    const size_t queryBytes = size_t(product.d + 3) / 4 * sizeof(float4);
    if (product.base16 != nullptr) {
        radixQueryFirstPassKernel<true>
                <<<unsigned(grid), kThreads, queryBytes, stream>>>(args, product, s);
    } else {
        radixQueryFirstPassKernel<false>
                <<<unsigned(grid), kThreads, queryBytes, stream>>>(args, product, s);
    }
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    // The later passes read the values as written: bias and filter are in them.
    RadixSelectArgs values = args;
    values.dist = product.values;
    values.ldDist = args.ncols;
    values.colBias = nullptr;
    values.allow = nullptr;
    radix::selectAfterFirstPass(values, s, blocks, stream);
}

} // namespace kernels
} // namespace faiss_ext
