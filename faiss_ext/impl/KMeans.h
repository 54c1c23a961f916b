// k-means on the GPU, the one used by GpuIndexIVFFlat::train (its coarse centroids) and
// by GpuIndexBang's PQ mode (each sub-quantizer's codebook).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss/Clustering.h>
#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/Progress.h>

namespace faiss_ext {

/// The k-means parameters of an IVF's coarse centroids (GpuIndexIVFFlat's defaults, and
/// the Bang build's lists): 10 iterations, spherical for inner product, faiss's defaults
/// else.
faiss::ClusteringParameters ivfKMeansParameters(faiss::MetricType metric);

/// k centroids (k x d, row-major) of n host vectors x (n x d, n >= k): faiss::Clustering
/// with parameters cp (its sampling, iterations and empty-cluster splitting) whose
/// assignments are exact searches on the device (flatSearch with the given metric), the
/// host vectors paged through device memory in pages of at most pageBytes.
/// Deterministic for given inputs. Reports each iteration (of cp.niter x cp.nredo)
/// to `progress`.
std::vector<float> gpuKMeans(
        const GpuResources& res,
        int d,
        int64_t k,
        int64_t n,
        const float* x,
        const faiss::ClusteringParameters& cp,
        faiss::MetricType metric,
        size_t pageBytes,
        const Progress& progress);

} // namespace faiss_ext
