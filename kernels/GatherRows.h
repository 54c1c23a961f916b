// Copying selected rows of a device matrix into a dense one.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// out[i * d + j] = x[rows[i] * d + j] for i < n (all device arrays).
void gatherRows(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
