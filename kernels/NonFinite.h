// Host entry point of the rule for non-finite queries (plain C++): a query with a NaN
// or infinite component finds nothing. Called once per search by GpuIndex::searchDevice
// (through impl/NonFiniteQueries.h), whatever the index.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// For every query i < n of x (n x d, device) with a NaN or infinite component,
/// overwrites its results row (D and I, n x k, device): ids -1, distances +inf
/// (-inf for inner product). Other rows are left as they are. Runs on `stream`.
void clearNonFiniteQueryResults(
        const float* x,
        int64_t n,
        int d,
        int k,
        bool innerProduct,
        float* D,
        int64_t* I,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
