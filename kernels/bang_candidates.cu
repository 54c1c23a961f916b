// The graph build's candidate lists (BangCandidates.h): one warp per node copies its
// sources into its slot range, so the writes of a list are contiguous.
#include <cub/device/device_scan.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "BangCandidates.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

int64_t warpBlocks(int64_t n) {
    return (n + kWarps - 1) / kWarps;
}

__global__ void fillFirstKernel(
        const int32_t* nn,
        int K1,
        const int64_t* toHub,
        int hubK,
        const int64_t* hubToHub,
        int hubHubK,
        int64_t n,
        int64_t H,
        const int64_t* offsets,
        int32_t* ids) {
    const int64_t v = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (v >= n) {
        return;
    }
    int32_t* out = ids + offsets[v];
    for (int j = lane; j < K1; j += 32) {
        out[j] = nn[v * K1 + j];
    }
    out += K1;
    for (int j = lane; j < hubK; j += 32) {
        const int64_t h = toHub[v * hubK + j];
        out[j] = h >= 0 ? int32_t(bangHubNode(h, n, H)) : -1;
    }
    out += hubK;
    const int64_t h = bangHubOf(v, n, H);
    if (h >= 0) {
        for (int j = lane; j < hubHubK; j += 32) {
            const int64_t o = hubToHub[h * hubHubK + j];
            out[j] = o >= 0 ? int32_t(bangHubNode(o, n, H)) : -1;
        }
    }
}

__global__ void hubRowsKernel(int64_t n, int64_t H, int64_t* rows) {
    const int64_t h = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (h < H) {
        rows[h] = bangHubNode(h, n, H);
    }
}

// Block c sums rows [c n / chunks, (c + 1) n / chunks), a thread per component.
template <typename T>
__global__ void centroidChunksKernel(const T* x, int64_t n, int d, double* partial) {
    const int64_t c = blockIdx.x;
    const int64_t v0 = c * n / kBangCentroidChunks, v1 = (c + 1) * n / kBangCentroidChunks;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        double s = 0;
        for (int64_t v = v0; v < v1; ++v) {
            s += double(x[v * d + j]);
        }
        partial[c * d + j] = s;
    }
}

__global__ void centroidKernel(const double* partial, int64_t n, int d, float* centroid) {
    const int j = int(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j < d) {
        double s = 0;
        for (int c = 0; c < kBangCentroidChunks; ++c) {
            s += partial[int64_t(c) * d + j];
        }
        centroid[j] = float(s / double(n));
    }
}

__global__ void passCountsKernel(
        const int32_t* iterations,
        int64_t n,
        int maxVisited,
        int extra,
        int64_t* counts) {
    const int64_t v = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (v < n) {
        counts[v] = min(iterations[v], maxVisited) + extra;
    }
}

/// The entries after a node's parents: its graph row (a refinement pass) ...
struct GraphRowTail {
    const int32_t* rows; ///< n x width
    __device__ int32_t operator()(int64_t v, int j, int width) const {
        return rows[v * width + j];
    }
};

/// ... or its nearest new nodes, numbered among the new ones (an extension).
struct NewNodeTail {
    const int32_t* nn; ///< m x width, -1 where missing
    int64_t idBase;    ///< the first new node's id
    __device__ int32_t operator()(int64_t v, int j, int width) const {
        const int32_t u = nn[v * width + j];
        return u >= 0 ? int32_t(idBase + u) : -1;
    }
};

/// Node v's list: its first min(iterations[v], maxVisited) parents, then width entries
/// of `tail`.
template <typename Tail>
__global__ void fillParentsKernel(
        const int32_t* visited,
        const int32_t* iterations,
        int maxVisited,
        Tail tail,
        int width,
        int64_t n,
        const int64_t* offsets,
        int32_t* ids) {
    const int64_t v = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (v >= n) {
        return;
    }
    int32_t* out = ids + offsets[v];
    const int parents = min(iterations[v], maxVisited);
    for (int j = lane; j < parents; j += 32) {
        out[j] = visited[v * maxVisited + j];
    }
    out += parents;
    for (int j = lane; j < width; j += 32) {
        out[j] = tail(v, j, width);
    }
}

} // namespace

void bangFillFirstCandidates(
        const int32_t* nn,
        int K1,
        const int64_t* toHub,
        int hubK,
        const int64_t* hubToHub,
        int hubHubK,
        int64_t n,
        int64_t H,
        const int64_t* offsets,
        int32_t* ids,
        cudaStream_t stream) {
    fillFirstKernel<<<unsigned(warpBlocks(n)), kThreads, 0, stream>>>(
            nn, K1, toHub, hubK, hubToHub, hubHubK, n, H, offsets, ids);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void bangHubRows(int64_t n, int64_t H, int64_t* rows, cudaStream_t stream) {
    if (H > 0) {
        hubRowsKernel<<<unsigned((H + kThreads - 1) / kThreads), kThreads, 0, stream>>>(n, H, rows);
        FAISS_EXT_CUDA_CHECK(cudaGetLastError());
    }
}

namespace {

template <typename T>
void centroidOf(
        const T* x,
        int64_t n,
        int d,
        double* partial,
        float* centroid,
        cudaStream_t stream) {
    FAISS_ASSERT(n >= 1 && d >= 1);
    centroidChunksKernel<<<kBangCentroidChunks, kThreads, 0, stream>>>(x, n, d, partial);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
    centroidKernel<<<unsigned((d + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            partial, n, d, centroid);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void bangCentroid(
        const float* x,
        int64_t n,
        int d,
        double* partial,
        float* centroid,
        cudaStream_t stream) {
    centroidOf(x, n, d, partial, centroid, stream);
}

void bangCentroid(
        const uint8_t* x,
        int64_t n,
        int d,
        double* partial,
        float* centroid,
        cudaStream_t stream) {
    centroidOf(x, n, d, partial, centroid, stream);
}

size_t bangPassOffsetsTempBytes(int64_t n) {
    size_t bytes = 0;
    FAISS_EXT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(
            nullptr, bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
            n));
    return bytes;
}

void bangPassOffsets(
        const int32_t* iterations,
        int64_t n,
        int maxVisited,
        int extra,
        int64_t* counts,
        int64_t* offsets,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream) {
    passCountsKernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            iterations, n, maxVisited, extra, counts);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(offsets, 0, sizeof(int64_t), stream));
    FAISS_EXT_CUDA_CHECK(
            cub::DeviceScan::InclusiveSum(temp, tempBytes, counts, offsets + 1, n, stream));
}

void bangFillPassCandidates(
        const int32_t* visited,
        const int32_t* iterations,
        int maxVisited,
        const int32_t* graph,
        int R,
        int64_t n,
        const int64_t* offsets,
        int32_t* ids,
        cudaStream_t stream) {
    fillParentsKernel<<<unsigned(warpBlocks(n)), kThreads, 0, stream>>>(
            visited, iterations, maxVisited, GraphRowTail{graph}, R, n, offsets, ids);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

void bangFillExtendCandidates(
        const int32_t* visited,
        const int32_t* iterations,
        int maxVisited,
        const int32_t* nn,
        int K1,
        int64_t idBase,
        int64_t m,
        const int64_t* offsets,
        int32_t* ids,
        cudaStream_t stream) {
    fillParentsKernel<<<unsigned(warpBlocks(m)), kThreads, 0, stream>>>(
            visited, iterations, maxVisited, NewNodeTail{nn, idBase}, K1, m, offsets, ids);
    FAISS_EXT_CUDA_CHECK(cudaGetLastError());
}

} // namespace kernels
} // namespace faiss_ext
