// Searching queries whose arrays may lie in host memory through bounded device memory:
// the paging loop of GpuIndex::search and of the k-means assigner (KMeans.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/PinnedStaging.h>
#include <faiss_ext/utils/DeviceBuffer.h>

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

/// Host arrays of at least twice this many queries are searched in pipelined pages of
/// at least this many...
constexpr int64_t kPipelineMinPageQueries = 2048;
/// ...and about this many pages (fewer where pageBytes already cuts more).
constexpr int64_t kPipelinePages = 4;

/// Queries a page of searchInPages holds: what pageBytes allows of the host arrays' bytes
/// (all n when every array is on the device); for host arrays of many queries, at most
/// about n / kPipelinePages, so that the copies have pages to overlap.
int64_t searchPageQueries(int64_t n, int d, int64_t k, size_t pageBytes, const SearchArrays& a);

/// The copy stream and events of searchInPages' pipelined loop (two page slots): the
/// destructor waits for the copies still queued, so that none outlives the pages.
class PagePipeline {
   public:
    /// Makes the copy stream on res's device.
    explicit PagePipeline(const GpuResources& res);
    ~PagePipeline();
    PagePipeline(const PagePipeline&) = delete;
    PagePipeline& operator=(const PagePipeline&) = delete;

    cudaStream_t copyStream() const {
        return copy_;
    }
    /// The search of slot's page (on the resources' stream) waits for its queries,
    /// copied in so far on the copy stream.
    void searchAfterQueriesIn(int slot);
    /// The copies queued next (the slot's results out) wait for the slot's search, queued
    /// so far on the resources' stream.
    void copyAfterSearch(int slot);

   private:
    /// Waits for the copy stream, then destroys what was made.
    void release();

    cudaStream_t search_;
    cudaStream_t copy_ = nullptr;
    cudaEvent_t queriesIn_[2] = {nullptr, nullptr};
    cudaEvent_t searched_[2] = {nullptr, nullptr};
};

/// searchInPages' loop for host arrays over several pages: the pages take two device
/// slots in turn. While page p is searched on res.stream(), page p + 1's queries are
/// copied in (host copy into pinned memory, DMA on the copy stream) and its search
/// queued, then page p's results are copied out as soon as its search ends.
template <typename SearchPage>
void searchHostPagesPipelined(
        const GpuResources& res,
        int64_t n,
        int d,
        int64_t k,
        int64_t page,
        const SearchArrays& a,
        SearchPage&& searchPage) {
    PinnedStaging& staging = res.pinnedStaging();
    DeviceBuffer<float> xDev[2] = {
            res.alloc<float>(size_t(page) * d), res.alloc<float>(size_t(page) * d)};
    DeviceBuffer<float> dDev[2] = {
            res.alloc<float>(size_t(page) * k), res.alloc<float>(size_t(page) * k)};
    DeviceBuffer<int64_t> iDev[2] = {
            res.alloc<int64_t>(size_t(page) * k), res.alloc<int64_t>(size_t(page) * k)};
    // Declared after the slots: on an exception its destructor waits for the copies
    // before the slots are released.
    PagePipeline pipe(res);
    const int64_t pages = (n + page - 1) / page;
    auto rows = [&](int64_t p) { return std::min(page, n - p * page); };
    // Page p's queries in and its search queued; slot p % 2 is free (page p - 2's
    // results were copied out before this is called).
    auto start = [&](int64_t p) {
        const int slot = int(p % 2);
        const int64_t m = rows(p);
        staging.toDevice(
                xDev[slot].data(), a.x + p * page * d, size_t(m) * d * sizeof(float),
                pipe.copyStream());
        pipe.searchAfterQueriesIn(slot);
        searchPage(m, xDev[slot].data(), dDev[slot].data(), iDev[slot].data());
    };
    start(0);
    for (int64_t p = 0; p < pages; ++p) {
        const int slot = int(p % 2);
        if (p + 1 < pages) {
            start(p + 1);
        }
        pipe.copyAfterSearch(slot);
        const int64_t i0 = p * page;
        const size_t m = size_t(rows(p));
        staging.toHost2(
                a.distances + i0 * k, dDev[slot].data(), m * k * sizeof(float), a.labels + i0 * k,
                iDev[slot].data(), m * k * sizeof(int64_t), pipe.copyStream());
    }
}

/// Calls
///   searchPage(m, queriesDevice, distancesDevice, labelsDevice)
/// for pages of m of the n queries (it writes m x k results on res.stream()). A host
/// array goes through a device page (queries copied in, results copied out); a device
/// array is read or written in place. The host arrays' pages take at most pageBytes
/// (at least one query a page; searchPageQueries); with every array on the device, one
/// page holds all n. Host copies go through the resources' pinned staging
/// (impl/PinnedStaging.h); where all three arrays are on the host and take several
/// pages, the copies overlap the searches (searchHostPagesPipelined).
template <typename SearchPage>
void searchInPages(
        const GpuResources& res,
        int64_t n,
        int d,
        int64_t k,
        size_t pageBytes,
        const SearchArrays& a,
        SearchPage&& searchPage) {
    const int64_t page = searchPageQueries(n, d, k, pageBytes, a);
    if (page < n && !a.xOnDevice && !a.distancesOnDevice && !a.labelsOnDevice) {
        searchHostPagesPipelined(res, n, d, k, page, a, searchPage);
        return;
    }
    cudaStream_t stream = res.stream();
    auto xDev = res.alloc<float>(a.xOnDevice ? 0 : size_t(page) * d);
    auto dDev = res.alloc<float>(a.distancesOnDevice ? 0 : size_t(page) * k);
    auto iDev = res.alloc<int64_t>(a.labelsOnDevice ? 0 : size_t(page) * k);
    for (int64_t i0 = 0; i0 < n; i0 += page) {
        const int64_t m = std::min(page, n - i0);
        const float* x = a.x + i0 * d;
        if (!a.xOnDevice) {
            res.pinnedStaging().toDevice(xDev.data(), x, size_t(m) * d * sizeof(float), stream);
            x = xDev.data();
        }
        float* dOut = a.distancesOnDevice ? a.distances + i0 * k : dDev.data();
        int64_t* iOut = a.labelsOnDevice ? a.labels + i0 * k : iDev.data();
        searchPage(m, x, dOut, iOut);
        const size_t dBytes = size_t(m) * k * sizeof(float);
        const size_t iBytes = size_t(m) * k * sizeof(int64_t);
        if (!a.distancesOnDevice && !a.labelsOnDevice) {
            res.pinnedStaging().toHost2(
                    a.distances + i0 * k, dOut, dBytes, a.labels + i0 * k, iOut, iBytes, stream);
        } else if (!a.distancesOnDevice) {
            res.pinnedStaging().toHost(a.distances + i0 * k, dOut, dBytes, stream);
        } else if (!a.labelsOnDevice) {
            res.pinnedStaging().toHost(a.labels + i0 * k, iOut, iBytes, stream);
        }
    }
}

} // namespace faiss_ext
