// RadixSelect.h, radixSelectQuery. One query's distances to the whole base and the
// radix select's first digit pass in one kernel: the base is read once, from DRAM, and
// the values it gives are counted while they are written, so the row of values is read
// back (from L2) only by the later passes. At batch 1 the read of the base is nearly all
// of the search; a separate GEMV and first pass cost a launch and a pass over the row.
// The same kernel reads a low-precision copy of the base instead (kernels/SearchCopy.h:
// a half or a quarter of the bytes).
#include <cuda_fp16.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "RadixSelectImpl.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

using radix::kBins;
using radix::kThreads;
using radix::Scratch;

/// Base rows a group of lanes has in flight: one 16-byte chunk of each a lane per step.
constexpr int kRowsPerGroup = 8;
constexpr int kWarps = kThreads / 32;
/// The query is held in shared memory.
constexpr int kMaxQueryFloats = 8192;
/// The widest 16-byte chunk: 16 int8 elements (the query is padded to it).
constexpr int kMaxChunk = 16;
static_assert(kMaxQueryFloats % kMaxChunk == 0, "the padded query fits as well");

/// What a row's 16-byte chunks hold: float4s of the base, or a copy's 8 halves or 16
/// int8 (kernels/SearchCopy.h).
enum class Rows { kFloat, kHalf, kInt8 };

template <Rows kRows>
constexpr int kChunkElements = kRows == Rows::kFloat ? 4
        : kRows == Rows::kHalf                       ? 8
                                                     : 16;

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

/// acc + q . (chunk's 8 halves times scale): each product of the query with the copy's
/// value, which the scale (a power of two) makes exactly.
__device__ __forceinline__ float dotHalfChunk(const float4* q, uint4 bits, float scale, float acc) {
    const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&words[w]));
        const float4 qv = q[w / 2];
        const float qa = w % 2 ? qv.z : qv.x;
        const float qb = w % 2 ? qv.w : qv.y;
        acc = fmaf(qa, v.x * scale, acc);
        acc = fmaf(qb, v.y * scale, acc);
    }
    return acc;
}

/// Byte j of w (a signed int8 made unsigned by adding 128) as a float: placed in the
/// mantissa of 2^23 (one PRMT), less 2^23 + 128 (one FADD). Exact.
template <int j>
__device__ __forceinline__ float int8AsFloat(uint32_t w) {
    return __int_as_float(__byte_perm(w, 0x4B000000u, 0x7440 + j)) - 8388736.f;
}

/// acc + q . (chunk's 16 int8 times scale): each element times the row's scale first, as
/// the copy's measured error has it, so the sum stays as far from overflow as the FP32
/// base's.
__device__ __forceinline__ float dotInt8Chunk(const float4* q, uint4 bits, float scale, float acc) {
    const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        const uint32_t u = words[w] ^ 0x80808080u;
        const float4 qv = q[w];
        acc = fmaf(qv.x, int8AsFloat<0>(u) * scale, acc);
        acc = fmaf(qv.y, int8AsFloat<1>(u) * scale, acc);
        acc = fmaf(qv.z, int8AsFloat<2>(u) * scale, acc);
        acc = fmaf(qv.w, int8AsFloat<3>(u) * scale, acc);
    }
    return acc;
}

/// The product and first digit pass. Each warp splits into 32 / kLanes groups of kLanes
/// lanes; a group takes kRowsPerGroup rows at a time, its lanes striding over the rows'
/// 16-byte chunks (float4s of the base, or a copy's halves or int8; narrower groups keep
/// short rows' lanes busy).
template <Rows kRows, int kLanes>
__global__ void __launch_bounds__(kThreads, 2)
        radixQueryFirstPassKernel(RadixSelectArgs a, RadixQueryProduct p, Scratch s) {
    extern __shared__ float4 query4[];
    __shared__ uint32_t hist[kBins];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int groupLane = lane % kLanes;
    constexpr int kGroups = 32 / kLanes;
    constexpr int kRowsPerWarp = kGroups * kRowsPerGroup;
    constexpr bool kCopy = kRows != Rows::kFloat;
    constexpr int kChunk = kChunkElements<kRows>;
    // The query as float4s, zero padded to the copy's chunks.
    const int chunks = (p.d + kChunk - 1) / kChunk;
    const int query4s = chunks * kChunk / 4;
    if (kCopy) {
        float* q = reinterpret_cast<float*>(query4);
        for (int i = threadIdx.x; i < query4s * 4; i += kThreads) {
            q[i] = i < p.d ? p.query[i] : 0.f;
        }
    } else {
        const float4* q4 = reinterpret_cast<const float4*>(p.query);
        for (int i = threadIdx.x; i < query4s; i += kThreads) {
            query4[i] = q4[i];
        }
    }
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
        hist[b] = 0;
    }
    __syncthreads();
    if (p.queryNormSq != nullptr && blockIdx.x == 0 && warp == 0) {
        float sum = 0.f;
        for (int i = lane; i < query4s; i += 32) {
            sum = dot4(query4[i], query4[i], sum);
        }
        for (int o = 16; o > 0; o >>= 1) {
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        }
        if (lane == 0) {
            *p.queryNormSq = sum;
        }
    }

    // The loop runs warp-uniformly (the groups' shuffles need every lane).
    const int64_t stride = int64_t(gridDim.x) * kWarps * kRowsPerWarp;
    for (int64_t w0 = (int64_t(blockIdx.x) * kWarps + warp) * kRowsPerWarp; w0 < a.ncols;
         w0 += stride) {
        const int64_t r0 = w0 + (lane / kLanes) * kRowsPerGroup;
        float acc[kRowsPerGroup];
        float scale[kRowsPerGroup];
#pragma unroll
        for (int r = 0; r < kRowsPerGroup; ++r) {
            acc[r] = 0.f;
            scale[r] = kCopy && r0 + r < a.ncols ? p.copyScales[r0 + r] : 0.f;
        }
        for (int c = groupLane; c < chunks; c += kLanes) {
            if constexpr (kCopy) {
                const uint4* base = static_cast<const uint4*>(p.copyRows);
                uint4 bits[kRowsPerGroup];
#pragma unroll
                for (int r = 0; r < kRowsPerGroup; ++r) {
                    // Streamed past L2, which keeps the row of values.
                    bits[r] = r0 + r < a.ncols ? __ldcs(base + (r0 + r) * chunks + c)
                                               : make_uint4(0u, 0u, 0u, 0u);
                }
#pragma unroll
                for (int r = 0; r < kRowsPerGroup; ++r) {
                    acc[r] = kRows == Rows::kHalf
                            ? dotHalfChunk(query4 + 2 * c, bits[r], scale[r], acc[r])
                            : dotInt8Chunk(query4 + 4 * c, bits[r], scale[r], acc[r]);
                }
            } else {
                const float4* base = reinterpret_cast<const float4*>(p.base);
                const float4 qv = query4[c];
                float4 bv[kRowsPerGroup];
#pragma unroll
                for (int r = 0; r < kRowsPerGroup; ++r) {
                    bv[r] = r0 + r < a.ncols ? __ldcs(base + (r0 + r) * chunks + c)
                                             : make_float4(0.f, 0.f, 0.f, 0.f);
                }
#pragma unroll
                for (int r = 0; r < kRowsPerGroup; ++r) {
                    acc[r] = dot4(qv, bv[r], acc[r]);
                }
            }
        }
        // Every lane of a group gets each of its rows' sums; lane r keeps row r0 + r's.
        float mine = 0.f;
#pragma unroll
        for (int r = 0; r < kRowsPerGroup; ++r) {
            for (int o = kLanes / 2; o > 0; o >>= 1) {
                acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
            }
            if (groupLane == r) {
                mine = acc[r];
            }
        }
        const int64_t c = r0 + groupLane;
        uint32_t bin = radix::kNoBin;
        if (groupLane < kRowsPerGroup && c < a.ncols) {
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

/// The first pass over rows of kRows, its lane groups sized to the row's chunks: 8 lanes
/// for at most 8 chunks, 16 for at most 16, else 32 (the float base: always 32).
template <Rows kRows>
void launchFirstPass(
        const RadixSelectArgs& args,
        const RadixQueryProduct& product,
        const Scratch& s,
        int64_t grid,
        size_t queryBytes,
        cudaStream_t stream) {
    const int chunks = (product.d + kChunkElements<kRows> - 1) / kChunkElements<kRows>;
    if constexpr (kRows != Rows::kFloat) {
        if (chunks <= 8) {
            radixQueryFirstPassKernel<kRows, 8>
                    <<<unsigned(grid), kThreads, queryBytes, stream>>>(args, product, s);
            return;
        }
        if (chunks <= 16) {
            radixQueryFirstPassKernel<kRows, 16>
                    <<<unsigned(grid), kThreads, queryBytes, stream>>>(args, product, s);
            return;
        }
    }
    radixQueryFirstPassKernel<kRows, 32>
            <<<unsigned(grid), kThreads, queryBytes, stream>>>(args, product, s);
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

} // namespace

bool radixQueryFits(const RadixQueryProduct& p) {
    if (p.d < 1 || p.d > kMaxQueryFloats) {
        return false;
    }
    if (p.copyRows != nullptr) {
        return aligned16(p.copyRows) && p.copyScales != nullptr;
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
    const size_t queryBytes =
            size_t(product.d + kMaxChunk - 1) / kMaxChunk * kMaxChunk * sizeof(float);
    if (product.copyRows == nullptr) {
        launchFirstPass<Rows::kFloat>(args, product, s, grid, queryBytes, stream);
    } else if (product.copyCode == CopyCode::kFloat16) {
        launchFirstPass<Rows::kHalf>(args, product, s, grid, queryBytes, stream);
    } else {
        launchFirstPass<Rows::kInt8>(args, product, s, grid, queryBytes, stream);
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
