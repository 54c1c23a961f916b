// The error-compensated TF32 split of the flat search's GEMM operands (3xTF32).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Which operand of Q B^T a split row belongs to. With hi = x rounded to TF32 (10
/// mantissa bits, low 13 bits zero) and lo = x - hi (exact in FP32), query rows become
/// [hi, hi, lo] and base rows [hi, lo, hi], so one TF32 GEMM over K = 3d sums
/// hi.hi + hi.lo + lo.hi in FP32: the product up to the dropped lo.lo term (~2^-22
/// relative) and the TF32 rounding of the lo parts (~2^-22 relative).
enum class Tf32SplitRole {
    kQuery,
    kBase,
};

/// Writes n rows of 3d floats to out (n x 3d, row-major) from x (n x d, row-major).
void splitTF32(
        const float* x,
        int64_t n,
        int d,
        Tf32SplitRole role,
        float* out,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
