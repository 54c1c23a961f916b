// Host entry points of the small distance kernels (norms, result finishing).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <faiss/MetricType.h>

namespace faiss_ext {
namespace kernels {

/// out[i] = sum_j x[i * d + j]^2 for i < n.
void rowSquaredNorms(const float* x, int64_t n, int d, float* out, cudaStream_t stream);

/// How raw selection keys become FAISS distances.
enum class DistanceFinish {
    /// key = |b|^2 - 2 q.b: add |q|^2 (rowNorms; null: the keys are whole distances)
    /// and clamp at 0
    kL2,
    /// key = -q.b: negate
    kInnerProduct,
};

/// The finish of a metric's selection keys.
inline DistanceFinish distanceFinishFor(faiss::MetricType metric) {
    return metric == faiss::METRIC_L2 ? DistanceFinish::kL2 : DistanceFinish::kInnerProduct;
}

/// Writes n x k results: outD[i*k+j] = finish(inD[i*ldIn+j]); outI likewise copied.
/// Slots with id -1 get +inf (L2) or -inf (inner product). In and out may be the
/// same arrays when ldIn == k.
void finishKnn(
        const float* inD,
        const int64_t* inI,
        int64_t ldIn,
        int64_t n,
        int k,
        DistanceFinish finish,
        const float* rowNorms,
        float* outD,
        int64_t* outI,
        cudaStream_t stream);

/// Sets count results to "missing": id -1, distance +inf (L2) or -inf (inner product).
void fillMissingResults(
        float* outD,
        int64_t* outI,
        int64_t count,
        DistanceFinish finish,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
