// Searching host queries through bounded device memory: the paging loop of
// GpuIndex::search and of the k-means assigner (KMeans.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

/// Copies n host queries (n x d) to the device in pages whose queries and results take
/// at most pageBytes (at least one query a page), calls
///   searchPage(m, queriesDevice, distancesDevice, labelsDevice)
/// for each page of m queries (it writes m x k results on res.stream()), and copies
/// the results to distances / labels (n x k, host).
template <typename SearchPage>
void searchHostInPages(
        const GpuResources& res,
        int64_t n,
        int d,
        int64_t k,
        size_t pageBytes,
        const float* x,
        float* distances,
        int64_t* labels,
        SearchPage&& searchPage) {
    const size_t bytesPerQuery =
            size_t(d) * sizeof(float) + size_t(k) * (sizeof(float) + sizeof(int64_t));
    const int64_t page =
            std::min<int64_t>(n, std::max<int64_t>(1, int64_t(pageBytes / bytesPerQuery)));
    cudaStream_t stream = res.stream();
    auto xDev = res.alloc<float>(size_t(page) * d);
    auto dDev = res.alloc<float>(size_t(page) * k);
    auto iDev = res.alloc<int64_t>(size_t(page) * k);
    for (int64_t i0 = 0; i0 < n; i0 += page) {
        const int64_t m = std::min(page, n - i0);
        copyToDevice(xDev.data(), x + i0 * d, size_t(m) * d, stream);
        searchPage(m, xDev.data(), dDev.data(), iDev.data());
        copyToHost(distances + i0 * k, dDev.data(), size_t(m) * k, stream);
        copyToHost(labels + i0 * k, iDev.data(), size_t(m) * k, stream);
    }
}

} // namespace faiss_ext
