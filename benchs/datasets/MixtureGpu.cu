// Mixture rows on the GPU (MixtureGpu.h). A chunk of rows: each row's component (the
// first draw of its generator), the rows sorted by component (CUB), then blocks of
// consecutive sorted rows, which share one or two components: the block's normals, then
// each component's mean and factor in shared memory once for the block and a tile of
// rows x values a thread. The rows then go to the host through a pinned buffer.
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

constexpr int kThreads = 128;
/// A thread's tile in the rows kernel: kTileRows rows x kTileValues values; kValueLanes
/// threads share a row group, so a block covers kBlockRows rows.
constexpr int kTileRows = 4;
constexpr int kTileValues = 8;
constexpr int kValueLanes = 16;
constexpr int kBlockRows = kThreads / kValueLanes * kTileRows;
static_assert(kBlockRows <= kThreads, "the component count below takes a thread a row");

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

/// Rows of one chunk over the rows sorted by component, kBlockRows a block: the block's
/// normals drawn in parallel (every row's pairs are counter draws), then for each of the
/// block's components (one, or two where a component's rows end) its mean and factor
/// (transposed: entry (a, b) at b d + a) in shared memory and every thread a tile of
/// kTileRows rows x kTileValues values (value lane v: values v, v + 16, ...), 32
/// independent sums a thread, each added in the host's order (mixtureStep, b = 0 .. a).
/// A row is written by the pass of its own component.
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
    const int zStride = d + 1; // rows of normals one bank apart
    float* factorT = smem;
    float* mean = factorT + size_t(d) * d;
    float* z = mean + d;
    const int t = int(threadIdx.x);
    const int begin = int(blockIdx.x) * kBlockRows;
    const int count = min(kBlockRows, m - begin);
    // Draw 1 of a row chose its component; pair p of its normals is draws 2 + 2p, 3 + 2p.
    const int pairs = (d + 1) / 2;
    for (int e = t; e < count * pairs; e += kThreads) {
        const int r = e / pairs, p = e - r * pairs;
        const uint64_t seed = rowSeed(streamSeed, r0 + sortedRow[begin + r]);
        float c, sn;
        normalPair(rowDraw(seed, 2 + 2 * uint64_t(p)), rowDraw(seed, 3 + 2 * uint64_t(p)), c, sn);
        z[r * zStride + 2 * p] = c;
        if (2 * p + 1 < d) {
            z[r * zStride + 2 * p + 1] = sn;
        }
    }
    const int lane = t % kValueLanes;
    const int firstRow = (t / kValueLanes) * kTileRows;
    for (int done = 0; done < count;) {
        const int c = sortedComponent[begin + done];
        __syncthreads(); // the normals are drawn; the previous component is no longer read
        const float* f = factors + size_t(c) * d * d;
        for (int e = t; e < d * d; e += kThreads) {
            const int a = e / d, b = e - a * d;
            if (b <= a) {
                factorT[size_t(b) * d + a] = f[e];
            }
        }
        for (int e = t; e < d; e += kThreads) {
            mean[e] = means[size_t(c) * d + e];
        }
        __syncthreads();
        for (int a0 = 0; a0 < d; a0 += kValueLanes * kTileValues) {
            float acc[kTileRows][kTileValues];
#pragma unroll
            for (int j = 0; j < kTileValues; ++j) {
                const int a = a0 + lane + kValueLanes * j;
#pragma unroll
                for (int i = 0; i < kTileRows; ++i) {
                    acc[i][j] = a < d ? mean[a] : 0.f;
                }
            }
            const int bEnd = min(d, a0 + kValueLanes * kTileValues);
            for (int b = 0; b < bEnd; ++b) {
                float zb[kTileRows];
#pragma unroll
                for (int i = 0; i < kTileRows; ++i) {
                    zb[i] = z[(firstRow + i) * zStride + b];
                }
#pragma unroll
                for (int j = 0; j < kTileValues; ++j) {
                    const int a = a0 + lane + kValueLanes * j;
                    if (a < d && b <= a) {
                        const float l = factorT[size_t(b) * d + a];
#pragma unroll
                        for (int i = 0; i < kTileRows; ++i) {
                            acc[i][j] = mixtureStep(acc[i][j], l, zb[i]);
                        }
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < kTileRows; ++i) {
                const int r = firstRow + i;
                if (r < count && sortedComponent[begin + r] == c) {
                    float* row = out + size_t(sortedRow[begin + r]) * d;
#pragma unroll
                    for (int j = 0; j < kTileValues; ++j) {
                        const int a = a0 + lane + kValueLanes * j;
                        if (a < d) {
                            row[a] = mixtureFinish(acc[i][j], bytes);
                        }
                    }
                }
            }
        }
        done += __syncthreads_count(t < count && sortedComponent[begin + t] == c);
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
    const size_t smem = (D * D + D + size_t(kBlockRows) * (D + 1)) * sizeof(float);
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
        componentsKernel<<<unsigned((rowsNow + kThreads - 1) / kThreads), kThreads>>>(
                streamSeed, r0, rowsNow, cumulative.p, C, comp.p, row.p);
        check(cudaGetLastError(), "components kernel");
        size_t bytesNow = sortBytes;
        check(cub::DeviceRadixSort::SortPairs(
                      sortTemp.p, bytesNow, comp.p, compSorted.p, row.p, rowSorted.p, rowsNow, 0,
                      endBit),
              "sort");
        rowsKernel<<<unsigned((rowsNow + kBlockRows - 1) / kBlockRows), kThreads, smem>>>(
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
