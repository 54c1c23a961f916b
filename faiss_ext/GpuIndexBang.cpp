#include <faiss_ext/GpuIndexBang.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <typeinfo>

#include <faiss/impl/IDSelector.h>

#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangInnerProduct.h>
#include <faiss_ext/impl/BangMemory.h>
#include <faiss_ext/impl/BangPq.h>
#include <faiss_ext/impl/HostMemory.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/Progress.h>
#include <faiss_ext/utils/DeviceScope.h>
#include <faiss_ext/utils/MemorySpace.h>
#include <kernels/BangInnerProduct.h>
#include <kernels/BangPq.h>
#include <kernels/BangSearch.h>
#include <kernels/Distances.h>
#include <kernels/IdFilter.h>

namespace faiss_ext {

namespace {

GpuIndexBangConfig checkedConfig(const GpuIndexBangConfig& c, int d) {
    const BangBuildConfig& b = c.build;
    FAISS_THROW_IF_NOT_FMT(
            b.graphDegree >= 1 && b.graphDegree <= kernels::kBangMaxDegree,
            "build.graphDegree=%d is outside [1, %d]", b.graphDegree, kernels::kBangMaxDegree);
    FAISS_THROW_IF_NOT_FMT(
            b.alpha >= 1.f && b.alpha <= 1e6f, "build.alpha=%g is outside [1, 1e6]",
            double(b.alpha));
    FAISS_THROW_IF_NOT_FMT(
            b.candidates >= 1 && b.candidates <= 1024, "build.candidates=%d is outside [1, 1024]",
            b.candidates);
    FAISS_THROW_IF_NOT_FMT(
            b.candidateLists >= -1,
            "build.candidateLists=%lld must be >= -1 (-1: automatic, 0: exact k-NN)",
            (long long)b.candidateLists);
    FAISS_THROW_IF_NOT_FMT(
            b.candidateProbes >= 1 && b.candidateProbes <= 2048,
            "build.candidateProbes=%d is outside [1, 2048]", b.candidateProbes);
    FAISS_THROW_IF_NOT_FMT(
            b.hubs >= 0, "build.hubs=%lld must be >= 0 (0: automatic)", (long long)b.hubs);
    FAISS_THROW_IF_NOT_FMT(
            b.passes >= 0 && b.passes <= 16, "build.passes=%d is outside [0, 16]", b.passes);
    FAISS_THROW_IF_NOT_FMT(
            b.searchL >= 1 && b.searchL <= GpuIndexBang::kMaxSearchL,
            "build.searchL=%d is outside [1, %d]", b.searchL, GpuIndexBang::kMaxSearchL);
    checkBangPqSubquantizers(d, c.pqSubquantizers);
    FAISS_THROW_IF_NOT_FMT(
            c.vectorPlacement == BangVectorPlacement::kDevice ||
                    c.vectorPlacement == BangVectorPlacement::kHost,
            "vectorPlacement=%d is not a BangVectorPlacement", int(c.vectorPlacement));
    // Exact mode reads a full vector for every distance of the walk.
    FAISS_THROW_IF_NOT_MSG(
            c.vectorPlacement == BangVectorPlacement::kDevice || c.pqSubquantizers > 0,
            "vectorPlacement=kHost needs PQ mode (pqSubquantizers > 0): exact mode reads "
            "full vectors for every distance of the walk");
    FAISS_THROW_IF_NOT_FMT(
            c.vectorStorage == BangVectorStorage::kAuto ||
                    c.vectorStorage == BangVectorStorage::kFloat ||
                    c.vectorStorage == BangVectorStorage::kBytes,
            "vectorStorage=%d is not a BangVectorStorage", int(c.vectorStorage));
    FAISS_THROW_IF_NOT_MSG(
            c.vectorStorage != BangVectorStorage::kBytes || c.pqSubquantizers == 0,
            "vectorStorage=kBytes needs exact mode (pqSubquantizers=0): PQ mode keeps float "
            "vectors for its re-rank");
    return c;
}

faiss::MetricType checkedMetric(faiss::MetricType m, const GpuIndexBangConfig& c) {
    FAISS_THROW_IF_NOT_FMT(
            m == faiss::METRIC_L2 || m == faiss::METRIC_INNER_PRODUCT,
            "GpuIndexBang supports METRIC_L2 and METRIC_INNER_PRODUCT (got metric %d)", int(m));
    // Inner product in PQ mode codes one sub-quantizer more (impl/BangInnerProduct.h).
    FAISS_THROW_IF_NOT_FMT(
            bangStoredPqM(c.pqSubquantizers, m) <= kernels::kBangMaxPqSubquantizers,
            "GpuIndexBang: pqSubquantizers=%d with METRIC_INNER_PRODUCT codes %d "
            "sub-quantizers, more than %d",
            c.pqSubquantizers, bangStoredPqM(c.pqSubquantizers, m),
            kernels::kBangMaxPqSubquantizers);
    FAISS_THROW_IF_NOT_MSG(
            c.vectorStorage != BangVectorStorage::kBytes || m == faiss::METRIC_L2,
            "vectorStorage=kBytes needs METRIC_L2: inner product stores transformed vectors");
    return m;
}

/// How an index of this config and metric stores its device rows: floats wherever bytes
/// do not apply (bangBytesApply).
BangVectorStorage storedStorage(const GpuIndexBangConfig& c, faiss::MetricType m) {
    return bangBytesApply(c.pqSubquantizers, m) ? c.vectorStorage : BangVectorStorage::kFloat;
}

/// Refuses a build of `total` vectors whose peak (estimateMemory for the storage its rows
/// took) the device cannot hold, counting the rows already allocated (`held` bytes) as
/// available.
void checkBuildFits(const GpuIndexBang& index, int64_t total, bool bytes, size_t held) {
    GpuIndexBangConfig config = index.bangConfig();
    config.vectorStorage = bytes ? BangVectorStorage::kBytes : BangVectorStorage::kFloat;
    const size_t need =
            GpuIndexBang::estimateMemory(
                    total, index.d, index.metric_type, config, index.resources().config())
                    .buildDeviceBytes;
    const size_t available = index.resources().availableDeviceBytes() + held;
    FAISS_THROW_IF_NOT_FMT(
            need <= available,
            "add: building the graph of %lld vectors needs about %.2f GiB of device memory at "
            "its peak (GpuIndexBang::estimateMemory), %.2f GiB are available",
            (long long)total, need / 1073741824.0, available / 1073741824.0);
}

/// add's build over the stored vectors that remain (removed ones dropped) and x, into
/// `next`; *ipNormSq: the MIPS transform's M2 of the new state (inner product).
BangBuildTimes rebuildInto(
        BangGraph& next,
        const GpuIndexBang& index,
        int64_t n,
        const float* x,
        const Progress& progress,
        float* ipNormSq) {
    // The removed nodes are dropped here: the rebuild compacts the ids. The build reads
    // every vector on the host too (hubs, medoid, PQ training and codes; x: host or
    // device). A first add of host rows reads them in place: a copy would double the
    // host memory a large build needs (51 GB more at 100M x 128) and take seconds.
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    GpuResources& res = index.resources();
    const GpuIndexBangConfig& config = index.bangConfig();
    const int64_t ntotal = index.ntotal, total = ntotal + n;
    const int d = index.d;
    std::vector<float> all;
    const float* rows = x;
    if (ntotal > 0 || memorySpaceOf(x, res.device(), "add x") == MemorySpace::kDevice) {
        all.resize(size_t(total) * d);
        if (state.tombstoneCount() == 0) {
            if (ntotal > 0) {
                index.copyNodeVectors(0, ntotal, all.data());
            }
        } else {
            std::vector<float> nodes(size_t(index.nodeCount()) * d);
            index.copyNodeVectors(0, index.nodeCount(), nodes.data());
            int64_t kept = 0;
            for (int64_t v = 0; v < index.nodeCount(); ++v) {
                if (!state.isTombstone(v)) {
                    std::copy_n(nodes.data() + size_t(v) * d, d, all.data() + size_t(kept++) * d);
                }
            }
            FAISS_ASSERT(kept == ntotal);
        }
        copyToHost(all.data() + size_t(ntotal) * d, x, size_t(n) * d, res.stream());
        rows = all.data();
    }
    if (index.metric_type == faiss::METRIC_INNER_PRODUCT) {
        // The graph is built over the transformed vectors, in L2.
        *ipNormSq = float(maxNormSq(rows, total, d));
        all = mipsRows(rows, total, d, next.dim(), *ipNormSq);
        rows = all.data();
    }
    next.setVectors(total, rows);
    // Refused before any work when the device cannot hold the build beside the index it
    // replaces; known once the rows are stored (as floats or bytes).
    checkBuildFits(index, total, next.bytesStored(), next.deviceBytes());
    const BangBuildTimes t = buildBangGraph(
            res, next, rows, config.build, config.pageBytes,
            progress.part(0, index.pqMode() ? 0.8 : 1.0));
    if (index.pqMode()) {
        next.setPq(trainBangPq(
                res, total, next.dim(), next.pqSubquantizers(), rows, config.pageBytes,
                progress.part(0.8, 1.0)));
    }
    return t;
}

/// add's extension of the stored graph (no removed nodes) by x, into `next` (x: the
/// rows as stored, so transformed for inner product).
BangBuildTimes extendInto(
        BangGraph& next,
        const GpuIndexBang& index,
        int64_t n,
        const float* x,
        const Progress& progress) {
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    GpuResources& res = index.resources();
    const GpuIndexBangConfig& config = index.bangConfig();
    next.setVectors(state, n, x);
    const BangBuildTimes t = extendBangGraph(
            res, next, state, x, config.build, config.pageBytes,
            progress.part(0, index.pqMode() ? 0.9 : 1.0));
    if (index.pqMode()) {
        // The codebooks stay; the new vectors are encoded with them.
        BangPqTables tables{state.pqCentroids(), state.pqCodes()};
        std::vector<float> xHost(size_t(n) * next.dim());
        copyToHost(xHost.data(), x, xHost.size(), res.stream());
        const std::vector<uint8_t> codes = encodeBangPq(
                n, next.dim(), next.pqSubquantizers(), tables.centroids.data(), xHost.data());
        tables.codes.insert(tables.codes.end(), codes.begin(), codes.end());
        next.setPq(tables);
        progress.report("PQ codes of the new vectors", 1.0);
    }
    return t;
}

} // namespace

GpuIndexBang::GpuIndexBang(
        GpuResources& resources,
        int d,
        faiss::MetricType metric,
        GpuIndexBangConfig config)
        : GpuIndex(resources, d, checkedMetric(metric, config), config),
          bangConfig_(checkedConfig(config, d)),
          storedDim_(bangStoredDim(d, config.pqSubquantizers, metric)),
          state_(std::make_unique<BangGraph>(
                  resources,
                  storedDim_,
                  config.build.graphDegree,
                  bangStoredPqM(config.pqSubquantizers, metric),
                  storedStorage(config, metric))) {
    // The largest worklist must fit; PQ mode adds its table (M KiB).
    const int M = config.pqSubquantizers;
    const size_t need = kernels::bangPersistentSmemBytes(
            kMaxSearchL, config.build.graphDegree, storedDim_, state_->pqSubquantizers());
    FAISS_THROW_IF_NOT_FMT(
            need <= resources.maxSharedMemoryPerBlock(),
            "d=%d, pqSubquantizers=%d is too large: the search would need %zu bytes of "
            "shared memory per block, the device allows %zu",
            d, M, need, resources.maxSharedMemoryPerBlock());
    is_trained = true;
}

GpuIndexBang::~GpuIndexBang() = default;

BangMemoryEstimate GpuIndexBang::estimateMemory(
        int64_t n,
        int d,
        faiss::MetricType metric,
        const GpuIndexBangConfig& config,
        const GpuResourcesConfig& resources) {
    checkedMetric(metric, config);
    return estimateBangMemory(n, d, metric, checkedConfig(config, d), resources.tempMemoryBytes);
}

int GpuIndexBang::effectiveL(int requested, int64_t k) {
    FAISS_THROW_IF_NOT_FMT(
            requested >= 1 && requested <= kMaxSearchL, "search: search_L=%d is outside [1, %d]",
            requested, kMaxSearchL);
    FAISS_THROW_IF_NOT_FMT(
            k <= kMaxSearchL,
            "search: k=%lld is above GpuIndexBang's largest worklist %d (L = max(search_L, k))",
            (long long)k, kMaxSearchL);
    return int(std::max<int64_t>(requested, k));
}

int GpuIndexBang::searchL_(const faiss::SearchParameters* params, int64_t k) const {
    auto p = dynamic_cast<const SearchParametersBang*>(params);
    FAISS_THROW_IF_NOT_FMT(
            params == nullptr || p != nullptr || typeid(*params) == typeid(faiss::SearchParameters),
            "search: parameters of type %s are not faiss_ext::SearchParametersBang",
            typeid(*params).name());
    return effectiveL(p ? p->search_L : search_L, k);
}

BangEntry GpuIndexBang::searchEntry_(const faiss::SearchParameters* params) const {
    auto p = dynamic_cast<const SearchParametersBang*>(params);
    const BangEntry entry = p ? p->entry : SearchParametersBang().entry;
    FAISS_THROW_IF_NOT_FMT(
            entry == BangEntry::kMedoid || entry == BangEntry::kNearestHub,
            "search: entry=%d is not a BangEntry", int(entry));
    return entry;
}

void GpuIndexBang::addImpl_(int64_t n, const float* x, const int64_t*) {
    const int64_t total = ntotal + n;
    FAISS_THROW_IF_NOT_FMT(
            total < INT_MAX, "add: %lld vectors in all; GpuIndexBang holds fewer than 2^31",
            (long long)total);
    FAISS_THROW_IF_NOT_FMT(
            !pqMode() || total >= kBangPqMinVectors,
            "add: PQ mode needs at least %lld vectors in all to train its 256-centroid "
            "codebooks (would hold %lld)",
            (long long)kBangPqMinVectors, (long long)total);
    const Progress progress(verbose, "GpuIndexBang::add");
    // Everything is built aside; the index changes only once nothing can fail.
    BangGraph next(res_, storedDim_, graphDegree(), state_->pqSubquantizers(), state_->storage());
    bool extend = ntotal > 0 && state_->tombstoneCount() == 0;
    // Inner product extends only within the transform's M2 (norms up to the largest
    // stored), with the new rows transformed first.
    std::vector<float> transformed;
    if (extend && metric_type == faiss::METRIC_INNER_PRODUCT) {
        std::vector<float> xHost(size_t(n) * d);
        copyToHost(xHost.data(), x, xHost.size(), res_.stream());
        extend = maxNormSq(xHost.data(), n, d) <= double(ipNormSq_);
        if (extend) {
            transformed = mipsRows(xHost.data(), n, d, storedDim_, ipNormSq_);
        }
    }
    float normSq = ipNormSq_;
    BangBuildTimes t;
    if (bangConfig_.vectorPlacement == BangVectorPlacement::kHost) {
        // The rows' page-locked copy is made last, beside the old one: refused before
        // the build, not after it.
        const size_t need = size_t(total) * size_t(storedDim_) * sizeof(float);
        const size_t available = availableHostBytes();
        FAISS_THROW_IF_NOT_FMT(
                need <= available,
                "add: the vectors placed on the host need %.2f GiB of page-locked host "
                "memory, %.2f GiB are available (MemAvailable)",
                need / 1073741824.0, available / 1073741824.0);
    }
    if (extend) {
        t = extendInto(next, *this, n, transformed.empty() ? x : transformed.data(), progress);
    } else {
        t = rebuildInto(next, *this, n, x, progress, &normSq);
    }
    if (bangConfig_.vectorPlacement == BangVectorPlacement::kHost) {
        next.placeVectorsOnHost();
    }
    *state_ = std::move(next);
    ipNormSq_ = normSq;
    ntotal = total;
    lastKnnSeconds_ = t.knnSeconds;
    lastSearchSeconds_ = t.searchSeconds;
    lastPruneSeconds_ = t.pruneSeconds;
}

void GpuIndexBang::setGraph(
        int64_t n,
        const float* x,
        const int32_t* graph,
        int64_t entry,
        const float* pqCentroids,
        const uint8_t* pqCodes) {
    checkVectorsArg(n, x, "setGraph");
    const int M = bangConfig_.pqSubquantizers;
    FAISS_THROW_IF_NOT_MSG(
            pqMode() || (pqCentroids == nullptr && pqCodes == nullptr),
            "setGraph: PQ centroids or codes given to an index in exact mode "
            "(pqSubquantizers=0)");
    FAISS_THROW_IF_NOT_MSG(
            (pqCentroids == nullptr) == (pqCodes == nullptr),
            "setGraph: give both PQ centroids and codes, or neither (to train them)");
    FAISS_THROW_IF_NOT_FMT(
            !pqMode() || n >= kBangPqMinVectors || pqCentroids != nullptr,
            "setGraph: PQ mode needs at least %lld vectors to train its codebooks (got %lld)",
            (long long)kBangPqMinVectors, (long long)n);
    FAISS_THROW_IF_NOT_MSG(graph != nullptr, "setGraph: null graph");
    FAISS_THROW_IF_NOT_FMT(
            n < INT_MAX, "setGraph: n=%lld; GpuIndexBang holds fewer than 2^31 vectors",
            (long long)n);
    FAISS_THROW_IF_NOT_FMT(
            entry >= 0 && entry < n, "setGraph: entry point %lld is outside [0, %lld)",
            (long long)entry, (long long)n);
    const int R = graphDegree();
    checkGraphRows(graph, 0, n, R, n, "setGraph");
    DeviceScope scope(res_.device());
    checkHostPointer(x, "setGraph");
    checkHostPointer(graph, "setGraph graph");
    checkFinite(n, d, x, "setGraph");
    BangGraph next(res_, storedDim_, R, state_->pqSubquantizers(), state_->storage());
    // Inner product: the transformed rows (impl/BangInnerProduct.h) are stored and coded.
    float normSq = 0;
    std::vector<float> transformed;
    if (metric_type == faiss::METRIC_INNER_PRODUCT) {
        normSq = float(maxNormSq(x, n, d));
        transformed = mipsRows(x, n, d, storedDim_, normSq);
    }
    const float* rows = transformed.empty() ? x : transformed.data();
    // Placed on the host, the rows never go to the device here (PQ training reads them
    // on the host too).
    if (bangConfig_.vectorPlacement == BangVectorPlacement::kHost) {
        next.setVectorsOnHost(n, rows);
    } else {
        next.setVectors(n, rows);
    }
    next.setGraph(graph, entry);
    const int storedM = next.pqSubquantizers();
    if (pqCentroids != nullptr) {
        checkHostPointer(pqCentroids, "setGraph PQ centroids");
        checkHostPointer(pqCodes, "setGraph PQ codes");
        BangPqTables t;
        t.centroids.assign(
                pqCentroids, pqCentroids + size_t(kernels::kBangPqCentroids) * storedDim_);
        checkFinite(
                kernels::kBangPqCentroids, storedDim_, t.centroids.data(), "setGraph PQ centroids");
        t.codes.assign(pqCodes, pqCodes + size_t(n) * storedM);
        next.setPq(t);
    } else if (pqMode()) {
        next.setPq(trainBangPq(
                res_, n, storedDim_, storedM, rows, config_.pageBytes,
                Progress(verbose, "GpuIndexBang::setGraph")));
    }
    setDeviceState_(std::move(next), normSq);
}

void GpuIndexBang::setDeviceState_(BangGraph&& state, float ipNormSq) {
    FAISS_ASSERT(state.dim() == storedDim_ && state.degree() == graphDegree());
    *state_ = std::move(state);
    ipNormSq_ = ipNormSq;
    ntotal = state_->size() - state_->tombstoneCount();
    contentsChanged();
}

void GpuIndexBang::reset() {
    DeviceScope scope(res_.device());
    state_->clear();
    ntotal = 0;
    contentsChanged();
}

int64_t GpuIndexBang::nodeCount() const {
    return state_->size();
}

bool GpuIndexBang::isRemoved(int64_t id) const {
    FAISS_THROW_IF_NOT_FMT(
            id >= 0 && id < nodeCount(), "isRemoved: id %lld is outside [0, %lld)", (long long)id,
            (long long)nodeCount());
    return state_->isTombstone(id);
}

size_t GpuIndexBang::removeIdsImpl_(const faiss::IDSelector& sel) {
    const int64_t nodes = nodeCount();
    std::vector<uint32_t> words = evaluateIdSelector(sel, nodes, nullptr);
    const std::vector<uint32_t>& old = state_->tombstoneWords();
    int64_t added = 0, count = 0;
    for (size_t w = 0; w < words.size(); ++w) {
        const uint32_t before = old.empty() ? 0u : old[w];
        added += __builtin_popcount(words[w] & ~before);
        words[w] |= before;
        count += __builtin_popcount(words[w]);
    }
    if (added > 0) {
        state_->setTombstones(words, count);
        ntotal = nodes - count;
    }
    return size_t(added);
}

void GpuIndexBang::reconstruct(int64_t key, float* recons) const {
    reconstruct_n(key, 1, recons);
}

void GpuIndexBang::reconstruct_n(int64_t i0, int64_t ni, float* recons) const {
    FAISS_THROW_IF_NOT_MSG(recons != nullptr, "reconstruct: null output pointer");
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && ni >= 1 && i0 <= nodeCount() - ni,
            "reconstruct: keys [%lld, %lld + %lld) are outside [0, %lld)", (long long)i0,
            (long long)i0, (long long)ni, (long long)nodeCount());
    for (int64_t v = i0; v < i0 + ni && state_->tombstoneCount() > 0; ++v) {
        FAISS_THROW_IF_NOT_FMT(
                !state_->isTombstone(v), "reconstruct: id %lld was removed", (long long)v);
    }
    checkHostPointer(recons, "reconstruct");
    copyNodeVectors(i0, ni, recons);
}

void GpuIndexBang::copyNodeVectors(int64_t i0, int64_t ni, float* out) const {
    FAISS_ASSERT(i0 >= 0 && ni >= 0 && i0 + ni <= nodeCount());
    DeviceScope scope(res_.device());
    if (storedDim_ == d) {
        state_->copyRowsToHost(i0, ni, out);
        return;
    }
    // Inner product: the stored rows without the transform's last component.
    std::vector<float> rows(size_t(ni) * storedDim_);
    state_->copyRowsToHost(i0, ni, rows.data());
    for (int64_t v = 0; v < ni; ++v) {
        std::copy_n(rows.data() + size_t(v) * storedDim_, d, out + size_t(v) * d);
    }
}

size_t GpuIndexBang::deviceMemoryBytes() const {
    return state_->deviceBytes();
}

size_t GpuIndexBang::hostMemoryBytes() const {
    return state_->hostBytes();
}

bool GpuIndexBang::storesBytes() const {
    return !state_->vectorsOnHost() && state_->bytesStored();
}

size_t GpuIndexBang::traversalBytesPerVector() const {
    return pqMode() ? size_t(state_->pqSubquantizers()) : size_t(storedDim_) * sizeof(float);
}

int64_t GpuIndexBang::entryPoint() const {
    return state_->entry();
}

std::vector<float> GpuIndexBang::pqCentroids() const {
    DeviceScope scope(res_.device());
    return state_->pqCentroids();
}

std::vector<uint8_t> GpuIndexBang::pqCodes() const {
    DeviceScope scope(res_.device());
    return state_->pqCodes();
}

std::vector<int32_t> GpuIndexBang::graph() const {
    DeviceScope scope(res_.device());
    return state_->graph();
}

void GpuIndexBang::searchImpl_(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        const faiss::SearchParameters* params) const {
    if (metric_type != faiss::METRIC_INNER_PRODUCT) {
        searchStored_(n, xDevice, k, distancesDevice, labelsDevice, params);
        return;
    }
    // The transformed queries searched in L2, the results made inner products.
    auto padded = res_.alloc<float>(size_t(n) * storedDim_);
    kernels::bangPadQueries(xDevice, n, d, storedDim_, padded.data(), res_.stream());
    searchStored_(n, padded.data(), k, distancesDevice, labelsDevice, params);
    kernels::bangInnerProductsFromL2(
            xDevice, n, d, ipNormSq_, k, distancesDevice, labelsDevice, res_.stream());
}

void GpuIndexBang::searchStored_(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        const faiss::SearchParameters* params) const {
    const int L = searchL_(params, k);
    const BangEntry entry = searchEntry_(params);
    IdSlots slots;
    slots.nslots = nodeCount();
    const auto bits = filterCache().resolve(
            params ? params->sel : nullptr, slots, state_->deviceTombstones());
    if (!bits || nodeCount() == 0) {
        state_->search(xDevice, n, k, L, distancesDevice, labelsDevice, nullptr, nullptr, entry);
        return;
    }
    const int64_t allowed = filterCache().countAllowed(*bits, nodeCount());
    if (allowed == 0) {
        kernels::fillMissingResults(
                distancesDevice, labelsDevice, n * k, kernels::DistanceFinish::kL2, res_.stream());
        return;
    }
    const BangFilterPlan plan = planBangFilteredSearchOnDevice(
            allowed, nodeCount(), L, k, graphDegree(), storedDim_, state_->pqSubquantizers(),
            kMaxSearchL, res_.maxSharedMemoryPerBlock());
    if (plan.exact) {
        bangExactAllowed(
                res_, *state_, xDevice, n, k, bits->words.data(), allowed, distancesDevice,
                labelsDevice);
        return;
    }
    state_->search(
            xDevice, n, k, plan.walkL, distancesDevice, labelsDevice, nullptr, bits->words.data(),
            entry);
}

} // namespace faiss_ext
