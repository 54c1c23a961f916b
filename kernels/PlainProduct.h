// The flat search's query-base products on a plain CUDA-core kernel, in place of
// cuBLAS: for runs under compute-sanitizer, whose racecheck and initcheck do not follow
// cuBLAS's Hopper GEMMs (GpuResourcesConfig::plainProducts).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "OperandSplit.h"

namespace faiss_ext {
namespace kernels {

/// dist[i * nb + j] = alpha * sum_c q[i * K + c] b[j * K + c] for i < nq, j < nb, with
/// FP32 accumulation. The operands are FP32 for kFloat32, kTF32 and kTF32x3 (multiplied
/// in FP32: within the TF32 products' error bounds) and bf16 for kBF16x3; K is d, or 3d
/// for the splits. No shared memory; one base row a thread.
void plainProduct(
        GemmProduct product,
        const void* q,
        int64_t nq,
        const void* b,
        int64_t nb,
        int K,
        float alpha,
        float* dist,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
