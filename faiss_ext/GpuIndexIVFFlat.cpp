#include <faiss_ext/GpuIndexIVFFlat.h>

#include <algorithm>
#include <typeinfo>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/invlists/InvertedLists.h>

#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfCoarseSearch.h>
#include <faiss_ext/impl/IvfLists.h>
#include <faiss_ext/impl/IvfSearch.h>
#include <faiss_ext/impl/KMeans.h>
#include <faiss_ext/impl/Progress.h>
#include <faiss_ext/impl/RangeSearch.h>
#include <faiss_ext/impl/SearchGraphs.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

namespace {

/// Largest nprobe (the coarse top-k goes through the same selection as search).
constexpr int64_t kMaxNprobe = kMaxSearchK;
/// Searches of at most this many queries may run from CUDA graphs (useSearchGraphs).
/// At batch 1024 the launches still leave the device idle between kernels (benchs/NOTES.md,
/// twelfth and thirty-third sessions); above, a search's temporaries outgrow a graph's
/// share of the budget.
constexpr int64_t kSearchGraphMaxQueries = 1024;

int64_t checkedNlist(int64_t nlist) {
    FAISS_THROW_IF_NOT_FMT(
            nlist >= 1 && nlist <= INT32_MAX, "nlist=%lld is outside [1, 2^31)", (long long)nlist);
    return nlist;
}

void checkDimFits(const GpuResources& res, int d) {
    const size_t need = ivfScanSharedBytes(d, int(kMaxSearchK));
    FAISS_THROW_IF_NOT_FMT(
            need <= res.maxSharedMemoryPerBlock(),
            "d=%d is too large: the list scan would need %zu bytes of shared memory, "
            "the device allows %zu per block",
            d, need, res.maxSharedMemoryPerBlock());
}

const faiss::IndexIVFFlat* nonNull(const faiss::IndexIVFFlat* index) {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "copyFrom: null index");
    return index;
}

/// The quantizer's config: host paging as the IVF index's.
GpuIndexFlatConfig quantizerConfig(const GpuIndexConfig& c) {
    GpuIndexFlatConfig q;
    q.pageBytes = c.pageBytes;
    return q;
}

} // namespace

GpuIndexIVFFlat::GpuIndexIVFFlat(
        GpuResources& resources,
        int d,
        int64_t nlist,
        faiss::MetricType metric,
        GpuIndexIVFFlatConfig config)
        : GpuIndex(resources, d, metric, config),
          ivfConfig_(config),
          nlist_(checkedNlist(nlist)),
          quantizer_(std::make_unique<GpuIndexFlat>(resources, d, metric, quantizerConfig(config))),
          lists_(std::make_unique<IvfLists>(resources, d, nlist)) {
    FAISS_THROW_IF_NOT_FMT(
            config.listChunkVectors == 0 ||
                    (config.listChunkVectors >= 32 && config.listChunkVectors % 32 == 0 &&
                     config.listChunkVectors <= (int64_t(1) << 30)),
            "listChunkVectors=%lld must be 0 or a multiple of 32 in [32, 2^30]",
            (long long)config.listChunkVectors);
    FAISS_THROW_IF_NOT_FMT(
            config.mergePath == IvfMergePath::kAuto || config.mergePath == IvfMergePath::kFast ||
                    config.mergePath == IvfMergePath::kHeap,
            "mergePath=%d is not an IvfMergePath", int(config.mergePath));
    FAISS_THROW_IF_NOT_FMT(
            config.scanPath == IvfScanPath::kAuto || config.scanPath == IvfScanPath::kPerQuery ||
                    config.scanPath == IvfScanPath::kListMajor ||
                    config.scanPath == IvfScanPath::kListMajorKeys,
            "scanPath=%d is not an IvfScanPath", int(config.scanPath));
    checkDimFits(resources, d);
    cp = ivfKMeansParameters(metric);
    is_trained = false;
}

GpuIndexIVFFlat::GpuIndexIVFFlat(
        GpuResources& resources,
        const faiss::IndexIVFFlat* index,
        GpuIndexIVFFlatConfig config)
        : GpuIndexIVFFlat(
                  resources,
                  nonNull(index)->d,
                  int64_t(nonNull(index)->nlist),
                  nonNull(index)->metric_type,
                  config) {
    copyFrom(index);
}

GpuIndexIVFFlat::~GpuIndexIVFFlat() = default;

int GpuIndexIVFFlat::effectiveNprobe_(size_t requested) const {
    FAISS_THROW_IF_NOT_MSG(requested >= 1, "search: nprobe=0, must be >= 1");
    const int64_t e = std::min<int64_t>(int64_t(std::min<size_t>(requested, INT64_MAX)), nlist_);
    FAISS_THROW_IF_NOT_FMT(
            e <= kMaxNprobe, "search: nprobe=%zu is above the limit of %lld (nlist=%lld)",
            requested, (long long)kMaxNprobe, (long long)nlist_);
    return int(e);
}

int GpuIndexIVFFlat::searchNprobe_(const faiss::SearchParameters* params) const {
    auto ivf = dynamic_cast<const faiss::SearchParametersIVF*>(params);
    FAISS_THROW_IF_NOT_FMT(
            params == nullptr || ivf != nullptr ||
                    typeid(*params) == typeid(faiss::SearchParameters),
            "search: parameters of type %s are not faiss::SearchParametersIVF",
            typeid(*params).name());
    if (ivf == nullptr) {
        return effectiveNprobe_(nprobe);
    }
    FAISS_THROW_IF_NOT_FMT(
            ivf->max_codes == 0,
            "search: SearchParametersIVF::max_codes=%zu is not supported (use 0)", ivf->max_codes);
    FAISS_THROW_IF_NOT_MSG(
            ivf->quantizer_params == nullptr,
            "search: SearchParametersIVF::quantizer_params is not supported");
    return effectiveNprobe_(ivf->nprobe);
}

void GpuIndexIVFFlat::checkIds_(int64_t n, const int64_t* ids, const char* what) const {
    for (int64_t i = 0; i < n; ++i) {
        FAISS_THROW_IF_NOT_FMT(
                ids[i] != -1, "%s: id -1 (vector %lld) is reserved for missing results", what,
                (long long)i);
    }
}

void GpuIndexIVFFlat::trainImpl_(int64_t n, const float* x) {
    FAISS_THROW_IF_NOT_FMT(
            ntotal == 0, "train: the index holds %lld vectors; reset() it before training again",
            (long long)ntotal);
    FAISS_THROW_IF_NOT_FMT(
            n >= nlist_, "train: %lld training vectors for nlist=%lld (need at least nlist)",
            (long long)n, (long long)nlist_);
    const Progress progress(verbose, "GpuIndexIVFFlat::train");
    const std::vector<float> centroids = gpuKMeans(
            res_, d, nlist_, n, x, cp, metric_type, config_.pageBytes, progress.part(0, 0.99));
    auto q = std::make_unique<GpuIndexFlat>(res_, d, metric_type, quantizerConfig(config_));
    q->add(nlist_, centroids.data());
    setQuantizer_(std::move(q));
    is_trained = true;
    contentsChanged();
    progress.report("centroids stored", 1.0);
}

void GpuIndexIVFFlat::setQuantizer(const faiss::IndexFlat* quantizer) {
    FAISS_THROW_IF_NOT_MSG(quantizer != nullptr, "setQuantizer: null quantizer");
    FAISS_THROW_IF_NOT_FMT(
            quantizer->d == d, "setQuantizer: quantizer d=%d, index d=%d", quantizer->d, d);
    FAISS_THROW_IF_NOT_FMT(
            quantizer->ntotal == nlist_, "setQuantizer: quantizer holds %lld centroids, nlist=%lld",
            (long long)quantizer->ntotal, (long long)nlist_);
    FAISS_THROW_IF_NOT_FMT(
            ntotal == 0, "setQuantizer: the index holds %lld vectors; reset() it first",
            (long long)ntotal);
    DeviceScope scope(res_.device());
    checkFinite(quantizer->ntotal, d, quantizer->get_xb(), "setQuantizer");
    setQuantizer_(std::make_unique<GpuIndexFlat>(res_, quantizer, quantizerConfig(config_)));
    is_trained = true;
    contentsChanged();
}

void GpuIndexIVFFlat::setQuantizer_(std::unique_ptr<GpuIndexFlat> q) {
    const FlatStorage& centroids = *q->storage_;
    auto fragments = std::make_unique<IvfCoarseFragments>(
            res_, centroids.vectors(), q->ntotal, q->d, q->metric_type);
    quantizer_ = std::move(q);
    coarseFragments_ = std::move(fragments);
}

void GpuIndexIVFFlat::addImpl_(int64_t n, const float* x, const int64_t* ids) {
    if (ids) {
        checkIds_(n, ids, "add_with_ids");
    }
    const Progress progress(verbose, "GpuIndexIVFFlat::add");
    // Coarse assignment: the nearest centroid of each vector (x: host or device).
    std::vector<int64_t> listNos(static_cast<size_t>(n));
    {
        std::vector<float> unused(static_cast<size_t>(n));
        quantizer_->search(n, x, 1, unused.data(), listNos.data());
    }
    progress.report("assigned to lists", 0.3);
    std::vector<int64_t> seq;
    if (!ids) {
        seq.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i) {
            seq[i] = ntotal + i;
        }
        ids = seq.data();
    }
    lists_->append(n, x, listNos.data(), ids, config_.pageBytes, progress.part(0.3, 1.0));
    ntotal += n;
}

void GpuIndexIVFFlat::addPreassigned(
        int64_t n,
        const float* x,
        const int64_t* listNos,
        const int64_t* ids) {
    checkVectorsArg(n, x, "addPreassigned");
    FAISS_THROW_IF_NOT_MSG(listNos != nullptr, "addPreassigned: null list numbers");
    FAISS_THROW_IF_NOT_MSG(is_trained, "addPreassigned: the index is not trained");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "addPreassigned");
    checkHostPointer(listNos, "addPreassigned list numbers");
    checkFinite(n, d, x, "addPreassigned");
    std::vector<int64_t> seq;
    if (ids) {
        checkHostPointer(ids, "addPreassigned ids");
        checkIds_(n, ids, "addPreassigned");
    } else {
        seq.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i) {
            seq[i] = ntotal + i;
        }
        ids = seq.data();
    }
    lists_->append(
            n, x, listNos, ids, config_.pageBytes,
            Progress(verbose, "GpuIndexIVFFlat::addPreassigned"));
    ntotal += n;
    contentsChanged();
}

void GpuIndexIVFFlat::copyFrom(const faiss::IndexIVFFlat* index) {
    nonNull(index);
    const int newD = index->d;
    const int64_t newNlist = int64_t(index->nlist);
    FAISS_THROW_IF_NOT_FMT(newD > 0, "copyFrom: dimension %d", newD);
    checkedNlist(newNlist);
    FAISS_THROW_IF_NOT_FMT(
            index->metric_type == faiss::METRIC_L2 ||
                    index->metric_type == faiss::METRIC_INNER_PRODUCT,
            "copyFrom: metric %d is not supported", int(index->metric_type));
    FAISS_THROW_IF_NOT_FMT(
            index->code_size == size_t(newD) * sizeof(float),
            "copyFrom: code_size %zu is not d * 4 = %zu", index->code_size,
            size_t(newD) * sizeof(float));
    auto cpuQ = dynamic_cast<const faiss::IndexFlat*>(index->quantizer);
    FAISS_THROW_IF_NOT_MSG(cpuQ != nullptr, "copyFrom: the quantizer is not a faiss::IndexFlat");
    FAISS_THROW_IF_NOT_FMT(cpuQ->d == newD, "copyFrom: quantizer d=%d, index d=%d", cpuQ->d, newD);
    FAISS_THROW_IF_NOT_FMT(
            cpuQ->metric_type == faiss::METRIC_L2 ||
                    cpuQ->metric_type == faiss::METRIC_INNER_PRODUCT,
            "copyFrom: quantizer metric %d is not supported", int(cpuQ->metric_type));
    FAISS_THROW_IF_NOT_FMT(
            !index->is_trained || cpuQ->ntotal == newNlist,
            "copyFrom: trained index whose quantizer holds %lld centroids for nlist=%lld",
            (long long)cpuQ->ntotal, (long long)newNlist);
    const faiss::InvertedLists* il = index->invlists;
    FAISS_THROW_IF_NOT_MSG(il != nullptr, "copyFrom: null inverted lists");
    FAISS_THROW_IF_NOT_FMT(
            int64_t(il->nlist) == newNlist && il->code_size == index->code_size,
            "copyFrom: inverted lists of %zu lists and code size %zu", il->nlist, il->code_size);
    DeviceScope scope(res_.device());
    checkDimFits(res_, newD);

    // Everything is built aside; the index changes only once nothing can fail.
    std::unique_ptr<GpuIndexFlat> q;
    if (index->is_trained) {
        checkFinite(cpuQ->ntotal, newD, cpuQ->get_xb(), "copyFrom centroids");
        q = std::make_unique<GpuIndexFlat>(res_, cpuQ, quantizerConfig(config_));
    } else {
        q = std::make_unique<GpuIndexFlat>(res_, newD, cpuQ->metric_type, quantizerConfig(config_));
    }
    int64_t total = 0;
    for (int64_t l = 0; l < newNlist; ++l) {
        total += int64_t(il->list_size(l));
    }
    FAISS_THROW_IF_NOT_FMT(
            total == 0 || index->is_trained, "copyFrom: untrained index with %lld stored vectors",
            (long long)total);
    std::vector<float> x(size_t(total) * newD);
    std::vector<int64_t> listNos(static_cast<size_t>(total)), ids(static_cast<size_t>(total));
    int64_t pos = 0;
    for (int64_t l = 0; l < newNlist; ++l) {
        const int64_t len = int64_t(il->list_size(l));
        if (len == 0) {
            continue;
        }
        faiss::InvertedLists::ScopedCodes codes(il, l);
        faiss::InvertedLists::ScopedIds lids(il, l);
        std::copy_n(
                reinterpret_cast<const float*>(codes.get()), size_t(len) * newD,
                x.data() + size_t(pos) * newD);
        std::copy_n(lids.get(), len, ids.data() + pos);
        std::fill_n(listNos.data() + pos, len, l);
        pos += len;
    }
    checkIds_(total, ids.data(), "copyFrom");
    checkFinite(total, newD, x.data(), "copyFrom");
    IvfLists lists(res_, newD, newNlist);
    lists.append(
            total, x.data(), listNos.data(), ids.data(), config_.pageBytes,
            Progress(verbose, "GpuIndexIVFFlat::copyFrom"));

    d = newD;
    metric_type = index->metric_type;
    nlist_ = newNlist;
    setQuantizer_(std::move(q));
    *lists_ = std::move(lists);
    ntotal = total;
    is_trained = index->is_trained;
    nprobe = index->nprobe;
    cp = index->cp;
    contentsChanged();
}

void GpuIndexIVFFlat::copyTo(faiss::IndexIVFFlat* index) const {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "copyTo: null index");
    DeviceScope scope(res_.device());
    auto q = std::make_unique<faiss::IndexFlat>(d, quantizer_->metric_type);
    if (quantizer_->ntotal > 0) {
        std::vector<float> centroids(size_t(quantizer_->ntotal) * d);
        quantizer_->reconstruct_n(0, quantizer_->ntotal, centroids.data());
        q->add(quantizer_->ntotal, centroids.data());
    }
    const size_t codeSize = size_t(d) * sizeof(float);
    auto il = std::make_unique<faiss::ArrayInvertedLists>(size_t(nlist_), codeSize);
    for (int64_t l = 0; l < nlist_; ++l) {
        const int64_t len = lists_->lengths()[l];
        if (len > 0) {
            std::vector<float> v = lists_->listVectors(l);
            std::vector<int64_t> ids = lists_->listIds(l);
            il->add_entries(
                    size_t(l), size_t(len), ids.data(), reinterpret_cast<const uint8_t*>(v.data()));
        }
    }

    if (index->own_fields) {
        delete index->quantizer;
    }
    index->quantizer = q.release();
    index->own_fields = true;
    if (index->own_invlists) {
        delete index->invlists;
    }
    index->invlists = il.release();
    index->own_invlists = true;
    index->d = d;
    index->metric_type = metric_type;
    index->nlist = size_t(nlist_);
    index->code_size = codeSize;
    index->ntotal = ntotal;
    index->is_trained = is_trained;
    index->nprobe = nprobe;
    index->cp = cp;
    index->quantizer_trains_alone = 0;
    index->direct_map.set_type(faiss::DirectMap::NoMap, index->invlists, size_t(ntotal));
}

void GpuIndexIVFFlat::reset() {
    DeviceScope scope(res_.device());
    lists_->clear();
    ntotal = 0;
    contentsChanged();
}

void GpuIndexIVFFlat::reconstruct(int64_t key, float* recons) const {
    FAISS_THROW_IF_NOT_MSG(recons != nullptr, "reconstruct: null output pointer");
    DeviceScope scope(res_.device());
    checkHostPointer(recons, "reconstruct");
    std::vector<int> count = lists_->gatherByIds(key, 1, recons);
    FAISS_THROW_IF_NOT_FMT(
            count[0] == 1, "reconstruct: id %lld is not stored in the index", (long long)key);
}

void GpuIndexIVFFlat::reconstruct_n(int64_t i0, int64_t ni, float* recons) const {
    FAISS_THROW_IF_NOT_MSG(recons != nullptr, "reconstruct_n: null output pointer");
    FAISS_THROW_IF_NOT_FMT(
            ni >= 0 && i0 <= INT64_MAX - ni, "reconstruct_n: bad range i0=%lld ni=%lld",
            (long long)i0, (long long)ni);
    if (ni == 0) {
        return;
    }
    DeviceScope scope(res_.device());
    checkHostPointer(recons, "reconstruct_n");
    lists_->gatherByIds(i0, ni, recons);
}

size_t GpuIndexIVFFlat::deviceMemoryBytes() const {
    return quantizer_->deviceMemoryBytes() +
            (coarseFragments_ ? coarseFragments_->deviceBytes() : 0) + lists_->deviceBytes();
}

int64_t GpuIndexIVFFlat::listLength(int64_t list) const {
    FAISS_THROW_IF_NOT_FMT(
            list >= 0 && list < nlist_, "list %lld is outside [0, %lld)", (long long)list,
            (long long)nlist_);
    return lists_->lengths()[list];
}

std::vector<float> GpuIndexIVFFlat::listVectors(int64_t list) const {
    DeviceScope scope(res_.device());
    return lists_->listVectors(list);
}

std::vector<int64_t> GpuIndexIVFFlat::listIds(int64_t list) const {
    DeviceScope scope(res_.device());
    return lists_->listIds(list);
}

bool GpuIndexIVFFlatAccess::keepsByteCopy(const GpuIndexIVFFlat& index) {
    return index.lists_ && index.lists_->deviceByteCopy() != nullptr;
}

size_t GpuIndexIVFFlatAccess::coarseFragmentBytes(const GpuIndexIVFFlat& index) {
    return index.coarseFragments_ ? index.coarseFragments_->deviceBytes() : 0;
}

IvfSearchPlan GpuIndexIVFFlat::plan_(int64_t nq, int k, int nprobeClamped) const {
    IvfPlanInput in;
    in.nq = nq;
    in.nprobe = nprobeClamped;
    in.k = k;
    in.d = d;
    in.metric = metric_type;
    in.listLengthsDescending = &lists_->lengthsDescending();
    in.chunkOverride = ivfConfig_.listChunkVectors;
    in.mergePath = ivfConfig_.mergePath;
    in.scanPath = ivfConfig_.scanPath;
    in.queryKernel = queryScanKernel_;
    in.coarsePath = coarsePath_;
    in.budgetBytes = res_.tempMemoryBytes();
    in.maxSmemPerBlock = res_.maxSharedMemoryPerBlock();
    in.smCount = res_.multiProcessorCount();
    return planIvfSearch(in);
}

IvfSearchInput GpuIndexIVFFlat::searchInput_(
        const faiss::SearchParameters* params,
        std::shared_ptr<IdFilterBits>& bits) const {
    const int np = searchNprobe_(params);
    const FlatStorage& centroids = *quantizer_->storage_;
    IvfSearchInput in;
    in.coarse.base = centroids.vectors();
    in.coarse.baseNorms = centroids.norms();
    in.coarse.nb = quantizer_->ntotal;
    in.coarse.d = d;
    in.coarse.metric = quantizer_->metric_type;
    FAISS_THROW_IF_NOT_FMT(
            coarsePrecision == GpuFlatPrecision::kAuto ||
                    coarsePrecision == GpuFlatPrecision::kFloat32 ||
                    coarsePrecision == GpuFlatPrecision::kTF32x3,
            "coarsePrecision=%d is not a GpuFlatPrecision", int(coarsePrecision));
    in.coarse.precision = coarsePrecision;
    in.coarseFragments = coarseFragments_ ? coarseFragments_->data() : nullptr;
    in.lists = lists_.get();
    in.metric = metric_type;
    in.nprobe = np;
    IdSlots slots;
    slots.nslots = lists_->slotCount();
    const IvfLists* lists = lists_.get();
    slots.ids = [lists]() { return lists->slotIds(); };
    bits = filterCache().resolve(params ? params->sel : nullptr, slots, nullptr);
    in.allow = bits ? bits->words.data() : nullptr;
    return in;
}

void GpuIndexIVFFlat::searchImpl_(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        const faiss::SearchParameters* params) const {
    std::shared_ptr<IdFilterBits> bits;
    const IvfSearchInput in = searchInput_(params, bits);
    ivfSearch(res_, in, xDevice, n, k, plan_(n, k, in.nprobe), distancesDevice, labelsDevice);
}

GpuIndex::SearchGraphShape GpuIndexIVFFlat::searchGraphShape_(
        int64_t n,
        int k,
        const faiss::SearchParameters* params) const {
    if (n > kSearchGraphMaxQueries || (params != nullptr && params->sel != nullptr)) {
        return {};
    }
    std::shared_ptr<IdFilterBits> bits;
    const IvfSearchInput in = searchInput_(params, bits);
    const IvfSearchPlan plan = plan_(n, k, in.nprobe);
    // Temporaries of one pass: the scan's and the coarse search's distance rows.
    const size_t tempBytes = plan.bytes + size_t(n) * size_t(nlist_) * 2 * sizeof(float);
    if (plan.queryTile < n || !searchGraphFits(res_, tempBytes)) {
        return {};
    }
    // Everything the captured launches depend on (the coarse product is resolved from
    // coarsePrecision and the shape).
    return {{n,
             k,
             in.nprobe,
             d,
             int64_t(metric_type),
             int64_t(contentsVersion()),
             plan.chunkLen,
             plan.chunksPerQuery,
             plan.queryTile,
             int64_t(plan.fastMerge),
             int64_t(plan.listMajor),
             int64_t(plan.queryKernel),
             int64_t(plan.coarsePath),
             plan.maxRowVectors,
             int64_t(plan.bytes),
             int64_t(coarsePrecision),
             in.coarse.nb,
             int64_t(in.coarse.metric),
             int64_t(reinterpret_cast<uintptr_t>(in.coarse.base)),
             int64_t(reinterpret_cast<uintptr_t>(in.coarse.baseNorms)),
             int64_t(reinterpret_cast<uintptr_t>(in.coarseFragments)),
             int64_t(reinterpret_cast<uintptr_t>(in.lists->deviceData())),
             int64_t(reinterpret_cast<uintptr_t>(in.lists->deviceByteCopy())),
             int64_t(reinterpret_cast<uintptr_t>(in.lists->deviceIds())),
             int64_t(reinterpret_cast<uintptr_t>(in.lists->deviceLengths()))},
            tempBytes};
}

void GpuIndexIVFFlat::rangeSearchImpl_(
        int64_t n,
        const float* x,
        float radius,
        faiss::RangeSearchResult* result,
        const faiss::SearchParameters* params) const {
    std::shared_ptr<IdFilterBits> bits;
    const IvfSearchInput in = searchInput_(params, bits);
    ivfRangeSearch(res_, in, x, n, radius, result);
}

size_t GpuIndexIVFFlat::removeIdsImpl_(const faiss::IDSelector& sel) {
    const std::vector<int64_t> ids =
            copyToHostVector(lists_->slotIds(), size_t(lists_->slotCount()), res_.stream());
    const std::vector<uint32_t> gone = evaluateIdSelector(sel, lists_->slotCount(), ids.data());
    const int64_t removed = lists_->removeSlots(gone);
    ntotal -= removed;
    return size_t(removed);
}

} // namespace faiss_ext
