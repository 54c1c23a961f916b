// Range search kernels (RangeSearch.h): one block per row of a distance tile (flat) or
// per (query, probe) (IVF), a block-wide scan per step of 256 positions, so the fill
// pass writes each block's results in position order.
#include <algorithm>

#include <math_constants.h>
#include <cub/block/block_scan.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "IdFilter.cuh"
#include "IvfListLoader.cuh"
#include "IvfStore.h"
#include "RangeSearch.h"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
using Scan = cub::BlockScan<int, kThreads>;

/// Walks positions [0, n) of one block's work: value(pos) gives (distance, is result);
/// the count pass returns the number of results (thread 0), the fill pass writes them
/// from out on in position order, with id(pos).
template <bool kFill, typename Value, typename Id>
__device__ int64_t walk(int64_t n, const Value& value, const Id& id, float* outD, int64_t* outI) {
    __shared__ typename Scan::TempStorage temp;
    int64_t running = 0;
    for (int64_t base = 0; base < n; base += kThreads) {
        const int64_t pos = base + threadIdx.x;
        float dist = 0.f;
        const bool hit = pos < n && value(pos, dist);
        int prefix = 0, total = 0;
        Scan(temp).ExclusiveSum(int(hit), prefix, total);
        if (kFill && hit) {
            outD[running + prefix] = dist;
            outI[running + prefix] = id(pos);
        }
        running += total;
        __syncthreads(); // temp is reused by the next step
    }
    return running;
}

struct RowValue {
    const RangeRowsArgs* a;
    int64_t row;
    __device__ bool operator()(int64_t c, float& dist) const {
        if (a->allow && !idFilterAllows(a->allow, a->idBase + c)) {
            return false;
        }
        const float v = a->dist[row * a->ldDist + c];
        if (a->innerProduct) {
            dist = -v;
            return dist > a->radius;
        }
        dist = fmaxf(v + a->colBias[c] + a->rowNorms[row], 0.f);
        return dist < a->radius;
    }
};

struct RowId {
    int64_t base;
    __device__ int64_t operator()(int64_t c) const {
        return base + c;
    }
};

template <bool kFill>
__global__ void __launch_bounds__(kThreads) rangeRowsKernel(RangeRowsArgs a, int64_t rowOffset) {
    const int64_t row = rowOffset + blockIdx.x;
    const int64_t off = kFill ? a.rowOffsets[row] : 0;
    const int64_t n =
            walk<kFill>(a.ncols, RowValue{&a, row}, RowId{a.idBase}, a.outD + off, a.outI + off);
    if (!kFill && threadIdx.x == 0) {
        a.counts[row * a.ldCounts] = n;
    }
}

template <bool kInnerProduct>
struct ListValue {
    ListLoader<kInnerProduct> load;
    const uint32_t* allow;
    int64_t slot0;
    float radius;
    __device__ bool operator()(int64_t p, float& dist) const {
        if (allow && !idFilterAllows(allow, slot0 + p)) {
            return false;
        }
        const float v = load(p);
        dist = kInnerProduct ? -v : v;
        return kInnerProduct ? dist > radius : dist < radius;
    }
};

struct ListId {
    const int64_t* ids;
    __device__ int64_t operator()(int64_t p) const {
        return ids[p];
    }
};

template <bool kFill, bool kInnerProduct>
__global__ void __launch_bounds__(kThreads) ivfRangeKernel(IvfRangeArgs a, int64_t itemOffset) {
    extern __shared__ __align__(16) float4 query[];
    const int64_t w = itemOffset + blockIdx.x;
    const int64_t pair = a.pairBegin + w;
    const int64_t q = pair / a.nprobe - a.queryBase;
    const int64_t list = a.coarse[q * a.nprobe + pair % a.nprobe];
    int64_t n = 0;
    if (list >= 0) {
        const int groups = ivfPaddedDim(a.d) / 4;
        const float* qsrc = a.queries + q * a.d;
        for (int j = threadIdx.x; j < 4 * groups; j += kThreads) {
            reinterpret_cast<float*>(query)[j] = j < a.d ? qsrc[j] : 0.f;
        }
        __syncthreads();
        ListValue<kInnerProduct> value{
                ListLoader<kInnerProduct>{
                        reinterpret_cast<const float4*>(a.listData[list]), query, 0, groups},
                a.allow, a.allow ? a.listBitBase[list] : 0, a.radius};
        const int64_t off = kFill ? a.pairOffsets[w] : 0;
        n = walk<kFill>(
                a.listLen[list], value, ListId{a.listIds[list]}, a.outD + off, a.outI + off);
    }
    if (!kFill && threadIdx.x == 0) {
        a.counts[w] = n;
    }
}

constexpr int64_t kMaxGrid = 65535;

template <bool kFill>
void launchRows(const RangeRowsArgs& a, cudaStream_t stream) {
    for (int64_t r0 = 0; r0 < a.nrows; r0 += kMaxGrid) {
        rangeRowsKernel<kFill>
                <<<unsigned(std::min(kMaxGrid, a.nrows - r0)), kThreads, 0, stream>>>(a, r0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

template <bool kFill>
void launchIvf(const IvfRangeArgs& a, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(a.nprobe >= 1, "ivfRange: nprobe=%d", a.nprobe);
    const size_t smem = ivfRangeSmemBytes(a.d);
    auto kernel = a.innerProduct ? ivfRangeKernel<kFill, true> : ivfRangeKernel<kFill, false>;
    raiseDynamicSmemLimit(kernel, smem);
    for (int64_t w0 = 0; w0 < a.npairs; w0 += kMaxGrid) {
        kernel<<<unsigned(std::min(kMaxGrid, a.npairs - w0)), kThreads, smem, stream>>>(a, w0);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
}

} // namespace

void rangeCountRows(const RangeRowsArgs& a, cudaStream_t stream) {
    launchRows<false>(a, stream);
}

void rangeFillRows(const RangeRowsArgs& a, cudaStream_t stream) {
    launchRows<true>(a, stream);
}

size_t ivfRangeSmemBytes(int d) {
    return size_t(ivfPaddedDim(d)) * sizeof(float);
}

void ivfRangeCount(const IvfRangeArgs& a, cudaStream_t stream) {
    launchIvf<false>(a, stream);
}

void ivfRangeFill(const IvfRangeArgs& a, cudaStream_t stream) {
    launchIvf<true>(a, stream);
}

} // namespace kernels
} // namespace faiss_ext
