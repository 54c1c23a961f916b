// Host entry points of the nearest-hub search that picks where each GpuIndexBang walk
// starts (BangEntry::kNearestHub; plain C++: no device code here). A query's entry is
// one 64-bit key: the float bits of its squared distance to the hub (>= 0, so the bits
// order as the values) above the hub number, so that the smaller key is the nearer hub,
// ties to the lower number; kBangNoEntry when no hub is at a finite distance (a query
// with a NaN or an infinity), whose walk starts at the graph's entry point.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

constexpr uint64_t kBangNoEntry = ~uint64_t(0);

/// The hub of an entry key, or -1 for kBangNoEntry.
constexpr int64_t bangEntryHub(uint64_t key) {
    return key == kBangNoEntry ? -1 : int64_t(key & 0xffffffffu);
}

/// keys[q] (nq, device) = query q's nearest of the H hubs (hub h: row h of the H x d
/// row-major `hubRows`) by squared L2 in the direct form, every hub's distance summed
/// in the same order. One launch over (query, 64 hubs) blocks: for
/// small batches, where the flat search's fixed cost would dominate. H < 2^31.
void bangNearestHubsDirect(
        const float* hubRows,
        int d,
        int64_t H,
        const float* queries,
        int64_t nq,
        uint64_t* keys,
        cudaStream_t stream);

/// keys[q] from a k = 1 flat search's result (distance, hub; hub -1: none).
void bangEntryKeys(
        const float* distances,
        const int64_t* hubs,
        int64_t nq,
        uint64_t* keys,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
