// SearchCopy.h.
#include <cuda_fp16.h>
#include <math.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/MathUtils.h>

#include "SearchCopy.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;

/// One element's stored value and the float it stands for (before the row's scale).
template <CopyCode kCode>
struct CopyElement;

template <>
struct CopyElement<CopyCode::kFloat16> {
    using Stored = __half;
    /// The row times up (a power of two) rounded to float16.
    static __device__ Stored store(float v, float up) {
        return __float2half_rn(v * up);
    }
    static __device__ float value(Stored s) {
        return __half2float(s);
    }
};

template <>
struct CopyElement<CopyCode::kInt8> {
    using Stored = int8_t;
    /// The row times up (127 / its largest magnitude) rounded to an integer.
    static __device__ Stored store(float v, float up) {
        return int8_t(fminf(127.f, fmaxf(-127.f, rintf(v * up))));
    }
    static __device__ float value(Stored s) {
        return float(s);
    }
};

/// A warp a row: the row's largest magnitude picks the scale, then each lane converts
/// its elements and sums, in double, the squares of the row and of its rounding error.
template <CopyCode kCode>
__global__ void __launch_bounds__(kThreads) copyRowsKernel(
        const float* x,
        int64_t n,
        int d,
        int64_t rowElements,
        typename CopyElement<kCode>::Stored* out,
        float* scales,
        unsigned* maxRelErrorBits) {
    using Element = CopyElement<kCode>;
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
    float up = 1.f, down = 1.f;
    if (kCode == CopyCode::kFloat16) {
        // largest * 2^e in [2^14, 2^15); both 2^e and 2^-e stay normal floats.
        const int e = largest > 0.f ? max(-126, min(126, 14 - ilogbf(largest))) : 0;
        up = ldexpf(1.f, e);
        down = ldexpf(1.f, -e);
    } else if (largest > 0.f) {
        down = largest / 127.f;
        up = 1.f / down;
    }
    double err = 0.0, norm = 0.0;
    for (int64_t i = lane; i < rowElements; i += 32) {
        const float v = i < d ? xr[i] : 0.f;
        const typename Element::Stored s = Element::store(v, up);
        out[row * rowElements + i] = s;
        // The copy's value as the search forms it: the stored value times the scale.
        const double diff = double(v) - double(Element::value(s) * down);
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

template <CopyCode kCode>
void launchCopy(
        const float* x,
        int64_t n,
        int d,
        void* out,
        float* scales,
        float* maxRelError,
        cudaStream_t stream) {
    using Stored = typename CopyElement<kCode>::Stored;
    const int64_t blocks = divUp<int64_t>(n * 32, kThreads);
    copyRowsKernel<kCode><<<unsigned(blocks), kThreads, 0, stream>>>(
            x, n, d, copyRowBytes(kCode, d) / int64_t(sizeof(Stored)), static_cast<Stored*>(out),
            scales, reinterpret_cast<unsigned*>(maxRelError));
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace

int64_t copyRowBytes(CopyCode code, int d) {
    return code == CopyCode::kFloat16 ? (int64_t(d) + 7) / 8 * 16 : (int64_t(d) + 15) / 16 * 16;
}

void copyRows(
        CopyCode code,
        const float* x,
        int64_t n,
        int d,
        void* out,
        float* scales,
        float* maxRelError,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(d > 0, "copyRows: d=%d", d);
    if (n == 0) {
        return;
    }
    if (code == CopyCode::kFloat16) {
        launchCopy<CopyCode::kFloat16>(x, n, d, out, scales, maxRelError, stream);
    } else {
        launchCopy<CopyCode::kInt8>(x, n, d, out, scales, maxRelError, stream);
    }
}

} // namespace kernels
} // namespace faiss_ext
