// Float16Copy.h.
#include <cuda_fp16.h>
#include <math.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "Float16Copy.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;

/// A warp a row: the row's largest magnitude picks the scale, then each lane converts
/// its elements and sums, in double, the squares of the row and of its rounding error.
__global__ void __launch_bounds__(kThreads) float16CopyKernel(
        const float* x,
        int64_t n,
        int d,
        int64_t ld,
        __half* out,
        float* scales,
        unsigned* maxRelErrorBits) {
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32;
    if (row >= n) {
        return;
    }
    const float* xr = x + row * d;
    float largest = 0.f;
    for (int i = lane; i < d; i += 32) {
        largest = fmaxf(largest, fabsf(xr[i]));
    }
    for (int off = 16; off > 0; off >>= 1) {
        largest = fmaxf(largest, __shfl_xor_sync(kFullMask, largest, off));
    }
    // largest * 2^e in [2^14, 2^15); both 2^e and 2^-e stay normal floats.
    const int e = largest > 0.f ? max(-126, min(126, 14 - ilogbf(largest))) : 0;
    const float up = ldexpf(1.f, e);
    const float down = ldexpf(1.f, -e);
    double err = 0.0, norm = 0.0;
    for (int64_t i = lane; i < ld; i += 32) {
        const float v = i < d ? xr[i] : 0.f;
        const __half h = __float2half_rn(v * up);
        out[row * ld + i] = h;
        const double diff = double(v) - double(__half2float(h) * down);
        err += diff * diff;
        norm += double(v) * double(v);
    }
    for (int off = 16; off > 0; off >>= 1) {
        err += __shfl_xor_sync(kFullMask, err, off);
        norm += __shfl_xor_sync(kFullMask, norm, off);
    }
    if (lane == 0) {
        scales[row] = down;
        if (err > 0.0) {
            // A non-negative float's bits order like the float: atomicMax is a float max.
            const float rel = __double2float_ru(sqrt(err) / sqrt(norm) * (1.0 + 1e-12));
            atomicMax(maxRelErrorBits, __float_as_uint(rel));
        }
    }
}

} // namespace

int64_t float16RowHalves(int d) {
    return (int64_t(d) + 7) / 8 * 8;
}

void float16CopyRows(
        const float* x,
        int64_t n,
        int d,
        uint16_t* out,
        float* scales,
        float* maxRelError,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(d > 0, "float16CopyRows: d=%d", d);
    if (n == 0) {
        return;
    }
    const int64_t blocks = divUp<int64_t>(n * 32, kThreads);
    float16CopyKernel<<<unsigned(blocks), kThreads, 0, stream>>>(
            x, n, d, float16RowHalves(d), reinterpret_cast<__half*>(out), scales,
            reinterpret_cast<unsigned*>(maxRelError));
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
