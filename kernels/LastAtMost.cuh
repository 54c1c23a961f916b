// Binary search over ascending offsets, shared by the kernels that map a flat work
// index back to its owner (a probe of a query, a list of a batch).
#pragma once

#include <cstdint>

namespace faiss_ext {
namespace kernels {

/// The last i in [0, n) with start[i] <= value, for ascending start with start[0] <=
/// value. Runs of equal offsets (owners with no work) resolve to their last entry,
/// which is the one that owns what follows.
__device__ inline int lastAtMost(const int* start, int n, int64_t value) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= value) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

} // namespace kernels
} // namespace faiss_ext
