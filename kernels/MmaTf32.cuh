// The 3xTF32 tensor-core step shared by the fused coarse search (IvfCoarseFusedImpl.cuh)
// and the list-major key product (ivf_list_major.cu): the operand split and one
// mma.sync m16n8k8 with FP32 accumulation. Devices of compute capability 8.0 and up.
//
// Fragment layout (PTX ISA, mma.m16n8k8 with .tf32; g = lane / 4, t = lane % 4):
//   A (16 x 8, row-major): a0 (row g, col t), a1 (row g + 8, col t), a2 (row g, col t + 4),
//                          a3 (row g + 8, col t + 4)
//   B (8 x 8, "col"): b0 (k t, n g), b1 (k t + 4, n g)
//   C (16 x 8): c0 (row g, col 2t), c1 (row g, col 2t + 1), c2 (row g + 8, col 2t),
//               c3 (row g + 8, col 2t + 1)
#pragma once

#include "Tf32Round.cuh"

namespace faiss_ext {
namespace kernels {

/// The 3xTF32 parts of x, as the GEMM path's operand split makes them: hi = x rounded to
/// TF32, lo = x - hi (exact in FP32), given to the tensor cores as it is.
__device__ __forceinline__ void splitTf32(float x, unsigned& hi, unsigned& lo) {
    const float h = roundToTF32(x);
    hi = __float_as_uint(h);
    lo = __float_as_uint(x - h);
}

/// acc += A B on one m16n8k8 tile (fragments as in the layout above).
__device__ __forceinline__ void mmaTf32(
        float (&acc)[4],
        const unsigned (&a)[4],
        unsigned b0,
        unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace kernels
} // namespace faiss_ext
