// GpuIndexBang's inner product, by the MIPS-to-L2 transform: a stored vector x becomes
// x' = [x, sqrt(M2 - |x|^2), 0, ...] (M2: the largest |x|^2 stored, so |x'|^2 = M2 for
// all; the zeros fill PQ mode's extra sub-quantizer) and a query q becomes q' = [q, 0,
// ...], so |q' - x'|^2 = |q|^2 + M2 - 2 q.x: the nearest stored
// vectors in L2 are those of largest inner product, and the L2 graph, build and search
// serve unchanged. Host entry points (plain C++: no device code here).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// out (n x width, device) = the queries q (n x d, device) with width - d zeros appended
/// to each (width: the stored rows', impl/BangInnerProduct.h).
void bangPadQueries(const float* q, int64_t n, int d, int width, float* out, cudaStream_t stream);

/// The transformed search's results made inner products, in place: D = (|q|^2 + M2 -
/// D) / 2 where I >= 0 (decreasing in D, so each row's order holds), -inf where I < 0.
/// q: the original queries (n x d); D, I: n x k (device).
void bangInnerProductsFromL2(
        const float* q,
        int64_t n,
        int d,
        float M2,
        int k,
        float* D,
        const int64_t* I,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
