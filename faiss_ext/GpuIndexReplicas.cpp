#include <faiss_ext/GpuIndexReplicas.h>

#include <faiss/impl/FaissAssert.h>

namespace faiss_ext {

GpuIndexReplicas::GpuIndexReplicas(const GpuPartsConfig& parts, const GpuPartFactory& make)
        : GpuPartResources(parts), faiss::IndexReplicas(parts.threaded) {
    own_fields = true;
    addParts_(*this, make);
    syncWithSubIndexes();
}

GpuIndexReplicas::~GpuIndexReplicas() = default;

void GpuIndexReplicas::train(int64_t n, const float* x) {
    trainParts_(*this, n, x);
    syncWithSubIndexes();
}

void GpuIndexReplicas::add(int64_t n, const float* x) {
    checkAdd_(*this, n, x, nullptr, "add");
    faiss::IndexReplicas::add(n, x);
    syncWithSubIndexes();
}

void GpuIndexReplicas::add_with_ids(int64_t n, const float* x, const int64_t* ids) {
    FAISS_THROW_IF_NOT_MSG(
            replica(0).acceptsIds(),
            "add_with_ids is not supported by these replicas (their ids are sequential)");
    FAISS_THROW_IF_NOT_MSG(ids != nullptr, "add_with_ids: null ids pointer");
    checkAdd_(*this, n, x, ids, "add_with_ids");
    runOnIndex([n, x, ids](int, faiss::Index* part) { part->add_with_ids(n, x, ids); });
    syncWithSubIndexes();
}

void GpuIndexReplicas::search(
        int64_t n,
        const float* x,
        int64_t k,
        float* distances,
        int64_t* labels,
        const faiss::SearchParameters* params) const {
    checkSearch_(*this, n, x, k, distances, labels);
    faiss::IndexReplicas::search(n, x, k, distances, labels, params);
}

void GpuIndexReplicas::reset() {
    faiss::IndexReplicas::reset();
    syncWithSubIndexes();
}

} // namespace faiss_ext
