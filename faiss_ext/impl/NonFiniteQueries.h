// The one rule for non-finite queries, the same for every index: a query with a NaN or
// an infinite component gets only missing results (ids -1, distances +inf for L2,
// -inf for inner product), and the other queries of the batch are unaffected. Applied
// once, by GpuIndex::searchDevice after the index's own search (so host and device
// queries alike), on the device: no host synchronisation.
#pragma once

#include <cstdint>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <kernels/NonFinite.h>

namespace faiss_ext {

/// Overwrites the results (D, I: n x k, device) of the queries (x: n x d, device)
/// with a non-finite component, on res.stream().
inline void clearNonFiniteQueryResults(
        const GpuResources& res,
        faiss::MetricType metric,
        int64_t n,
        int d,
        int k,
        const float* x,
        float* D,
        int64_t* I) {
    kernels::clearNonFiniteQueryResults(
            x, n, d, k, metric == faiss::METRIC_INNER_PRODUCT, D, I, res.stream());
}

} // namespace faiss_ext
