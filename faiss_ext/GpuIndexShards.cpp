#include <faiss_ext/GpuIndexShards.h>

#include <faiss/impl/FaissAssert.h>

#include <limits>

namespace faiss_ext {

GpuIndexShards::GpuIndexShards(const GpuPartsConfig& parts, const GpuPartFactory& make)
        : GpuPartResources(parts), faiss::IndexShards(parts.threaded, true) {
    own_fields = true;
    addParts_(*this, make);
    successive_ids = !shard(0).acceptsIds();
    syncWithSubIndexes();
}

GpuIndexShards::~GpuIndexShards() = default;

void GpuIndexShards::train(int64_t n, const float* x) {
    trainParts_(*this, n, x);
    syncWithSubIndexes();
}

void GpuIndexShards::add(int64_t n, const float* x) {
    checkAdd_(*this, n, x, nullptr, "add");
    // faiss::IndexShards::add forwards to the virtual add_with_ids with null ids,
    // which this class refuses; call the base's version directly.
    faiss::IndexShards::add_with_ids(n, x, nullptr);
}

void GpuIndexShards::add_with_ids(int64_t n, const float* x, const int64_t* ids) {
    FAISS_THROW_IF_NOT_MSG(
            !successive_ids,
            "add_with_ids is not supported by these shards (their ids are sequential)");
    FAISS_THROW_IF_NOT_MSG(ids != nullptr, "add_with_ids: null ids pointer");
    checkAdd_(*this, n, x, ids, "add_with_ids");
    faiss::IndexShards::add_with_ids(n, x, ids);
}

void GpuIndexShards::search(
        int64_t n,
        const float* x,
        int64_t k,
        float* distances,
        int64_t* labels,
        const faiss::SearchParameters* params) const {
    checkSearch_(*this, n, x, k, distances, labels);
    faiss::IndexShards::search(n, x, k, distances, labels, params);
    // FAISS's merge fills a missing result with the heap's neutral value (+-FLT_MAX);
    // one faiss_ext index reports +inf (L2) or -inf (inner product). Keep that rule.
    const float missing = metric_type == faiss::METRIC_INNER_PRODUCT
            ? -std::numeric_limits<float>::infinity()
            : std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n * k; ++i) {
        if (labels[i] < 0) {
            distances[i] = missing;
        }
    }
}

void GpuIndexShards::reset() {
    faiss::IndexShards::reset();
    syncWithSubIndexes();
}

} // namespace faiss_ext
