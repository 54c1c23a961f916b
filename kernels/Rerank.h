// Host entry points of the exact re-rank that follows a TF32 distance pass (plain C++).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// out[0] = max_i sqNorms[i] over n >= 1 values (device scalar, no host sync).
void maxValue(const float* values, int64_t n, float* out, cudaStream_t stream);

/// The exact re-rank of a low-precision shortlist.
///
/// Each row of candD / candI holds the `shortlist + 1` best keys of a query by the
/// TF32 product (L2: |b|^2 - 2 q.b; inner product: -q.b), ascending, ids -1 where
/// missing. The first `shortlist` are re-ranked with FP32 distances computed directly
/// from the vectors; the last is the boundary: every vector outside the shortlist has
/// a TF32 key at least as large. The re-rank is exact when the boundary, less the
/// bound on the TF32 error, is above the k-th exact distance; rows where that fails
/// are appended to fallbackRows (rowBase + row) with fallbackCount incremented, and
/// must be searched again in FP32.
struct RerankArgs {
    const float* queries = nullptr;    ///< nq x d
    const float* queryNorms = nullptr; ///< nq squared norms
    int64_t nq = 0;
    const float* base = nullptr;          ///< nb x d
    const float* baseMaxSqNorm = nullptr; ///< device scalar: max squared norm of base
    int d = 0;
    bool innerProduct = false;
    const float* candD = nullptr;
    const int64_t* candI = nullptr;
    int64_t ldCand = 0;
    int shortlist = 0;
    int k = 0;
    float* outD = nullptr; ///< nq x k FAISS distances
    int64_t* outI = nullptr;
    int64_t rowBase = 0;
    int* fallbackCount = nullptr;
    int64_t* fallbackRows = nullptr;
};
void rerankExact(const RerankArgs& args, cudaStream_t stream);

/// out[i * d + j] = x[rows[i] * d + j] for i < n.
void gatherRows(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream);

/// outD[rows[i] * k + j] = D[i * k + j] (and I likewise) for i < n.
void scatterResults(
        const float* D,
        const int64_t* I,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
