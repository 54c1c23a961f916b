#include <faiss_ext/GpuIndexFlat.h>

#include <cstdint>

#include <optional>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/impl/FlatRadixSearch.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/Progress.h>
#include <faiss_ext/impl/RangeSearch.h>
#include <faiss_ext/impl/SearchGraphs.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

namespace {

/// The search's inputs for n queries at x (device) over the index's vectors, without
/// a filter.
FlatSearchInput searchInput(
        const GpuIndexFlat& index,
        const FlatStorage& storage,
        int64_t n,
        const float* x) {
    FlatSearchInput in;
    in.queries = x;
    in.nq = n;
    in.base = storage.vectors();
    in.baseNorms = storage.norms();
    in.nb = index.ntotal;
    in.d = index.d;
    in.metric = index.metric_type;
    in.precision = index.flatConfig().precision;
    if (storage.copyRows() != nullptr) {
        in.copy.code = *storage.copyCode();
        in.copy.rows = storage.copyRows();
        in.copy.scales = storage.copyScales();
        in.copy.maxRelError = storage.copyMaxRelError();
        in.copy.maxSquaredNorm = storage.copyMaxSquaredNorm();
    }
    return in;
}

/// The copy config asks for (none, float16 or int8).
std::optional<kernels::CopyCode> copyOf(const GpuIndexFlatConfig& config) {
    if (config.float16Copy) {
        return kernels::CopyCode::kFloat16;
    }
    if (config.int8Copy) {
        return kernels::CopyCode::kInt8;
    }
    return std::nullopt;
}

} // namespace

FlatSearchPath GpuIndexFlatAccess::searchPath(const GpuIndexFlat& index, int64_t nq, int k) {
    return flatSearchPathFor(index.res_, searchInput(index, *index.storage_, nq, nullptr), k);
}

GpuIndexFlat::GpuIndexFlat(
        GpuResources& resources,
        int d,
        faiss::MetricType metric,
        GpuIndexFlatConfig config)
        : GpuIndex(resources, d, metric, config),
          flatConfig_(config),
          storage_(std::make_unique<FlatStorage>(resources, d, copyOf(config))) {
    FAISS_THROW_IF_NOT_FMT(
            config.precision == GpuFlatPrecision::kAuto ||
                    config.precision == GpuFlatPrecision::kFloat32 ||
                    config.precision == GpuFlatPrecision::kTF32x3,
            "precision=%d is not a GpuFlatPrecision", int(config.precision));
    FAISS_THROW_IF_NOT_MSG(
            !(config.float16Copy && config.int8Copy),
            "GpuIndexFlatConfig: float16Copy and int8Copy are exclusive (one copy at most)");
}

GpuIndexFlat::GpuIndexFlat(
        GpuResources& resources,
        const faiss::IndexFlat* index,
        GpuIndexFlatConfig config)
        : GpuIndexFlat(
                  resources,
                  index ? index->d : 0,
                  index ? index->metric_type : faiss::METRIC_L2,
                  config) {
    copyFrom(index);
}

GpuIndexFlat::~GpuIndexFlat() = default;

void GpuIndexFlat::copyFrom(const faiss::IndexFlat* index) {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "copyFrom: null index");
    FAISS_THROW_IF_NOT_FMT(index->d > 0, "copyFrom: dimension %d", index->d);
    FAISS_THROW_IF_NOT_FMT(
            index->metric_type == faiss::METRIC_L2 ||
                    index->metric_type == faiss::METRIC_INNER_PRODUCT,
            "copyFrom: metric %d is not supported", int(index->metric_type));
    DeviceScope scope(res_.device());
    FlatStorage fresh(res_, index->d, copyOf(flatConfig_));
    if (index->ntotal > 0) {
        fresh.append(index->ntotal, index->get_xb());
    }
    *storage_ = std::move(fresh);
    d = index->d;
    metric_type = index->metric_type;
    ntotal = index->ntotal;
    contentsChanged();
}

void GpuIndexFlat::copyTo(faiss::IndexFlat* index) const {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "copyTo: null index");
    DeviceScope scope(res_.device());
    std::vector<float> host(size_t(ntotal) * d);
    storage_->copyRowsToHost(0, ntotal, host.data());
    index->reset();
    index->d = d;
    index->code_size = sizeof(float) * d;
    index->metric_type = metric_type;
    index->is_trained = true;
    if (ntotal > 0) {
        index->add(ntotal, host.data());
    }
}

void GpuIndexFlat::reserveMemory(size_t numVecs) {
    FAISS_THROW_IF_NOT_FMT(
            numVecs <= size_t(INT64_MAX) / (size_t(d) * sizeof(float)),
            "reserveMemory: numVecs=%zu vectors of d=%d do not fit in memory", numVecs, d);
    DeviceScope scope(res_.device());
    storage_->reserve(int64_t(numVecs));
}

void GpuIndexFlat::reset() {
    DeviceScope scope(res_.device());
    storage_->clear();
    ntotal = 0;
    contentsChanged();
}

void GpuIndexFlat::reconstruct(int64_t key, float* recons) const {
    reconstruct_n(key, 1, recons);
}

void GpuIndexFlat::reconstruct_n(int64_t i0, int64_t ni, float* recons) const {
    FAISS_THROW_IF_NOT_MSG(recons != nullptr, "reconstruct: null output pointer");
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && ni >= 1 && i0 + ni <= ntotal,
            "reconstruct: keys [%lld, %lld) are outside [0, %lld)", (long long)i0,
            (long long)(i0 + ni), (long long)ntotal);
    DeviceScope scope(res_.device());
    checkHostPointer(recons, "reconstruct");
    storage_->copyRowsToHost(i0, ni, recons);
}

size_t GpuIndexFlat::deviceMemoryBytes() const {
    return storage_->deviceBytes();
}

void GpuIndexFlat::addImpl_(int64_t n, const float* x, const int64_t*) {
    storage_->append(n, x);
    ntotal += n;
    Progress(verbose, "GpuIndexFlat::add").step("vectors stored", n, n);
}

void GpuIndexFlat::searchImpl_(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        const faiss::SearchParameters* params) const {
    FlatSearchInput in = searchInput(*this, *storage_, n, xDevice);
    const auto bits = filterOf_(params);
    in.allow = bits ? bits->words.data() : nullptr;
    flatSearch(res_, in, k, distancesDevice, labelsDevice);
}

GpuIndex::SearchGraphShape GpuIndexFlat::searchGraphShape_(
        int64_t n,
        int k,
        const faiss::SearchParameters* params) const {
    // Only the radix paths' few queries: the other paths' searches are long enough
    // that their launches do not show, and some of them wait on the device.
    const FlatSearchInput in = searchInput(*this, *storage_, n, nullptr);
    const FlatSearchPath path = flatSearchPathFor(res_, in, k);
    const size_t tempBytes = flatRadixBytes(n, ntotal, k);
    if ((params != nullptr && params->sel != nullptr) ||
        (path != FlatSearchPath::kRadix && path != FlatSearchPath::kRadixCopy) ||
        !searchGraphFits(res_, tempBytes)) {
        return {};
    }
    return {{n, k, d, int64_t(metric_type), int64_t(contentsVersion()), ntotal,
             int64_t(flatConfig_.precision), int64_t(res_.tempMemoryBytes()),
             int64_t(reinterpret_cast<uintptr_t>(in.base)),
             int64_t(reinterpret_cast<uintptr_t>(in.baseNorms)), int64_t(path),
             int64_t(reinterpret_cast<uintptr_t>(in.copy.rows)),
             int64_t(reinterpret_cast<uintptr_t>(in.copy.scales)),
             int64_t(reinterpret_cast<uintptr_t>(in.copy.maxSquaredNorm))},
            tempBytes};
}

std::shared_ptr<IdFilterBits> GpuIndexFlat::filterOf_(const faiss::SearchParameters* params) const {
    IdSlots slots;
    slots.nslots = ntotal;
    return filterCache().resolve(params ? params->sel : nullptr, slots, nullptr);
}

void GpuIndexFlat::rangeSearchImpl_(
        int64_t n,
        const float* x,
        float radius,
        faiss::RangeSearchResult* result,
        const faiss::SearchParameters* params) const {
    FlatSearchInput in;
    in.base = storage_->vectors();
    in.baseNorms = storage_->norms();
    in.nb = ntotal;
    in.d = d;
    in.metric = metric_type;
    const auto bits = filterOf_(params);
    in.allow = bits ? bits->words.data() : nullptr;
    flatRangeSearch(res_, in, x, n, radius, result);
}

size_t GpuIndexFlat::removeIdsImpl_(const faiss::IDSelector& sel) {
    const std::vector<uint32_t> gone = evaluateIdSelector(sel, ntotal, nullptr);
    std::vector<int64_t> keep;
    keep.reserve(size_t(ntotal));
    for (int64_t i = 0; i < ntotal; ++i) {
        if (!((gone[size_t(i >> 5)] >> (i & 31)) & 1u)) {
            keep.push_back(i);
        }
    }
    const size_t removed = size_t(ntotal) - keep.size();
    if (removed > 0) {
        storage_->keepRows(keep);
        ntotal = int64_t(keep.size());
    }
    return removed;
}

} // namespace faiss_ext
