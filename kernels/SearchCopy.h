// A low-precision copy of float rows, for searches that read fewer bytes first and then
// re-rank exactly from the float rows (the flat radix path's copy,
// impl/FlatRadixSearch.h; GpuIndexFlatConfig::float16Copy / int8Copy). Row i is stored
// as scales[i] * c_i with c_i in the copy's type:
// - kFloat16: the row times a power of two that puts its largest magnitude in
//   [2^14, 2^15), rounded to float16 (11 significant bits, largest finite 65504); the
//   scale is that power's inverse, so the copy's values are c_ij * scales[i] exactly in
//   FP32.
// - kInt8: the row over scales[i] = its largest magnitude / 127, rounded to an integer
//   in [-127, 127] (a quarter of the bytes, ~25x float16's error).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

enum class CopyCode {
    kFloat16,
    kInt8,
};

/// Bytes of one stored row: 16-byte rows, zero padded (d rounded up to 8 halves or 16
/// bytes).
int64_t copyRowBytes(CopyCode code, int d);

/// Writes the copy of rows [0, n) of x (n x d floats, device, finite) to out (n x
/// copyRowBytes(code, d) bytes) and scales (n floats), and raises *maxRelError (one
/// non-negative device float) to at least every row's |x_i - copy_i| / |x_i|, measured
/// in double and rounded up (0 for a zero row). A float16 row whose largest magnitude
/// is below 2^-112 is scaled by 2^126 only (the float range), so its relative error can
/// be larger; the bound still holds.
void copyRows(
        CopyCode code,
        const float* x,
        int64_t n,
        int d,
        void* out,
        float* scales,
        float* maxRelError,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
