// Timing and device ceilings for the benchmark drivers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {
namespace bench {

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

inline double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    size_t i = std::min(v.size() - 1, size_t(p * (v.size() - 1) + 0.5));
    return v[i];
}

/// Milliseconds of each of `reps` runs of fn on res's stream, timed with CUDA events
/// after `warmup` untimed runs.
inline std::vector<double> timeDevice(
        const GpuResources& res,
        int warmup,
        int reps,
        const std::function<void()>& fn) {
    for (int i = 0; i < warmup; ++i) {
        fn();
    }
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a, res.stream());
        fn();
        cudaEventRecord(b, res.stream());
        cudaEventSynchronize(b);
        float t = 0;
        cudaEventElapsedTime(&t, a, b);
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}

/// Milliseconds of each of `reps` runs of a synchronous host call, after warm-up.
inline std::vector<double> timeHost(int warmup, int reps, const std::function<void()>& fn) {
    for (int i = 0; i < warmup; ++i) {
        fn();
    }
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return ms;
}

/// Measured ceilings of the device: copy bandwidth and FP32 GEMM rate.
struct Ceilings {
    double bytesPerSec = 0;     ///< device-to-device copy, bytes read + written
    double flopsPerSec = 0;     ///< cuBLAS SGEMM 8192^3, FP32 (no TF32)
    double tf32FlopsPerSec = 0; ///< the same GEMM on tensor cores in TF32
    double bf16FlopsPerSec = 0; ///< the same GEMM on bf16 operands, FP32 accumulation
};

inline Ceilings measureCeilings(const GpuResources& res) {
    Ceilings c;
    const size_t bytes = size_t(1) << 30;
    auto src = res.alloc<char>(bytes);
    auto dst = res.alloc<char>(bytes);
    cudaMemsetAsync(src.data(), 1, bytes, res.stream());
    double copyMs = median(timeDevice(res, 2, 10, [&] {
        cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, res.stream());
    }));
    c.bytesPerSec = 2.0 * bytes / (copyMs * 1e-3);

    const int n = 8192;
    auto a = res.alloc<float>(size_t(n) * n);
    auto b = res.alloc<float>(size_t(n) * n);
    auto o = res.alloc<float>(size_t(n) * n);
    cudaMemsetAsync(a.data(), 0x3c, size_t(n) * n * 4, res.stream());
    cudaMemsetAsync(b.data(), 0x3c, size_t(n) * n * 4, res.stream());
    const float one = 1.f, zero = 0.f;
    double gemmMs = median(timeDevice(res, 1, 5, [&] {
        cublasSgemm(
                res.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), n, b.data(), n,
                &zero, o.data(), n);
    }));
    c.flopsPerSec = 2.0 * n * double(n) * n / (gemmMs * 1e-3);
    double tf32Ms = median(timeDevice(res, 1, 5, [&] {
        cublasGemmEx(
                res.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), CUDA_R_32F, n,
                b.data(), CUDA_R_32F, n, &zero, o.data(), CUDA_R_32F, n,
                CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    }));
    c.tf32FlopsPerSec = 2.0 * n * double(n) * n / (tf32Ms * 1e-3);
    // bf16 operands: the FP32 buffers hold twice the elements needed.
    double bf16Ms = median(timeDevice(res, 1, 5, [&] {
        cublasGemmEx(
                res.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), CUDA_R_16BF, n,
                b.data(), CUDA_R_16BF, n, &zero, o.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                CUBLAS_GEMM_DEFAULT);
    }));
    c.bf16FlopsPerSec = 2.0 * n * double(n) * n / (bf16Ms * 1e-3);
    return c;
}

inline void printDevice(const GpuResources& res, const Ceilings& c) {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, res.device());
    std::printf(
            "device: %s, %d SMs, %.1f GiB; measured copy %.2f TB/s, SGEMM %.1f TFLOP/s, TF32"
            " GEMM %.1f TFLOP/s, bf16 GEMM %.1f TFLOP/s\n",
            p.name, p.multiProcessorCount, p.totalGlobalMem / double(1 << 30), c.bytesPerSec / 1e12,
            c.flopsPerSec / 1e12, c.tf32FlopsPerSec / 1e12, c.bf16FlopsPerSec / 1e12);
}

} // namespace bench
} // namespace faiss_ext
