// Loads of a row's components from rows stored as floats or as bytes (every component an
// integer in [0, 255]; GpuIndexBangConfig::vectorStorage). A byte converts exactly to the
// float it stands for, so a kernel templated on the row type computes on byte rows
// exactly what it computes on the same rows as floats, in the same order.
#pragma once

#include <cstdint>

namespace faiss_ext {
namespace kernels {

/// Components 4j .. 4j + 3 of a row (d % 4 == 0; float rows 16-byte aligned, byte rows
/// 4-byte aligned).
__device__ __forceinline__ float4 loadRow4(const float* __restrict__ row, int j) {
    return __ldg(reinterpret_cast<const float4*>(row) + j);
}
__device__ __forceinline__ float4 loadRow4(const uint8_t* __restrict__ row, int j) {
    const uchar4 u = __ldg(reinterpret_cast<const uchar4*>(row) + j);
    return make_float4(float(u.x), float(u.y), float(u.z), float(u.w));
}

/// Component j of a row.
__device__ __forceinline__ float loadRow1(const float* __restrict__ row, int j) {
    return __ldg(row + j);
}
__device__ __forceinline__ float loadRow1(const uint8_t* __restrict__ row, int j) {
    return float(__ldg(row + j));
}

} // namespace kernels
} // namespace faiss_ext
