#include <faiss_ext/GpuIndex.h>

#include <cmath>

#include <faiss/impl/AuxIndexStructures.h>
#include <vector>

#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/impl/DeviceFinite.h>
#include <faiss_ext/impl/HostPaging.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/NonFiniteQueries.h>
#include <faiss_ext/impl/ParallelCopy.h>
#include <faiss_ext/impl/SearchGraphs.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

GpuIndex::GpuIndex(GpuResources& resources, int d, faiss::MetricType metric, GpuIndexConfig config)
        : faiss::Index(d, metric),
          res_(resources),
          config_(config),
          filterCache_(std::make_unique<IdFilterCache>(resources)),
          graphs_(std::make_unique<SearchGraphs>()) {
    FAISS_THROW_IF_NOT_FMT(d > 0, "dimension d=%d must be > 0", d);
    FAISS_THROW_IF_NOT_FMT(
            metric == faiss::METRIC_L2 || metric == faiss::METRIC_INNER_PRODUCT,
            "metric %d is not supported (only METRIC_L2 and METRIC_INNER_PRODUCT)", int(metric));
    FAISS_THROW_IF_NOT_FMT(
            config.pageBytes >= (size_t(1) << 20), "pageBytes=%zu is below the 1 MiB minimum",
            config.pageBytes);
}

GpuIndex::~GpuIndex() = default;

void GpuIndex::contentsChanged() {
    filterCache_->invalidate();
    // Graphs of the old contents would never be replayed: return their memory.
    graphs_->clear();
    ++contentsVersion_;
}

size_t GpuIndex::searchGraphCount() const {
    return graphs_->graphCount();
}

size_t GpuIndex::searchGraphBytes() const {
    return graphs_->heldBytes();
}

GpuIndex::SearchGraphShape GpuIndex::searchGraphShape_(int64_t, int, const faiss::SearchParameters*)
        const {
    return {};
}

MemorySpace GpuIndex::memorySpace(const void* p, const char* what) const {
    return memorySpaceOf(p, res_.device(), what);
}

void GpuIndex::checkHostPointer(const void* p, const char* what) const {
    FAISS_THROW_IF_NOT_FMT(
            memorySpace(p, what) == MemorySpace::kHost,
            "%s: expected host memory, got a device pointer", what);
}

void GpuIndex::checkVectorsFinite_(int64_t n, const float* x, bool onDevice, const char* what)
        const {
    if (onDevice) {
        checkFiniteOnDevice(res_, n, d, x, what);
    } else {
        checkFinite(n, d, x, what);
    }
}

void GpuIndex::trainImpl_(int64_t, const float*) {}

void GpuIndex::train(int64_t n, const float* x) {
    checkVectorsArg(n, x, "train");
    DeviceScope scope(res_.device());
    // Training runs on the host (faiss::Clustering, as FAISS's GPU indexes do): device
    // vectors are copied there first.
    std::vector<float> host;
    if (memorySpace(x, "train") == MemorySpace::kDevice) {
        host = copyToHostVector(x, size_t(n) * d, res_.stream());
        x = host.data();
    }
    checkFinite(n, d, x, "train");
    trainImpl_(n, x);
}

void GpuIndex::add(int64_t n, const float* x) {
    checkVectorsArg(n, x, "add");
    FAISS_THROW_IF_NOT_MSG(is_trained, "add: the index is not trained");
    DeviceScope scope(res_.device());
    checkVectorsFinite_(n, x, memorySpace(x, "add") == MemorySpace::kDevice, "add");
    addImpl_(n, x, nullptr);
    contentsChanged();
}

void GpuIndex::add_with_ids(int64_t n, const float* x, const int64_t* ids) {
    FAISS_THROW_IF_NOT_MSG(
            supportsAddWithIds_(),
            "add_with_ids is not supported by this index (ids are sequential)");
    checkVectorsArg(n, x, "add_with_ids");
    FAISS_THROW_IF_NOT_MSG(ids != nullptr, "add_with_ids: null ids pointer");
    FAISS_THROW_IF_NOT_MSG(is_trained, "add_with_ids: the index is not trained");
    DeviceScope scope(res_.device());
    checkVectorsFinite_(
            n, x, memorySpace(x, "add_with_ids") == MemorySpace::kDevice, "add_with_ids");
    // The ids are checked and bookkept on the host: device ids are copied there (8
    // bytes a vector; the vectors stay on the device).
    std::vector<int64_t> hostIds;
    if (memorySpace(ids, "add_with_ids ids") == MemorySpace::kDevice) {
        hostIds = copyToHostVector(ids, size_t(n), res_.stream());
        ids = hostIds.data();
    }
    addImpl_(n, x, ids);
    contentsChanged();
}

void GpuIndex::search(
        int64_t n,
        const float* x,
        int64_t k,
        float* distances,
        int64_t* labels,
        const faiss::SearchParameters* params) const {
    checkSearchArgs(n, x, k, distances, labels);
    FAISS_THROW_IF_NOT_MSG(is_trained, "search: the index is not trained");
    DeviceScope scope(res_.device());
    SearchArrays a;
    a.x = x;
    a.distances = distances;
    a.labels = labels;
    a.xOnDevice = memorySpace(x, "search queries") == MemorySpace::kDevice;
    a.distancesOnDevice = memorySpace(distances, "search distances") == MemorySpace::kDevice;
    a.labelsOnDevice = memorySpace(labels, "search labels") == MemorySpace::kDevice;
    if (!a.xOnDevice) {
        // The helpers wake while the search is planned, before the queries' copy.
        expectParallelCopy(size_t(n) * d * sizeof(float));
    }
    // A small search of host arrays may run from a graph that holds the copies too;
    // until its shape is held it runs kernel by kernel (no graph of device arrays).
    const bool hostArrays = !a.xOnDevice && !a.distancesOnDevice && !a.labelsOnDevice;
    const SearchGraphShape shape = hostArrays && useSearchGraphs
            ? searchGraphShape_(n, int(k), params)
            : SearchGraphShape();
    const std::vector<int64_t>& key = shape.key;
    if (!key.empty() &&
        graphs_->runHost(
                res_, key, shape.tempBytes, n, d, int(k), x, distances, labels,
                [&](const float* xDev, float* dDev, int64_t* iDev) {
                    searchKernels_(n, xDev, int(k), dDev, iDev, params);
                })) {
        return;
    }
    searchInPages(
            res_, n, d, k, config_.pageBytes, a,
            [&](int64_t m, const float* xDev, float* dDev, int64_t* iDev) {
                if (key.empty()) {
                    searchDevice(m, xDev, k, dDev, iDev, params);
                } else {
                    searchKernels_(m, xDev, int(k), dDev, iDev, params);
                }
            });
    // Results written in place on the device are complete when search returns, as
    // those copied to the host are.
    if (a.distancesOnDevice || a.labelsOnDevice) {
        res_.synchronize();
    }
}

void GpuIndex::searchDevice(
        int64_t n,
        const float* x,
        int64_t k,
        float* distances,
        int64_t* labels,
        const faiss::SearchParameters* params) const {
    FAISS_THROW_IF_NOT_FMT(n >= 0, "search: n=%lld, must be >= 0", (long long)n);
    FAISS_THROW_IF_NOT_FMT(
            k >= 1 && k <= kMaxSearchK, "search: k=%lld is outside [1, %lld]", (long long)k,
            (long long)kMaxSearchK);
    FAISS_THROW_IF_NOT_MSG(is_trained, "search: the index is not trained");
    if (n == 0) {
        return;
    }
    FAISS_THROW_IF_NOT_MSG(
            x != nullptr && distances != nullptr && labels != nullptr,
            "searchDevice: null query or output pointer");
    DeviceScope scope(res_.device());
    const SearchGraphShape shape =
            useSearchGraphs ? searchGraphShape_(n, int(k), params) : SearchGraphShape();
    if (shape.key.empty()) {
        searchKernels_(n, x, int(k), distances, labels, params);
        return;
    }
    graphs_->run(
            res_, shape.key, shape.tempBytes, n, d, int(k), x, distances, labels,
            [&](const float* xDev, float* dDev, int64_t* iDev) {
                searchKernels_(n, xDev, int(k), dDev, iDev, params);
            });
}

void GpuIndex::searchKernels_(
        int64_t n,
        const float* x,
        int k,
        float* distances,
        int64_t* labels,
        const faiss::SearchParameters* params) const {
    searchImpl_(n, x, k, distances, labels, params);
    // The same answer for a query with a NaN or an infinity, whatever the index did.
    clearNonFiniteQueryResults(res_, metric_type, n, d, k, x, distances, labels);
}

void GpuIndex::range_search(
        int64_t n,
        const float* x,
        float radius,
        faiss::RangeSearchResult* result,
        const faiss::SearchParameters* params) const {
    FAISS_THROW_IF_NOT_FMT(n >= 0, "range_search: n=%lld, must be >= 0", (long long)n);
    FAISS_THROW_IF_NOT_MSG(result != nullptr, "range_search: null result");
    FAISS_THROW_IF_NOT_FMT(
            result->nq == size_t(n), "range_search: the result is for %zu queries, n=%lld",
            result->nq, (long long)n);
    FAISS_THROW_IF_NOT_MSG(!std::isnan(radius), "range_search: radius is NaN");
    FAISS_THROW_IF_NOT_MSG(is_trained, "range_search: the index is not trained");
    if (n == 0) {
        return;
    }
    FAISS_THROW_IF_NOT_MSG(x != nullptr, "range_search: null queries");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "range_search queries");
    rangeSearchImpl_(n, x, radius, result, params);
}

void GpuIndex::rangeSearchImpl_(
        int64_t,
        const float*,
        float,
        faiss::RangeSearchResult*,
        const faiss::SearchParameters*) const {
    FAISS_THROW_MSG("range_search is not supported by this index");
}

size_t GpuIndex::remove_ids(const faiss::IDSelector& sel) {
    DeviceScope scope(res_.device());
    const size_t removed = removeIdsImpl_(sel);
    if (removed > 0) {
        contentsChanged();
    }
    return removed;
}

size_t GpuIndex::removeIdsImpl_(const faiss::IDSelector&) {
    FAISS_THROW_MSG("remove_ids is not supported by this index");
}

} // namespace faiss_ext
