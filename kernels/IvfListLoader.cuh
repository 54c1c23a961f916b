// The distance of one query to one vector of an IVF list, read from the interleaved
// layout of IvfStore.h: shared by the list scan (ivf_scan.cu) and the range search
// (range_search.cu), so both compute the same value in the same order.
#pragma once

#include <cstdint>

namespace faiss_ext {
namespace kernels {

/// Position pos of a chunk starting at vector `start`: squared L2 distance, or minus
/// the inner product.
template <bool kInnerProduct>
struct ListLoader {
    const float4* data;  ///< the list's first float4
    const float4* query; ///< shared memory, groups float4
    int64_t start;       ///< first vector of the chunk
    int groups;

    __device__ float operator()(int64_t pos) const {
        const int64_t v = start + pos;
        const float4* p = data + (v >> 5) * (int64_t(32) * groups) + (v & 31);
        float acc0 = 0.f, acc1 = 0.f;
#pragma unroll 8
        for (int g = 0; g < groups; ++g) {
            const float4 x = p[int64_t(g) * 32];
            const float4 q = query[g];
            if (kInnerProduct) {
                acc0 = fmaf(q.x, x.x, acc0);
                acc1 = fmaf(q.y, x.y, acc1);
                acc0 = fmaf(q.z, x.z, acc0);
                acc1 = fmaf(q.w, x.w, acc1);
            } else {
                const float a = q.x - x.x, b = q.y - x.y, c = q.z - x.z, e = q.w - x.w;
                acc0 = fmaf(a, a, acc0);
                acc1 = fmaf(b, b, acc1);
                acc0 = fmaf(c, c, acc0);
                acc1 = fmaf(e, e, acc1);
            }
        }
        return kInnerProduct ? -(acc0 + acc1) : acc0 + acc1;
    }
};

} // namespace kernels
} // namespace faiss_ext
