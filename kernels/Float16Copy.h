// A float16 copy of float rows, for searches that read half the bytes first and then
// re-rank exactly from the float rows (the flat radix path's copy, impl/FlatRadixSearch.h,
// GpuIndexFlatConfig::float16Copy). Row i is stored as scales[i] * h_i: h_i the row
// times a power of two that puts its largest magnitude in [2^14, 2^15), rounded to
// float16 (11 significant bits, largest finite 65504), and scales[i] that power's
// inverse, so the copy's values are h_ij * scales[i] exactly in FP32.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Halves in one stored row: d rounded up to a multiple of 8 (16-byte rows, zero padded).
int64_t float16RowHalves(int d);

/// Writes the copy of rows [0, n) of x (n x d floats, device, finite) to out (n x
/// float16RowHalves(d) halves, as their bits) and scales (n floats), and raises
/// *maxRelError (one non-negative device float) to at least every row's
/// |x_i - copy_i| / |x_i|, rounded up (0 for a zero row). A row whose largest magnitude
/// is below 2^-112 is scaled by 2^126 only (the float range), so its relative error can
/// be larger; the bound still holds.
void float16CopyRows(
        const float* x,
        int64_t n,
        int d,
        uint16_t* out,
        float* scales,
        float* maxRelError,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
