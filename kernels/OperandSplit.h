// The error-compensated splits of the flat search's GEMM operands: 3xTF32 and bf16x3.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// The arithmetic of one GEMM of query-base products.
enum class GemmProduct {
    /// FP32 operands on CUDA cores
    kFloat32,
    /// FP32 operands that the tensor cores round to TF32 (11 significant bits), one GEMM
    /// over K = d with FP32 accumulation: ~2^-10 relative a product. No split, no exact
    /// results: for products that need only be near (the Bang build's candidates)
    kTF32,
    /// hi = x rounded to TF32 (11 significant bits), lo = x - hi (exact in FP32); query
    /// rows become [hi, hi, lo] and base rows [hi, lo, hi], so one TF32 GEMM over K = 3d
    /// sums hi.hi + hi.lo + lo.hi in FP32: the product up to the dropped lo.lo term and
    /// the TF32 rounding of the lo parts (~2^-21 relative)
    kTF32x3,
    /// h = bf16(x) (8 significant bits), m = bf16(x - h); query rows [h, h, m], base
    /// rows [h, m, h], one bf16 GEMM over K = 3d with FP32 accumulation: the product up
    /// to the dropped h.l, l.h and m.m terms (l = x - h - m; ~3 2^-16 relative), at
    /// twice TF32's tensor rate and with half its operand bytes
    kBF16x3,
};

/// Which operand of Q B^T a split row belongs to.
enum class SplitRole {
    kQuery,
    kBase,
};

/// Bytes of one split row of dimension d (0 for kFloat32 and kTF32: the rows are used as
/// they are).
size_t splitRowBytes(GemmProduct product, int d);

/// Writes n split rows of 3d elements (FP32 for kTF32x3, bf16 for kBF16x3), row-major,
/// to out from x (n x d, row-major). Finite inputs only (the indexes refuse NaN and
/// inf). kFloat32 and kTF32 have no split: refused.
void splitRows(
        GemmProduct product,
        const float* x,
        int64_t n,
        int d,
        SplitRole role,
        void* out,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
