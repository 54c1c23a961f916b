#include <faiss_ext/GpuIndexParts.h>

#include <typeinfo>

#include <faiss/IndexFlat.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/utils/MemorySpace.h>

namespace faiss_ext {

void checkPartsConfig(const GpuPartsConfig& config, int deviceCount) {
    FAISS_THROW_IF_NOT_MSG(!config.devices.empty(), "GpuPartsConfig: no devices (one per part)");
    for (size_t i = 0; i < config.devices.size(); ++i) {
        const int device = config.devices[i];
        FAISS_THROW_IF_NOT_FMT(
                device >= 0 && device < deviceCount,
                "GpuPartsConfig: part %zu on CUDA device %d, which does not exist (%d "
                "device(s) found)",
                i, device, deviceCount);
    }
}

GpuPartResources::GpuPartResources(const GpuPartsConfig& config) : config_(config) {
    checkPartsConfig(config, GpuResources::deviceCount());
    for (int device : config.devices) {
        GpuResourcesConfig rc;
        rc.device = device;
        rc.tempMemoryBytes = config.tempMemoryBytes;
        resources_.push_back(std::make_unique<GpuResources>(rc));
    }
}

GpuPartResources::~GpuPartResources() = default;

GpuResources& GpuPartResources::partResources(int part) const {
    FAISS_THROW_IF_NOT_FMT(
            part >= 0 && size_t(part) < resources_.size(), "part %d is outside [0, %zu)", part,
            resources_.size());
    return *resources_[size_t(part)];
}

void GpuPartResources::addParts_(Wrapper& wrapper, const GpuPartFactory& make) const {
    FAISS_ASSERT(wrapper.own_fields && wrapper.count() == 0);
    for (int i = 0; size_t(i) < resources_.size(); ++i) {
        std::unique_ptr<GpuIndex> part = make(*resources_[size_t(i)], i);
        FAISS_THROW_IF_NOT_FMT(part != nullptr, "part %d: the factory made no index", i);
        if (i > 0) {
            const GpuIndex& first = part_(wrapper, 0);
            FAISS_THROW_IF_NOT_FMT(
                    typeid(*part) == typeid(first), "part %d: a %s, part 0 a %s", i,
                    typeid(*part).name(), typeid(first).name());
        }
        wrapper.addIndex(part.get()); // checks d and the metric
        part.release();               // owned by the wrapper from here on
    }
    wrapper.metric_type = part_(wrapper, 0).metric_type;
}

GpuIndex& GpuPartResources::part_(const Wrapper& wrapper, int part) {
    FAISS_THROW_IF_NOT_FMT(
            part >= 0 && part < wrapper.count(), "part %d is outside [0, %d)", part,
            wrapper.count());
    auto* index = dynamic_cast<GpuIndex*>(const_cast<faiss::Index*>(wrapper.at(part)));
    FAISS_ASSERT(index != nullptr);
    return *index;
}

void GpuPartResources::checkHost_(const void* p, const char* what) const {
    FAISS_THROW_IF_NOT_FMT(
            memorySpaceOf(p, config_.devices[0], what) == MemorySpace::kHost,
            "%s: device memory; sharded and replicated indexes take host arrays", what);
}

void GpuPartResources::checkAdd_(
        const Wrapper& wrapper,
        int64_t n,
        const float* x,
        const int64_t* ids,
        const char* what) const {
    checkVectorsArg(n, x, what);
    checkHost_(x, what);
    FAISS_THROW_IF_NOT_FMT(part_(wrapper, 0).is_trained, "%s: the index is not trained", what);
    checkFinite(n, wrapper.d, x, what);
    if (ids != nullptr) {
        checkHost_(ids, what);
        for (int64_t i = 0; i < n; ++i) {
            FAISS_THROW_IF_NOT_FMT(
                    ids[i] != -1, "%s: id -1 (vector %lld) is reserved for missing results", what,
                    (long long)i);
        }
    }
}

void GpuPartResources::checkSearch_(
        const Wrapper& wrapper,
        int64_t n,
        const float* x,
        int64_t k,
        const float* distances,
        const int64_t* labels) const {
    checkSearchArgs(n, x, k, distances, labels);
    checkHost_(x, "search queries");
    checkHost_(distances, "search distances");
    checkHost_(labels, "search labels");
    FAISS_THROW_IF_NOT_MSG(part_(wrapper, 0).is_trained, "search: the index is not trained");
}

void GpuPartResources::trainParts_(Wrapper& wrapper, int64_t n, const float* x) const {
    checkVectorsArg(n, x, "train");
    checkHost_(x, "train");
    checkFinite(n, wrapper.d, x, "train");
    for (int i = 0; i < wrapper.count(); ++i) {
        FAISS_THROW_IF_NOT_FMT(
                part_(wrapper, i).ntotal == 0,
                "train: part %d holds %lld vectors; reset() the index first", i,
                (long long)part_(wrapper, i).ntotal);
    }
    if (dynamic_cast<GpuIndexIVFFlat*>(&part_(wrapper, 0)) == nullptr) {
        wrapper.runOnIndex([n, x](int, faiss::Index* part) { part->train(n, x); });
        return;
    }
    // One k-means for all: each part's lists must be those of the same centroids.
    faiss::IndexFlat centroids;
    wrapper.runOnIndex([&](int i, faiss::Index* part) {
        if (i == 0) {
            auto& ivf = static_cast<GpuIndexIVFFlat&>(*part);
            ivf.train(n, x);
            ivf.quantizer().copyTo(&centroids);
        }
    });
    wrapper.runOnIndex([&](int i, faiss::Index* part) {
        if (i > 0) {
            static_cast<GpuIndexIVFFlat&>(*part).setQuantizer(&centroids);
        }
    });
}

} // namespace faiss_ext
