// Searching queries whose arrays may lie in host memory through bounded device memory:
// the paging loop of GpuIndex::search and of the k-means assigner (KMeans.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/ResourcesAccess.h>

namespace faiss_ext {

/// The arrays of one search: n x d queries, n x k distances and labels, each in host
/// memory or in device memory of the search's device.
struct SearchArrays {
    const float* x = nullptr;
    float* distances = nullptr;
    int64_t* labels = nullptr;
    bool xOnDevice = false;
    bool distancesOnDevice = false;
    bool labelsOnDevice = false;
};

/// Calls
///   searchPage(m, queriesDevice, distancesDevice, labelsDevice)
/// for pages of m of the n queries (it writes m x k results on res.stream()). A host
/// array goes through a device page (queries copied in, results copied out); a device
/// array is read or written in place. The host arrays' pages take at most pageBytes
/// (at least one query a page); with every array on the device, one page holds all n.
/// Host copies go through the resources' pinned staging (impl/PinnedStaging.h).
template <typename SearchPage>
void searchInPages(
        const GpuResources& res,
        int64_t n,
        int d,
        int64_t k,
        size_t pageBytes,
        const SearchArrays& a,
        SearchPage&& searchPage) {
    const size_t bytesPerQuery = (a.xOnDevice ? 0 : size_t(d) * sizeof(float)) +
            (a.distancesOnDevice ? 0 : size_t(k) * sizeof(float)) +
            (a.labelsOnDevice ? 0 : size_t(k) * sizeof(int64_t));
    const int64_t page = bytesPerQuery == 0
            ? n
            : std::min<int64_t>(n, std::max<int64_t>(1, int64_t(pageBytes / bytesPerQuery)));
    cudaStream_t stream = res.stream();
    PinnedStaging& staging = GpuResourcesAccess::pinnedStaging(res);
    auto xDev = res.alloc<float>(a.xOnDevice ? 0 : size_t(page) * d);
    auto dDev = res.alloc<float>(a.distancesOnDevice ? 0 : size_t(page) * k);
    auto iDev = res.alloc<int64_t>(a.labelsOnDevice ? 0 : size_t(page) * k);
    for (int64_t i0 = 0; i0 < n; i0 += page) {
        const int64_t m = std::min(page, n - i0);
        const float* x = a.x + i0 * d;
        if (!a.xOnDevice) {
            staging.toDevice(xDev.data(), x, size_t(m) * d * sizeof(float), stream);
            x = xDev.data();
        }
        float* dOut = a.distancesOnDevice ? a.distances + i0 * k : dDev.data();
        int64_t* iOut = a.labelsOnDevice ? a.labels + i0 * k : iDev.data();
        searchPage(m, x, dOut, iOut);
        const size_t dBytes = size_t(m) * k * sizeof(float);
        const size_t iBytes = size_t(m) * k * sizeof(int64_t);
        if (!a.distancesOnDevice && !a.labelsOnDevice) {
            staging.toHost2(
                    a.distances + i0 * k, dOut, dBytes, a.labels + i0 * k, iOut, iBytes, stream);
        } else if (!a.distancesOnDevice) {
            staging.toHost(a.distances + i0 * k, dOut, dBytes, stream);
        } else if (!a.labelsOnDevice) {
            staging.toHost(a.labels + i0 * k, iOut, iBytes, stream);
        }
    }
}

} // namespace faiss_ext
