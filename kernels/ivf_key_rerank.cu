// The list-major key path's exact re-rank (IvfKeyRerank.h): a warp a query, its query in
// shared memory in the scan's padded float4 groups. The warp reads its row of keys
// kRounds x 32 at a time (every lane's loads in flight at once: one 32-key round a load
// left a short batch's few warps waiting on ~1000 dependent loads a row), queues the
// listed positions in shared memory, and re-ranks them 32 at a time (each distance is a
// chain of d / 4 loads: one lane a vector, all lanes at once), its best k one a lane.
#include <math_constants.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "IvfKeyBand.h"
#include "IvfKeyRerank.h"
#include "IvfListLoader.cuh"
#include "IvfStore.h"
#include "LastAtMost.cuh"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFull = 0xffffffffu;
/// Rounds of 32 keys a warp reads before it lists them.
constexpr int kRounds = 16;
/// Listed positions a warp queues: kRounds rounds of 32 on top of a part-filled batch.
constexpr int kQueue = 32 * kRounds + 32;

/// Whether (d1, i1) ranks before (d2, i2): smaller distance, then smaller id.
__device__ inline bool before(float d1, int64_t i1, float d2, int64_t i2) {
    return d1 < d2 || (d1 == d2 && i1 < i2);
}

/// The best k so far, lane j holding the j-th by (distance, id); +inf / -1 unfilled.
struct WarpBest {
    float d;
    int64_t i;

    __device__ WarpBest() : d(INFINITY), i(-1) {}

    /// Offers the (d, i) of lanes 0 .. n - 1, one at a time.
    __device__ void offer(float dist, int64_t id, int n, int k) {
        const int lane = threadIdx.x % 32;
        for (int src = 0; src < n; ++src) {
            const float cd = __shfl_sync(kFull, dist, src);
            const int64_t ci = __shfl_sync(kFull, id, src);
            const int at = __popc(__ballot_sync(kFull, before(d, i, cd, ci)));
            if (at >= k) {
                continue;
            }
            const float upD = __shfl_up_sync(kFull, d, 1);
            const int64_t upI = __shfl_up_sync(kFull, i, 1);
            if (lane == at) {
                d = cd;
                i = ci;
            } else if (lane > at) {
                d = upD;
                i = upI;
            }
        }
    }
};

__global__ void __launch_bounds__(kWarpsPerBlock * 32) keyRerankKernel(IvfKeyRerankArgs a) {
    extern __shared__ float4 staged[]; // kWarpsPerBlock x groups, then the warps' queues
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int64_t q = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (q >= a.nq) {
        return;
    }
    const int groups = ivfPaddedDim(a.d) / 4;
    int* queue = reinterpret_cast<int*>(staged + kWarpsPerBlock * groups) + warp * kQueue;
    float4* query = staged + warp * groups;
    const float* row = a.queries + q * a.d;
    float qn = 0.f;
    for (int c = lane; c < 4 * groups; c += 32) {
        const float v = c < a.d ? row[c] : 0.f;
        reinterpret_cast<float*>(query)[c] = v;
        qn = fmaf(v, v, qn);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
        qn += __shfl_xor_sync(kFull, qn, offset);
    }
    __syncwarp();

    float* outD = a.outD + q * a.k;
    int64_t* outI = a.outI + q * a.k;
    const float limit = ivfKeyBandLimit(outD[a.k - 1], qn, a.rowMaxNorms[q], a.d, a.dotRel);
    const int* offsets = a.vectorOffsets + q * (a.nprobe + 1);
    const int64_t* lists = a.coarse + q * a.nprobe;
    const float* keys = a.keys + q * a.ldKeys;
    const int rowLength = offsets[a.nprobe];
    // The distance and id of queued position queue[from + lane] (lanes below n), offered
    // to the best k.
    WarpBest best;
    auto rerankQueued = [&](int from, int n) {
        float dist = CUDART_INF_F;
        int64_t id = -1;
        if (lane < n) {
            const int pos = queue[from + lane];
            // The probe holding pos (empty probes share their successor's offset).
            const int p = lastAtMost(offsets, a.nprobe, pos);
            const int64_t list = lists[p];
            const int64_t v = pos - offsets[p];
            ListLoader<false> load{
                    reinterpret_cast<const float4*>(a.listData[list]), query, 0, groups};
            dist = load(v);
            id = a.listIds[list][v];
        }
        best.offer(dist, id, n, a.k);
    };
    int queued = 0;
    for (int base = 0; base < rowLength; base += 32 * kRounds) {
        float key[kRounds];
#pragma unroll
        for (int r = 0; r < kRounds; ++r) {
            const int pos = base + 32 * r + lane;
            key[r] = pos < rowLength ? keys[pos] : CUDART_INF_F;
        }
#pragma unroll
        for (int r = 0; r < kRounds; ++r) {
            // Filtered vectors hold +inf: never listed, even when every finite key is.
            const bool listed = key[r] <= limit && key[r] < CUDART_INF_F;
            const unsigned mask = __ballot_sync(kFull, listed);
            if (listed) {
                queue[queued + __popc(mask & ((1u << lane) - 1u))] = base + 32 * r + lane;
            }
            queued += __popc(mask);
        }
        __syncwarp();
        int done = 0;
        for (; queued - done >= 32; done += 32) {
            rerankQueued(done, 32);
        }
        // The rest (fewer than 32) to the front.
        const int rest = queued - done;
        const int moved = lane < rest ? queue[done + lane] : 0;
        __syncwarp();
        if (lane < rest) {
            queue[lane] = moved;
        }
        queued = rest;
        __syncwarp();
    }
    rerankQueued(0, queued);
    if (lane < a.k) {
        outD[lane] = best.d;
        outI[lane] = best.i;
    }
}

} // namespace

size_t ivfKeyRerankSmemBytes(int d) {
    return size_t(kWarpsPerBlock) * (ivfPaddedDim(d) * sizeof(float) + kQueue * sizeof(int));
}

void ivfKeyRerank(const IvfKeyRerankArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kKeyRerankMaxK && a.d >= 1 && a.nprobe >= 1 &&
                    a.dotRel >= ivfKeyErrorRel(a.d),
            "ivfKeyRerank: k=%d (1 .. %d), d=%d, nprobe=%d, dotRel=%g (at least the FP32 "
            "product's %g)",
            a.k, kKeyRerankMaxK, a.d, a.nprobe, double(a.dotRel), ivfKeyErrorRel(a.d));
    if (a.nq == 0) {
        return;
    }
    const size_t smem = ivfKeyRerankSmemBytes(a.d);
    raiseDynamicSmemLimit(keyRerankKernel, smem);
    const unsigned blocks = unsigned((a.nq + kWarpsPerBlock - 1) / kWarpsPerBlock);
    keyRerankKernel<<<blocks, kWarpsPerBlock * 32, smem, stream>>>(a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
