// Host entry points of the graph build's candidate lists on the GPU (plain C++: no
// device code here): each node's candidates written into one device array of
// contiguous lists (node v: ids[offsets[v] .. offsets[v + 1])), which the prune reads in
// place (impl/BangPruneGpu.h). The host does no per-node work for them.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Hub h of H (H <= n) is node h * n / H: the one rule of the build's hubs, on the host
/// and in the kernels.
constexpr int64_t bangHubNode(int64_t h, int64_t n, int64_t H) {
    return h * n / H;
}

/// The hub that node v is, or -1: only h = ceil(v H / n) can be (consecutive hubs are at
/// least one node apart).
constexpr int64_t bangHubOf(int64_t v, int64_t n, int64_t H) {
    const int64_t h = (v * H + n - 1) / n;
    return h < H && bangHubNode(h, n, H) == v ? h : -1;
}

/// rows[h] = bangHubNode(h, n, H) for h < H (device, H values): the hubs' row numbers,
/// for gathering their vectors.
void bangHubRows(int64_t n, int64_t H, int64_t* rows, cudaStream_t stream);

/// Row chunks of bangCentroid: its scratch is kBangCentroidChunks x d doubles.
constexpr int kBangCentroidChunks = 512;

/// centroid[j] (d floats, device) = the mean of component j over the n >= 1 rows of x (n
/// x d, row-major, device; floats or bytes, the same centroid): each chunk of rows summed
/// in double in row order into partial, then the chunks in order (the same bits every
/// run). The build's medoid is the stored vector nearest it.
void bangCentroid(
        const float* x,
        int64_t n,
        int d,
        double* partial,
        float* centroid,
        cudaStream_t stream);
void bangCentroid(
        const uint8_t* x,
        int64_t n,
        int d,
        double* partial,
        float* centroid,
        cudaStream_t stream);

/// The first graph's candidates: node v gets its K1 nearest nodes (nn[v * K1 ..]), its
/// hubK nearest hubs (toHub[v * hubK ..], hub h being node bangHubNode(h)) and, when v is hub
/// h, hub h's hubHubK nearest hubs (hubToHub[h * hubHubK ..]), in that order, as int32
/// node ids (-1 stays -1). offsets: n + 1 (offsets[v + 1] - offsets[v] = K1 + hubK, plus
/// hubHubK for a hub), arranged by the caller.
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
        cudaStream_t stream);

/// offsets (n + 1) of candidate lists made of a search's expanded parents and `extra`
/// more entries: node v has min(iterations[v], maxVisited) + extra (a refinement pass:
/// its R graph entries; an extension: its nearest new nodes). counts: n scratch values;
/// temp: bangPassOffsetsTempBytes(n) bytes of device memory.
size_t bangPassOffsetsTempBytes(int64_t n);
void bangPassOffsets(
        const int32_t* iterations,
        int64_t n,
        int maxVisited,
        int extra,
        int64_t* counts,
        int64_t* offsets,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream);

/// A refinement pass's candidates: node v gets visited[v * maxVisited ..] (its first
/// min(iterations[v], maxVisited) entries) then its graph row (n x R, -1 kept), at
/// ids[offsets[v] ..] (bangPassOffsets).
void bangFillPassCandidates(
        const int32_t* visited,
        const int32_t* iterations,
        int maxVisited,
        const int32_t* graph,
        int R,
        int64_t n,
        const int64_t* offsets,
        int32_t* ids,
        cudaStream_t stream);

/// An extension's candidates: new node i (node idBase + i) gets visited[i * maxVisited
/// ..] (its first min(iterations[i], maxVisited) entries: nodes of the graph it extends)
/// then its K1 nearest new nodes (nn[i * K1 ..], numbered from 0 among the new ones,
/// written + idBase; -1 stays -1), at ids[offsets[i] ..] (bangPassOffsets, extra K1).
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
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
