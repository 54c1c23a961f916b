// The TF32 rounding of the 3xTF32 splits, shared by the operand split kernel and the fused
// coarse search so that both feed the tensor cores the same hi parts.
#pragma once

namespace faiss_ext {
namespace kernels {

/// x rounded to the nearest TF32 value (ties away from zero), as an FP32 number whose
/// low 13 mantissa bits are zero, so the tensor cores' own conversion keeps it exactly.
__device__ __forceinline__ float roundToTF32(float x) {
    const unsigned u = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

} // namespace kernels
} // namespace faiss_ext
