// The list-major key path's exact re-rank (IvfKeyRerank.h): a warp a query, its query in
// shared memory in the scan's padded float4 groups, its best k one a lane.
#include <math_constants.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "IvfKeyBand.h"
#include "IvfKeyRerank.h"
#include "IvfListLoader.cuh"
#include "IvfStore.h"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFull = 0xffffffffu;

/// Whether (d1, i1) ranks before (d2, i2): smaller distance, then smaller id.
__device__ inline bool before(float d1, int64_t i1, float d2, int64_t i2) {
    return d1 < d2 || (d1 == d2 && i1 < i2);
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) keyRerankKernel(IvfKeyRerankArgs a) {
    extern __shared__ float4 staged[]; // kWarpsPerBlock x groups
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int64_t q = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (q >= a.nq) {
        return;
    }
    const int groups = ivfPaddedDim(a.d) / 4;
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
    const float limit = ivfKeyBandLimit(outD[a.k - 1], qn, a.rowMaxNorms[q], a.d);
    const int* offsets = a.vectorOffsets + q * (a.nprobe + 1);
    const int64_t* lists = a.coarse + q * a.nprobe;
    const float* keys = a.keys + q * a.ldKeys;
    const int rowLength = offsets[a.nprobe];
    // The best so far, lane j the j-th: +inf / -1 until filled.
    float bestD = CUDART_INF_F;
    int64_t bestI = -1;
    for (int base = 0; base < rowLength; base += 32) {
        const int pos = base + lane;
        const float key = pos < rowLength ? keys[pos] : CUDART_INF_F;
        // Filtered vectors hold +inf: never listed, even when every finite key is.
        const bool listed = key <= limit && key < CUDART_INF_F;
        unsigned pending = __ballot_sync(kFull, listed);
        if (pending == 0) {
            continue;
        }
        float dist = CUDART_INF_F;
        int64_t id = -1;
        if (listed) {
            // The probe holding pos: the last p with offsets[p] <= pos (empty probes
            // share their successor's offset).
            int lo = 0, hi = a.nprobe - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) / 2;
                if (offsets[mid] <= pos) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            const int64_t list = lists[lo];
            const int64_t v = pos - offsets[lo];
            ListLoader<false> load{
                    reinterpret_cast<const float4*>(a.listData[list]), query, 0, groups};
            dist = load(v);
            id = a.listIds[list][v];
        }
        // Each listed lane's (dist, id) into the sorted best, one at a time.
        while (pending != 0) {
            const int src = __ffs(pending) - 1;
            pending &= pending - 1;
            const float d = __shfl_sync(kFull, dist, src);
            const int64_t i = __shfl_sync(kFull, id, src);
            const int at = __popc(__ballot_sync(kFull, before(bestD, bestI, d, i)));
            if (at >= a.k) {
                continue;
            }
            const float upD = __shfl_up_sync(kFull, bestD, 1);
            const int64_t upI = __shfl_up_sync(kFull, bestI, 1);
            if (lane == at) {
                bestD = d;
                bestI = i;
            } else if (lane > at) {
                bestD = upD;
                bestI = upI;
            }
        }
    }
    if (lane < a.k) {
        outD[lane] = bestD;
        outI[lane] = bestI;
    }
}

} // namespace

size_t ivfKeyRerankSmemBytes(int d) {
    return size_t(kWarpsPerBlock) * ivfPaddedDim(d) * sizeof(float);
}

void ivfKeyRerank(const IvfKeyRerankArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            a.k >= 1 && a.k <= kKeyRerankMaxK && a.d >= 1 && a.nprobe >= 1,
            "ivfKeyRerank: k=%d (1 .. %d), d=%d, nprobe=%d", a.k, kKeyRerankMaxK, a.d, a.nprobe);
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
