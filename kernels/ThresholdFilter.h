// Host entry points of the flat search's threshold path (impl/FlatThresholdSearch.h): a
// per-query key threshold with a proven error margin, a filter that keeps the ids and keys
// under it, and an exact FP32 re-rank of the kept ids that can still be among the k
// nearest (RerankBand.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "OperandSplit.h"

namespace faiss_ext {
namespace kernels {

/// What bounds the error of one GEMM key (|b|^2 - 2 q.b for L2, -q.b for inner product)
/// against the same key in exact arithmetic: |error| <= dotRel |q| B (times 2 for L2)
/// plus, for L2, normRel B^2, with B the largest base norm.
struct KeyErrorBound {
    float dotRel = 0;  ///< relative error of one dot product, of |q| |b|
    float normRel = 0; ///< relative error of one stored squared norm, and the key's sum

    /// The bound of a difference of two keys computed with these two errors.
    KeyErrorBound operator+(const KeyErrorBound& o) const {
        return {dotRel + o.dotRel, normRel + o.normRel};
    }
};

/// The bound for dimension d and the GEMM's product.
KeyErrorBound keyErrorBound(int d, GemmProduct product);

/// *out = the largest squared norm of the nb base rows: from norms (nb floats) when not
/// null, else computed from base (nb x d). out is one device float.
void maxSquaredNorm(
        const float* base,
        const float* norms,
        int64_t nb,
        int d,
        float* out,
        cudaStream_t stream);

/// thresholds[r] for r < n: an upper bound on the GEMM key (|b|^2 - 2 q.b for L2, -q.b
/// for inner product) of every one of query r's true k nearest. kth[r * ldKth] is the
/// query's k-th distance over a sample of the base as flatSearch returns it (L2: squared
/// distance, |q|^2 = queryNorms[r] added and clamped at 0; inner product: the product);
/// the threshold is its key plus `bound` for the query against *maxBaseNorm (squared):
/// the sum of the sample GEMM's bound and the main pass's.
void keyThresholds(
        const float* kth,
        int64_t ldKth,
        int64_t n,
        const float* queryNorms,
        const float* maxBaseNorm,
        KeyErrorBound bound,
        bool l2,
        float* thresholds,
        cudaStream_t stream);

/// For each row r < nrows and column c < ncols of the key tile dist (row-major, ldDist),
/// key = dist[r * ldDist + c] + (colBias ? colBias[c] : 0): when key <= thresholds[r],
/// appends idBase + c to row r's list ids[r * capacity + ...] (order unspecified), its
/// key to keys[] at the same slot, and counts it in counts[r]; counts past capacity are
/// counted but not stored. With allow (a bitmap over ids, kernels/IdFilter.h) only ids
/// whose bit is set are listed.
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
        cudaStream_t stream);

/// keys[r * capacity + j] = +inf for min(counts[r], capacity) <= j < capacity, r < nrows:
/// a listed row padded for a selection over all its slots.
void padListedKeys(
        float* keys,
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        cudaStream_t stream);

/// limits[r] = rerankBandLimit (RerankBand.h) for r < n: kthKeys[r * ldKth] is query r's
/// k-th smallest listed key, queryNorms[r] its squared norm, keyBound the main pass's
/// bound, d the dimension (the re-rank's rounding). maxBaseNorm: one device float.
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
        cudaStream_t stream);

/// For each row r < nrows, the exact keys of those of its min(counts[r], capacity) listed
/// ids whose listed key is at most limits[r]: sum_j (q_j - b_j)^2 (l2) or -sum_j q_j b_j,
/// in FP32, to outD / outI (row r at r * capacity; the other slots get +inf and id -1).
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
        cudaStream_t stream);

/// rerankListed for the rerank path (impl/FlatRerankSearch.h): row r's `kept` candidates
/// are ids[r * ld + j] (-1: missing) with their keys keys[r * ld + j], every slot listed,
/// and the results go to outD / outI at r * ld + j (not aliasing the input).
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
        cudaStream_t stream);

/// One query's row of approximate keys re-ranked in place (the flat radix path's float16
/// copy, impl/FlatRadixSearch.h): for c < ncols, values[c] becomes the query's exact FP32
/// distance to base row c as rerankListed computes it when values[c] is below +inf and at
/// most *limit (one device float), else +inf.
void rerankRow(
        const float* query,
        const float* base,
        int d,
        bool l2,
        float* values,
        int64_t ncols,
        const float* limit,
        cudaStream_t stream);

/// out (idFilterWords(rows) words): bit i = bit i * stride of allow, for i < rows.
void strideBitmap(
        const uint32_t* allow,
        int64_t stride,
        int64_t rows,
        uint32_t* out,
        cudaStream_t stream);

/// rows[0 .. *nOver) = the rows r < nrows whose count exceeds capacity (any order).
void overflowRows(
        const uint32_t* counts,
        int64_t nrows,
        int64_t capacity,
        int64_t* rows,
        int* nOver,
        cudaStream_t stream);

/// outD[rows[i] * k + j] = inD[i * k + j] (and outI likewise) for i < n, j < k.
void scatterResultRows(
        const float* inD,
        const int64_t* inI,
        const int64_t* rows,
        int64_t n,
        int k,
        float* outD,
        int64_t* outI,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
