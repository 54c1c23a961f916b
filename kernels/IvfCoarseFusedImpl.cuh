// The fused IVF coarse search's kernels (IvfCoarseFused.h). First the centroids are
// split (once per set of centroids where the index keeps the split) into 3xTF32 parts
// (hi = x rounded to TF32 by OperandSplit's rounding, Tf32Round.cuh; lo = x - hi) laid
// out in mma.sync fragment order (splitCentroidFragments): for each n8 tile of
// centroids and k-step of 8 dimensions, lane l's float4 {hi b0, hi b1, lo b0, lo b1},
// so that a warp reads its B fragments of a tile and k-step with one 16-byte shared
// load a lane and splits nothing in its loop. Then a block of 4 warps takes 64 queries
// (16 a warp: the rows of an m16n8k8 tile) and a segment of kCoarseFusedSegment
// centroids, which it walks in chunks of 32 (four n8 tiles), their fragments
// double-buffered in shared memory by 16-byte cp.async; the queries stay in shared
// memory the whole time and are split per k-step (4 values a thread, shared by the
// chunk's 4 tiles). Each tile and k-step is three mma.sync (lo.hi, hi.lo, hi.hi) into
// one FP32 accumulator: the 3xTF32 sum of the GEMM path. The keys (|c|^2 - 2 q.c, or
// -q.c) go straight into per-thread sorted lists, behind a compare with the list's last
// entry; at the end the 4 threads sharing a row fold their lists by shuffles and the
// block writes each (query, segment)'s best k; a small kernel then merges each query's
// segments into its results. The launcher is instantiated per capacity in
// ivf_coarse_fused_k{1_2,4_8}.cu (declared extern in ivf_coarse_fused.cu).
//
// Fragments as MmaTf32.cuh lays them out (B[k][n] = centroid n's element k): a thread
// holds rows g and g + 8 of its warp's 16 and columns 2t, 2t + 1 of each n8 tile: two
// lists a thread, four threads a row.
#pragma once

#include <math_constants.h>
#include <cstdint>

#include <faiss_ext/utils/CudaCheck.h>

#include "BlockSelect.cuh"
#include "CopyAsync.cuh"
#include "DistanceFinish.cuh"
#include "IvfCoarseFused.h"
#include "MmaTf32.cuh"
#include "SmemLimit.cuh"
#include "WarpSelect.cuh"

namespace faiss_ext {
namespace kernels {
namespace coarse {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 16;
static_assert(kWarps * kRowsPerWarp == kCoarseFusedQueryTile, "a warp per m16 tile");
/// Centroids a shared-memory buffer holds: four n8 tiles, 16 accumulators a thread.
constexpr int kChunk = kCoarseFusedChunk;
constexpr int kTiles = kChunk / 8;
static_assert(kCoarseFusedSegment % kChunk == 0, "a segment is whole chunks");
static_assert(kChunk % 8 == 0, "a chunk is whole n8 tiles");

/// d rounded up to the k-step of 8 (zero-padded in shared memory).
__host__ __device__ inline int paddedDim(int d) {
    return (d + 7) / 8 * 8;
}

/// Row stride of the staged rows, in floats: 4 past a multiple of 8 puts the 8 rows that
/// one fragment load reads (rows g, columns t) on 32 distinct banks.
__host__ __device__ inline int rowStride(int d) {
    return paddedDim(d) + 4;
}

/// k-steps of 8 dimensions over d (zero-padded).
__host__ __device__ inline int kSteps(int d) {
    return paddedDim(d) / 8;
}

/// Stages 64 rows of d floats from src (row-major; rows at and past validRows read as
/// zero, as do the columns past d up to paddedDim(d)) into dst with stride ld. A warp a
/// row, lanes over its columns: 128 coalesced bytes a step.
__device__ __forceinline__ void stageRows(
        float* dst,
        int ld,
        const float* src,
        int64_t validRows,
        int d) {
    const int d8 = paddedDim(d);
    const int lane = threadIdx.x % 32;
    for (int r = threadIdx.x / 32; r < 64; r += kWarps) {
        const bool rowValid = r < validRows;
        for (int j = lane; j < d8; j += 32) {
            const bool valid = rowValid && j < d;
            copyAsync4(dst + r * ld + j, valid ? src + int64_t(r) * d + j : src, valid);
        }
    }
}

/// Inserts (v, id) into the ascending list (vals, ids), dropping its last entry, where v
/// is below that entry (most values are not, past the first columns: one compare).
/// The insertion is branch-free: entry j becomes v where v goes first before it, the old
/// entry j - 1 past that, and stays below. A thread offers its columns in increasing id
/// order, so a value equal to a held one goes after it (the strict compares): the list
/// stays in selectKey's order, value then id, with float compares only. +inf (a masked
/// column) never enters.
template <int kKp>
__device__ __forceinline__ void insertSorted(float (&vals)[kKp], int (&ids)[kKp], float v, int id) {
    if (!(v < vals[kKp - 1])) {
        return;
    }
    bool before[kKp];
#pragma unroll
    for (int j = 0; j < kKp; ++j) {
        before[j] = v < vals[j];
    }
#pragma unroll
    for (int j = kKp - 1; j > 0; --j) {
        vals[j] = before[j] ? (before[j - 1] ? vals[j - 1] : v) : vals[j];
        ids[j] = before[j] ? (before[j - 1] ? ids[j - 1] : id) : ids[j];
    }
    vals[0] = before[0] ? v : vals[0];
    ids[0] = before[0] ? id : ids[0];
}

/// Keeps in `keys` (ascending) the kKp smallest of it and another ascending list given
/// reversed: their elementwise minimum is a bitonic sequence holding those kKp, which a
/// bitonic merge sorts.
template <int kKp>
__device__ __forceinline__ void keepSmallest(
        uint64_t (&keys)[kKp],
        const uint64_t (&reversed)[kKp]) {
#pragma unroll
    for (int j = 0; j < kKp; ++j) {
        keys[j] = minKey(keys[j], reversed[j]);
    }
#pragma unroll
    for (int stride = kKp / 2; stride > 0; stride /= 2) {
#pragma unroll
        for (int j = 0; j < kKp; ++j) {
            if ((j & stride) == 0) {
                const uint64_t lo = minKey(keys[j], keys[j + stride]);
                const uint64_t hi = keys[j] < keys[j + stride] ? keys[j + stride] : keys[j];
                keys[j] = lo;
                keys[j + stride] = hi;
            }
        }
    }
}

/// Folds the ascending key list of lane ^ laneMask into this lane's. Both lanes end with
/// the same list.
template <int kKp>
__device__ __forceinline__ void foldWithLane(uint64_t (&keys)[kKp], int laneMask) {
    uint64_t other[kKp];
#pragma unroll
    for (int j = 0; j < kKp; ++j) {
        other[j] = shuffleXorKey(keys[kKp - 1 - j], laneMask);
    }
    keepSmallest<kKp>(keys, other);
}

/// Threads of the merge that share a query (lanes 8 q' .. 8 q' + 7 of a warp), each folding
/// every 8th segment's list before the group folds its 8 lists.
constexpr int kMergeWidth = 8;

/// The segments' candidates of each query merged into its results: each of a query's
/// kMergeWidth threads folds its segments' best k (already ascending) into one list, the
/// group folds its lists by shuffles, and the results are finished (FAISS's distances).
/// A tiny kernel (batch 1024, nlist 4096, nprobe 4: 64 candidates a query) whose time is
/// a few dependent loads, where selectRowsMin and finishKnn took ~13 us.
template <int kKp>
__global__ void __launch_bounds__(kThreads) mergeSegmentsKernel(CoarseFusedArgs a, int segments) {
    const int64_t q = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / kMergeWidth;
    const int part = threadIdx.x % kMergeWidth;
    const int64_t ld = int64_t(segments) * a.k;
    uint64_t keys[kKp];
#pragma unroll
    for (int j = 0; j < kKp; ++j) {
        keys[j] = kSelectEmptyKey;
    }
    if (q < a.nq) {
        for (int seg = part; seg < segments; seg += kMergeWidth) {
            const float* d = a.candD + q * ld + int64_t(seg) * a.k;
            const int64_t* ids = a.candI + q * ld + int64_t(seg) * a.k;
            uint64_t reversed[kKp];
#pragma unroll
            for (int j = 0; j < kKp; ++j) {
                reversed[kKp - 1 - j] = j < a.k ? selectKey(d[j], int(ids[j])) : kSelectEmptyKey;
            }
            keepSmallest<kKp>(keys, reversed);
        }
    }
#pragma unroll
    for (int mask = 1; mask < kMergeWidth; mask *= 2) {
        foldWithLane<kKp>(keys, mask);
    }
    if (q >= a.nq) {
        return;
    }
    const DistanceFinish finish =
            a.innerProduct ? DistanceFinish::kInnerProduct : DistanceFinish::kL2;
    const float norm = a.innerProduct ? 0.f : a.queryNorms[q];
#pragma unroll
    for (int j = 0; j < kKp; ++j) {
        if (j % kMergeWidth == part && j < a.k) {
            const int64_t id = selectKeyPosition(keys[j]);
            a.outD[q * a.k + j] = finishedDistance(selectKeyValue(keys[j]), id, finish, norm);
            a.outI[q * a.k + j] = id;
        }
    }
}

template <int kKp>
__global__ void __launch_bounds__(kThreads, 4) coarseFusedKernel(CoarseFusedArgs a) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    extern __shared__ __align__(16) float coarseSmem[];
    const int d = a.d;
    const int ld = rowStride(d);
    const int steps = kSteps(d);
    // Two buffers of a chunk's fragments (kTiles x steps x 32 float4), the queries (64
    // rows of ld floats), the chunks' centroid norms (2 x kChunk).
    const int chunkFragments = kTiles * steps * 32;
    float4* fragments = reinterpret_cast<float4*>(coarseSmem);
    float* queries = reinterpret_cast<float*>(fragments + 2 * chunkFragments);
    float* norms = queries + kCoarseFusedQueryTile * ld;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int64_t q0 = int64_t(blockIdx.x) * kCoarseFusedQueryTile;
    const int64_t s0 = int64_t(blockIdx.y) * kCoarseFusedSegment;
    const int64_t sEnd = min(s0 + kCoarseFusedSegment, a.nlist);
    const int chunks = int((sEnd - s0 + kChunk - 1) / kChunk);
    const bool l2 = !a.innerProduct;

    // Chunk c's fragments: tiles s0 / 8 + c kTiles on, contiguous (the array holds whole
    // chunks, so every read is in it).
    auto stageChunk = [&](int c) {
        const int64_t c0 = s0 + int64_t(c) * kChunk;
        const float4* src = a.centroidFragments + (c0 / 8) * int64_t(steps) * 32;
        float4* dst = fragments + (c & 1) * chunkFragments;
        for (int i = threadIdx.x; i < chunkFragments; i += kThreads) {
            copyAsync16(dst + i, src + i);
        }
        if (l2 && threadIdx.x < kChunk) {
            const bool valid = c0 + threadIdx.x < a.nlist;
            copyAsync4(
                    norms + (c & 1) * kChunk + threadIdx.x,
                    a.centroidNorms + c0 + (valid ? threadIdx.x : 0), valid);
        }
    };
    stageRows(queries, ld, a.queries + q0 * d, a.nq - q0, d);
    stageChunk(0);
    commitAsync();

    // Rows g (list 0) and g + 8 (list 1) of the warp's 16 queries.
    float bestV[2][kKp];
    int bestI[2][kKp];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int j = 0; j < kKp; ++j) {
            bestV[r][j] = CUDART_INF_F;
            bestI[r][j] = -1;
        }
    }
    const float* qa = queries + (warp * kRowsPerWarp + g) * ld + t;
    for (int c = 0; c < chunks; ++c) {
        if (c + 1 < chunks) {
            stageChunk(c + 1);
        }
        commitAsync(); // possibly empty: the wait below then still means chunk c
        waitAsyncGroups<1>();
        __syncthreads();
        if (c == 0 && l2 && blockIdx.y == 0 && threadIdx.x < kCoarseFusedQueryTile &&
            q0 + threadIdx.x < a.nq) {
            const float* row = queries + threadIdx.x * ld;
            float s = 0.f;
            for (int j = 0; j < d; ++j) {
                s = fmaf(row[j], row[j], s);
            }
            a.queryNorms[q0 + threadIdx.x] = s;
        }
        __syncwarp(); // the mma.sync below need the whole warp converged
        const float4* fb = fragments + (c & 1) * chunkFragments + lane;
        float acc[kTiles][4];
#pragma unroll
        for (int n = 0; n < kTiles; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                acc[n][e] = 0.f;
            }
        }
        for (int step = 0; step < steps; ++step) {
            const int k0 = step * 8;
            unsigned ahi[4], alo[4];
            splitTf32(qa[k0], ahi[0], alo[0]);
            splitTf32(qa[k0 + 8 * ld], ahi[1], alo[1]);
            splitTf32(qa[k0 + 4], ahi[2], alo[2]);
            splitTf32(qa[k0 + 8 * ld + 4], ahi[3], alo[3]);
#pragma unroll
            for (int n = 0; n < kTiles; ++n) {
                const float4 b = fb[(n * steps + step) * 32];
                const unsigned bhi0 = __float_as_uint(b.x), bhi1 = __float_as_uint(b.y);
                const unsigned blo0 = __float_as_uint(b.z), blo1 = __float_as_uint(b.w);
                // The small terms first, as CUTLASS's 3xTF32 does.
                mmaTf32(acc[n], alo, bhi0, bhi1);
                mmaTf32(acc[n], ahi, blo0, blo1);
                mmaTf32(acc[n], ahi, bhi0, bhi1);
            }
        }
        // Keys as the GEMM path's selection sees them: -2 q.c is exact, so the fma is
        // (-2 q.c) + |c|^2 rounded once, the same as the GEMM's alpha and the column bias.
        const int64_t c0 = s0 + int64_t(c) * kChunk;
        const float* cn = norms + (c & 1) * kChunk;
#pragma unroll
        for (int n = 0; n < kTiles; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = n * 8 + 2 * t + (e & 1);
                const float key = c0 + col >= sEnd ? CUDART_INF_F
                        : l2                       ? fmaf(-2.f, acc[n][e], cn[col])
                                                   : -acc[n][e];
                insertSorted<kKp>(bestV[e >> 1], bestI[e >> 1], key, int(c0 + col));
            }
        }
        // Every warp is done with buffer c & 1 before chunk c + 2 is staged into it.
        __syncthreads();
    }

    const int64_t ldCand = int64_t(gridDim.y) * a.k; // a block a segment
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        uint64_t keys[kKp];
#pragma unroll
        for (int j = 0; j < kKp; ++j) {
            keys[j] = selectKey(bestV[r][j], bestI[r][j]);
        }
        // Lanes 4g .. 4g + 3 hold the row's columns between them.
        foldWithLane<kKp>(keys, 1);
        foldWithLane<kKp>(keys, 2);
        const int64_t q = q0 + warp * kRowsPerWarp + g + 8 * r;
        if (q < a.nq) {
            float* outD = a.candD + q * ldCand + int64_t(blockIdx.y) * a.k;
            int64_t* outI = a.candI + q * ldCand + int64_t(blockIdx.y) * a.k;
#pragma unroll
            for (int j = 0; j < kKp; ++j) {
                if (j % 4 == t && j < a.k) {
                    outD[j] = selectKeyValue(keys[j]);
                    outI[j] = selectKeyPosition(keys[j]);
                }
            }
        }
    }
#else
    __trap(); // the host refuses devices below compute capability 8.0
#endif
}

template <int kKp>
void launchCoarseFused(const CoarseFusedArgs& a, cudaStream_t stream) {
    const size_t smem = coarseFusedSmemBytes(a.d);
    raiseDynamicSmemLimit(coarseFusedKernel<kKp>, smem);
    const dim3 grid(
            unsigned((a.nq + kCoarseFusedQueryTile - 1) / kCoarseFusedQueryTile),
            unsigned(coarseFusedSegments(a.nlist)));
    coarseFusedKernel<kKp><<<grid, kThreads, smem, stream>>>(a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    mergeSegmentsKernel<kKp>
            <<<unsigned((a.nq * kMergeWidth + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
                    a, int(grid.y));
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace coarse
} // namespace kernels
} // namespace faiss_ext
