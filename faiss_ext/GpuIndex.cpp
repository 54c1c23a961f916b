#include <faiss_ext/GpuIndex.h>

#include <algorithm>

#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

GpuIndex::GpuIndex(
        GpuResources& resources,
        int d,
        faiss::MetricType metric,
        GpuIndexConfig config)
        : faiss::Index(d, metric), res_(resources), config_(config) {
    FAISS_THROW_IF_NOT_FMT(d > 0, "dimension d=%d must be > 0", d);
    FAISS_THROW_IF_NOT_FMT(
            metric == faiss::METRIC_L2 || metric == faiss::METRIC_INNER_PRODUCT,
            "metric %d is not supported (only METRIC_L2 and METRIC_INNER_PRODUCT)",
            int(metric));
    FAISS_THROW_IF_NOT_FMT(
            config.pageBytes >= (size_t(1) << 20),
            "pageBytes=%zu is below the 1 MiB minimum",
            config.pageBytes);
}

void GpuIndex::checkHostPointer(const void* p, const char* what) {
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        (void)cudaGetLastError(); // plain host memory on old drivers
        return;
    }
    FAISS_THROW_IF_NOT_FMT(
            attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged,
            "%s: expected host memory, got a device pointer",
            what);
}

void GpuIndex::checkSearchParams_(const faiss::SearchParameters* params) const {
    FAISS_THROW_IF_NOT_MSG(
            params == nullptr || params->sel == nullptr,
            "search: IDSelector in SearchParameters is not supported");
}

void GpuIndex::trainImpl_(int64_t, const float*) {}

void GpuIndex::train(int64_t n, const float* x) {
    checkVectorsArg(n, x, "train");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "train");
    checkFinite(n, d, x, "train");
    trainImpl_(n, x);
}

void GpuIndex::add(int64_t n, const float* x) {
    checkVectorsArg(n, x, "add");
    FAISS_THROW_IF_NOT_MSG(is_trained, "add: the index is not trained");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "add");
    checkFinite(n, d, x, "add");
    addImpl_(n, x, nullptr);
}

void GpuIndex::add_with_ids(int64_t n, const float* x, const int64_t* ids) {
    FAISS_THROW_IF_NOT_MSG(
            supportsAddWithIds_(),
            "add_with_ids is not supported by this index (ids are sequential)");
    checkVectorsArg(n, x, "add_with_ids");
    FAISS_THROW_IF_NOT_MSG(ids != nullptr, "add_with_ids: null ids pointer");
    FAISS_THROW_IF_NOT_MSG(is_trained, "add_with_ids: the index is not trained");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "add_with_ids");
    checkHostPointer(ids, "add_with_ids ids");
    checkFinite(n, d, x, "add_with_ids");
    addImpl_(n, x, ids);
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
    checkSearchParams_(params);
    DeviceScope scope(res_.device());
    checkHostPointer(x, "search queries");
    checkHostPointer(distances, "search distances");
    checkHostPointer(labels, "search labels");

    const size_t bytesPerQuery = size_t(d) * sizeof(float) +
            size_t(k) * (sizeof(float) + sizeof(int64_t));
    const int64_t page = std::min<int64_t>(
            n, std::max<int64_t>(1, int64_t(config_.pageBytes / bytesPerQuery)));
    cudaStream_t stream = res_.stream();
    auto xDev = res_.alloc<float>(size_t(page) * d);
    auto dDev = res_.alloc<float>(size_t(page) * k);
    auto iDev = res_.alloc<int64_t>(size_t(page) * k);
    for (int64_t i0 = 0; i0 < n; i0 += page) {
        const int64_t m = std::min(page, n - i0);
        copyToDevice(xDev.data(), x + i0 * d, size_t(m) * d, stream);
        searchImpl_(m, xDev.data(), int(k), dDev.data(), iDev.data(), params);
        copyToHost(distances + i0 * k, dDev.data(), size_t(m) * k, stream);
        copyToHost(labels + i0 * k, iDev.data(), size_t(m) * k, stream);
    }
}

} // namespace faiss_ext
