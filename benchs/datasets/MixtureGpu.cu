// Mixture rows on the GPU (MixtureGpu.h). A chunk of rows: each row's component (the
// first draw of its generator), the rows sorted by component (CUB), then blocks of
// consecutive sorted rows, which share one or two components: each component's mean
// and factor go to shared memory once for the block, each thread draws its row's
// normals and writes its row. The rows then go to the host through a pinned buffer.
#include "MixtureGpu.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include "ByRow.h"
#include "MixtureRow.h"

namespace faiss_ext {
namespace datasets {

namespace {

constexpr int kThreads = 128; // rows a block

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        throw std::runtime_error(
                std::string("sampleGaussianMixtureOnGpu: ") + what + ": " + cudaGetErrorString(e));
    }
}

/// A device array freed on scope exit.
template <typename T>
struct DeviceArray {
    T* p = nullptr;
    explicit DeviceArray(size_t n) {
        check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    }
    ~DeviceArray() {
        cudaFree(p);
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
};

/// component[i], row[i] = i for rows r0 .. r0 + m - 1.
__global__ void componentsKernel(
        uint64_t streamSeed,
        int64_t r0,
        int m,
        const double* cumulative,
        int components,
        int* component,
        int* row) {
    const int i = int(blockIdx.x) * blockDim.x + int(threadIdx.x);
    if (i < m) {
        RowRng rng(rowSeed(streamSeed, r0 + i));
        component[i] = mixtureComponent(rng, cumulative, components);
        row[i] = i;
    }
}

/// Rows of one chunk, a thread a row, over the rows sorted by component. Shared memory:
/// the factor (d x d), the mean (d) and the block's normals (d x kThreads, thread t's
/// z(b) at b kThreads + t).
__global__ void __launch_bounds__(kThreads) rowsKernel(
        uint64_t streamSeed,
        int64_t r0,
        int m,
        int d,
        bool bytes,
        const float* means,
        const float* factors,
        const int* sortedComponent,
        const int* sortedRow,
        float* out) {
    extern __shared__ float smem[];
    float* factor = smem;
    float* mean = factor + size_t(d) * d;
    float* z = mean + d;
    const int t = int(threadIdx.x);
    const int begin = int(blockIdx.x) * kThreads;
    const int count = min(kThreads, m - begin);
    const int mine = t < count ? sortedComponent[begin + t] : -1;
    if (t < count) {
        const int i = sortedRow[begin + t];
        RowRng rng(rowSeed(streamSeed, r0 + i));
        rng.next(); // the component's draw
        for (int b = 0; b < d; ++b) {
            z[size_t(b) * kThreads + t] = rng.normal();
        }
    }
    const auto normal = [z, t](int b) { return z[size_t(b) * kThreads + t]; };
    // The block's components in order (the rows are sorted by component).
    for (int done = 0; done < count;) {
        const int c = sortedComponent[begin + done];
        __syncthreads(); // the previous component's factor is no longer read
        const float* f = factors + size_t(c) * d * d;
        for (int e = t; e < d * d; e += kThreads) {
            factor[e] = f[e];
        }
        for (int e = t; e < d; e += kThreads) {
            mean[e] = means[size_t(c) * d + e];
        }
        __syncthreads();
        if (mine == c) {
            float* row = out + size_t(sortedRow[begin + t]) * d;
            for (int a = 0; a < d; ++a) {
                row[a] = mixtureValue(mean[a], factor + size_t(a) * d, a, normal, bytes);
            }
        }
        done += __syncthreads_count(mine == c);
    }
}

} // namespace

std::vector<float> sampleGaussianMixtureOnGpu(
        const GaussianMixture& g,
        int64_t n,
        uint64_t seed,
        bool bytes,
        int64_t chunkRows) {
    const int C = g.components();
    const int d = g.d;
    if (C < 1 || d < 1 || n < 0 || chunkRows < 1 || chunkRows > (int64_t(1) << 30)) {
        throw std::invalid_argument(
                "sampleGaussianMixtureOnGpu: an empty mixture, n < 0 or a bad chunk size");
    }
    const size_t D = size_t(d);
    const size_t smem = (D * D + D + D * kThreads) * sizeof(float);
    int device = 0, limit = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          "cudaDeviceGetAttribute");
    if (smem > size_t(limit)) {
        throw std::invalid_argument(
                "sampleGaussianMixtureOnGpu: d = " + std::to_string(d) + " needs " +
                std::to_string(smem) + " bytes of shared memory a block, the device has " +
                std::to_string(limit));
    }
    check(cudaFuncSetAttribute(rowsKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
          "cudaFuncSetAttribute");

    std::vector<float> x(size_t(n) * D);
    if (n == 0) {
        return x;
    }
    const int m = int(std::min(n, chunkRows));
    DeviceArray<double> cumulative{size_t(C)};
    DeviceArray<float> means{g.means.size()}, factors{g.factors.size()};
    check(cudaMemcpy(
                  cumulative.p, g.cumulative.data(), size_t(C) * sizeof(double),
                  cudaMemcpyHostToDevice),
          "copy of the weights");
    check(cudaMemcpy(
                  means.p, g.means.data(), g.means.size() * sizeof(float), cudaMemcpyHostToDevice),
          "copy of the means");
    check(cudaMemcpy(
                  factors.p, g.factors.data(), g.factors.size() * sizeof(float),
                  cudaMemcpyHostToDevice),
          "copy of the factors");
    DeviceArray<int> comp{size_t(m)}, compSorted{size_t(m)}, row{size_t(m)}, rowSorted{size_t(m)};
    DeviceArray<float> rows{size_t(m) * D};
    int endBit = 1;
    while ((1 << endBit) < C) {
        ++endBit;
    }
    size_t sortBytes = 0;
    check(cub::DeviceRadixSort::SortPairs(
                  nullptr, sortBytes, comp.p, compSorted.p, row.p, rowSorted.p, m, 0, endBit),
          "sort size");
    DeviceArray<char> sortTemp{sortBytes};
    float* pinned = nullptr;
    check(cudaMallocHost(&pinned, size_t(m) * D * sizeof(float)), "cudaMallocHost");
    struct PinnedFree {
        float* p;
        ~PinnedFree() {
            cudaFreeHost(p);
        }
    } pinnedFree{pinned};

    const uint64_t streamSeed = mixtureStreamSeed(seed);
    for (int64_t r0 = 0; r0 < n; r0 += m) {
        const int rowsNow = int(std::min<int64_t>(m, n - r0));
        const unsigned blocks = unsigned((rowsNow + kThreads - 1) / kThreads);
        componentsKernel<<<blocks, kThreads>>>(
                streamSeed, r0, rowsNow, cumulative.p, C, comp.p, row.p);
        check(cudaGetLastError(), "components kernel");
        size_t bytesNow = sortBytes;
        check(cub::DeviceRadixSort::SortPairs(
                      sortTemp.p, bytesNow, comp.p, compSorted.p, row.p, rowSorted.p, rowsNow, 0,
                      endBit),
              "sort");
        rowsKernel<<<blocks, kThreads, smem>>>(
                streamSeed, r0, rowsNow, d, bytes, means.p, factors.p, compSorted.p, rowSorted.p,
                rows.p);
        check(cudaGetLastError(), "rows kernel");
        const size_t chunkBytes = size_t(rowsNow) * D * sizeof(float);
        check(cudaMemcpy(pinned, rows.p, chunkBytes, cudaMemcpyDeviceToHost), "copy of the rows");
        // Pinned to pageable by the host's threads (one thread copies ~10 GB/s).
        fillRowsInParallel(
                rowsNow, 0,
                [&](int64_t b, int64_t e) {
                    std::memcpy(
                            x.data() + size_t(r0 + b) * D, pinned + size_t(b) * D,
                            size_t(e - b) * D * sizeof(float));
                },
                int64_t(1) << 14);
    }
    return x;
}

} // namespace datasets
} // namespace faiss_ext
