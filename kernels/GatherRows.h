// Copying selected rows of a device matrix into a dense one, and the conversions between
// float rows and rows stored as bytes (ByteRows.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// out[i * d + j] = x[rows[i] * d + j] for i < n (all device arrays); from byte rows,
/// the float each byte stands for, or the bytes themselves.
void gatherRows(
        const float* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream);
void gatherRows(
        const uint8_t* x,
        const int64_t* rows,
        int64_t n,
        int d,
        float* out,
        cudaStream_t stream);
void gatherRows(
        const uint8_t* x,
        const int64_t* rows,
        int64_t n,
        int d,
        uint8_t* out,
        cudaStream_t stream);

/// out[i] = float(x[i]) for i < count (device arrays).
void bytesToFloats(const uint8_t* x, size_t count, float* out, cudaStream_t stream);

/// out[i] = x[i] as a byte for i < count (device arrays); sets *notBytes (a device int
/// the caller zeroed) to 1 when some x[i] is not an integer in [0, 255] (a NaN or an
/// infinity included), and out is then meaningless.
void floatsToBytes(const float* x, size_t count, uint8_t* out, int* notBytes, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
