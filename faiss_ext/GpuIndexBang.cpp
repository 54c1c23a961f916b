#include <faiss_ext/GpuIndexBang.h>

#include <algorithm>
#include <climits>
#include <typeinfo>

#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangPq.h>
#include <kernels/BangPq.h>
#include <kernels/BangSearch.h>
#include <kernels/Distances.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

namespace {

GpuIndexBangConfig checkedConfig(const GpuIndexBangConfig& c, int d) {
    FAISS_THROW_IF_NOT_FMT(
            c.graphDegree >= 1 && c.graphDegree <= kernels::kBangMaxDegree,
            "graphDegree=%d is outside [1, %d]", c.graphDegree, kernels::kBangMaxDegree);
    FAISS_THROW_IF_NOT_FMT(
            c.alpha >= 1.f && c.alpha <= 1e6f, "alpha=%g is outside [1, 1e6]", double(c.alpha));
    FAISS_THROW_IF_NOT_FMT(
            c.buildCandidates >= 1 && c.buildCandidates <= 1024,
            "buildCandidates=%d is outside [1, 1024]", c.buildCandidates);
    FAISS_THROW_IF_NOT_FMT(
            c.buildHubs >= 0, "buildHubs=%lld must be >= 0 (0: automatic)",
            (long long)c.buildHubs);
    FAISS_THROW_IF_NOT_FMT(
            c.buildPasses >= 0 && c.buildPasses <= 16, "buildPasses=%d is outside [0, 16]",
            c.buildPasses);
    FAISS_THROW_IF_NOT_FMT(
            c.buildL >= 1 && c.buildL <= GpuIndexBang::kMaxSearchL,
            "buildL=%d is outside [1, %d]", c.buildL, GpuIndexBang::kMaxSearchL);
    checkBangPqSubquantizers(d, c.pqSubquantizers);
    return c;
}

faiss::MetricType checkedMetric(faiss::MetricType m) {
    FAISS_THROW_IF_NOT_FMT(
            m == faiss::METRIC_L2,
            "GpuIndexBang supports METRIC_L2 only (got metric %d): RobustPrune's alpha "
            "rule is defined for distances",
            int(m));
    return m;
}

} // namespace

GpuIndexBang::GpuIndexBang(
        GpuResources& resources,
        int d,
        faiss::MetricType metric,
        GpuIndexBangConfig config)
        : GpuIndex(resources, d, checkedMetric(metric), config),
          bangConfig_(checkedConfig(config, d)),
          storage_(resources, d) {
    // The largest worklist must fit; PQ mode adds its table (M KiB).
    const int M = config.pqSubquantizers;
    const size_t need = std::max(
            kernels::bangPersistentSmemBytes(kMaxSearchL, config.graphDegree, d, M),
            kernels::bangStepSmemBytes(kMaxSearchL, config.graphDegree, d, M));
    FAISS_THROW_IF_NOT_FMT(
            need <= resources.maxSharedMemoryPerBlock(),
            "d=%d, pqSubquantizers=%d is too large: the search would need %zu bytes of "
            "shared memory per block, the device allows %zu",
            d, M, need, resources.maxSharedMemoryPerBlock());
    is_trained = true;
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

int GpuIndexBang::requestedL_(const faiss::SearchParameters* params) const {
    auto p = dynamic_cast<const SearchParametersBang*>(params);
    return p ? p->search_L : search_L;
}

void GpuIndexBang::checkSearchParams_(const faiss::SearchParameters* params) const {
    GpuIndex::checkSearchParams_(params);
    FAISS_THROW_IF_NOT_FMT(
            params == nullptr || dynamic_cast<const SearchParametersBang*>(params) != nullptr ||
                    typeid(*params) == typeid(faiss::SearchParameters),
            "search: parameters of type %s are not faiss_ext::SearchParametersBang",
            typeid(*params).name());
    effectiveL(requestedL_(params), 1);
}

void GpuIndexBang::addImpl_(int64_t n, const float* x, const int64_t*) {
    const int64_t total = ntotal + n;
    FAISS_THROW_IF_NOT_FMT(
            total < INT_MAX, "add: %lld vectors in all; GpuIndexBang holds fewer than 2^31",
            (long long)total);
    // Everything is built aside; the index changes only once nothing can fail.
    std::vector<float> all(size_t(total) * d);
    if (ntotal > 0) {
        storage_.copyRowsToHost(0, ntotal, all.data());
    }
    std::copy_n(x, size_t(n) * d, all.data() + size_t(ntotal) * d);
    FlatStorage fresh(res_, d);
    fresh.append(total, all.data());
    BangBuildParams p;
    p.R = bangConfig_.graphDegree;
    p.alpha = bangConfig_.alpha;
    p.candidates = bangConfig_.buildCandidates;
    p.hubs = bangConfig_.buildHubs;
    p.passes = bangConfig_.buildPasses;
    p.buildL = bangConfig_.buildL;
    p.pageBytes = config_.pageBytes;
    FAISS_THROW_IF_NOT_FMT(
            !pqMode() || total >= kBangPqMinVectors,
            "add: PQ mode needs at least %lld vectors in all to train its 256-centroid "
            "codebooks (would hold %lld)",
            (long long)kBangPqMinVectors, (long long)total);
    BangBuildResult built = buildBangGraph(res_, fresh, all.data(), p);
    auto g = res_.alloc<int32_t>(built.graph.size());
    copyToDevice(g.data(), built.graph.data(), built.graph.size(), res_.stream());
    DeviceBuffer<float> centroids;
    DeviceBuffer<uint8_t> codes;
    if (pqMode()) {
        const BangPqTables t =
                trainBangPq(res_, total, d, bangConfig_.pqSubquantizers, all.data());
        centroids = res_.alloc<float>(t.centroids.size());
        copyToDevice(centroids.data(), t.centroids.data(), t.centroids.size(), res_.stream());
        codes = res_.alloc<uint8_t>(t.codes.size());
        copyToDevice(codes.data(), t.codes.data(), t.codes.size(), res_.stream());
    }

    storage_ = std::move(fresh);
    graph_ = std::move(g);
    pqCentroids_ = std::move(centroids);
    pqCodes_ = std::move(codes);
    entry_ = built.medoid;
    ntotal = total;
    lastKnnSeconds_ = built.knnSeconds;
    lastSearchSeconds_ = built.searchSeconds;
    lastPruneSeconds_ = built.pruneSeconds;
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
    const int R = bangConfig_.graphDegree;
    for (int64_t v = 0; v < n; ++v) {
        const int32_t* row = graph + size_t(v) * R;
        std::vector<int32_t> seen;
        for (int j = 0; j < R; ++j) {
            FAISS_THROW_IF_NOT_FMT(
                    row[j] >= -1 && row[j] < n,
                    "setGraph: neighbour %d of vector %lld is %d, outside [-1, %lld)", j,
                    (long long)v, row[j], (long long)n);
            if (row[j] >= 0) {
                seen.push_back(row[j]);
            }
        }
        std::sort(seen.begin(), seen.end());
        FAISS_THROW_IF_NOT_FMT(
                std::adjacent_find(seen.begin(), seen.end()) == seen.end(),
                "setGraph: vector %lld lists a neighbour twice", (long long)v);
    }
    DeviceScope scope(res_.device());
    checkHostPointer(x, "setGraph");
    checkHostPointer(graph, "setGraph graph");
    checkFinite(n, d, x, "setGraph");
    BangPqTables t;
    if (pqCentroids != nullptr) {
        checkHostPointer(pqCentroids, "setGraph PQ centroids");
        checkHostPointer(pqCodes, "setGraph PQ codes");
        t.centroids.assign(
                pqCentroids, pqCentroids + size_t(kernels::kBangPqCentroids) * d);
        checkFinite(kernels::kBangPqCentroids, d, t.centroids.data(), "setGraph PQ centroids");
        t.codes.assign(pqCodes, pqCodes + size_t(n) * M);
    } else if (pqMode()) {
        t = trainBangPq(res_, n, d, M, x);
    }
    FlatStorage fresh(res_, d);
    fresh.append(n, x);
    auto g = res_.alloc<int32_t>(size_t(n) * R);
    copyToDevice(g.data(), graph, size_t(n) * R, res_.stream());
    DeviceBuffer<float> centroids;
    DeviceBuffer<uint8_t> codes;
    if (pqMode()) {
        centroids = res_.alloc<float>(t.centroids.size());
        copyToDevice(centroids.data(), t.centroids.data(), t.centroids.size(), res_.stream());
        codes = res_.alloc<uint8_t>(t.codes.size());
        copyToDevice(codes.data(), t.codes.data(), t.codes.size(), res_.stream());
    }

    storage_ = std::move(fresh);
    graph_ = std::move(g);
    pqCentroids_ = std::move(centroids);
    pqCodes_ = std::move(codes);
    entry_ = entry;
    ntotal = n;
}

void GpuIndexBang::reset() {
    DeviceScope scope(res_.device());
    storage_.clear();
    graph_ = DeviceBuffer<int32_t>();
    pqCentroids_ = DeviceBuffer<float>();
    pqCodes_ = DeviceBuffer<uint8_t>();
    entry_ = 0;
    ntotal = 0;
}

void GpuIndexBang::reconstruct(int64_t key, float* recons) const {
    reconstruct_n(key, 1, recons);
}

void GpuIndexBang::reconstruct_n(int64_t i0, int64_t ni, float* recons) const {
    FAISS_THROW_IF_NOT_MSG(recons != nullptr, "reconstruct: null output pointer");
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && ni >= 1 && i0 <= ntotal - ni,
            "reconstruct: keys [%lld, %lld + %lld) are outside [0, %lld)", (long long)i0,
            (long long)i0, (long long)ni, (long long)ntotal);
    DeviceScope scope(res_.device());
    checkHostPointer(recons, "reconstruct");
    storage_.copyRowsToHost(i0, ni, recons);
}

size_t GpuIndexBang::deviceMemoryBytes() const {
    return storage_.deviceBytes() + graph_.bytes() + pqCentroids_.bytes() + pqCodes_.bytes();
}

size_t GpuIndexBang::traversalBytesPerVector() const {
    return pqMode() ? size_t(bangConfig_.pqSubquantizers) : size_t(d) * sizeof(float);
}

std::vector<float> GpuIndexBang::pqCentroids() const {
    DeviceScope scope(res_.device());
    return copyToHostVector(pqCentroids_.data(), pqCentroids_.size(), res_.stream());
}

std::vector<uint8_t> GpuIndexBang::pqCodes() const {
    DeviceScope scope(res_.device());
    return copyToHostVector(pqCodes_.data(), pqCodes_.size(), res_.stream());
}

std::vector<int32_t> GpuIndexBang::graph() const {
    DeviceScope scope(res_.device());
    return copyToHostVector(
            graph_.data(), size_t(ntotal) * bangConfig_.graphDegree, res_.stream());
}

void GpuIndexBang::searchImpl_(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        const faiss::SearchParameters* params) const {
    searchDevice(
            n, xDevice, k, distancesDevice, labelsDevice, effectiveL(requestedL_(params), k),
            bangConfig_.kernel);
}

void GpuIndexBang::searchDevice(
        int64_t n,
        const float* xDevice,
        int k,
        float* distancesDevice,
        int64_t* labelsDevice,
        int L,
        BangKernel kernel,
        int32_t* iterationsDevice) const {
    FAISS_THROW_IF_NOT_FMT(n >= 0, "search: n=%lld", (long long)n);
    FAISS_THROW_IF_NOT_FMT(
            L >= 1 && L <= kMaxSearchL, "search: L=%d is outside [1, %d]", L, kMaxSearchL);
    FAISS_THROW_IF_NOT_FMT(k >= 1 && k <= L, "search: k=%d is outside [1, L=%d]", k, L);
    if (n == 0) {
        return;
    }
    DeviceScope scope(res_.device());
    cudaStream_t stream = res_.stream();
    if (ntotal == 0) {
        kernels::fillMissingResults(
                distancesDevice, labelsDevice, n * k, kernels::DistanceFinish::kL2, stream);
        if (iterationsDevice) {
            FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(iterationsDevice, 0, size_t(n) * 4, stream));
        }
        return;
    }
    kernels::BangGraphView g;
    g.vectors = storage_.vectors();
    g.graph = graph_.data();
    g.n = ntotal;
    g.d = d;
    g.R = bangConfig_.graphDegree;
    g.entry = int32_t(entry_);
    if (pqMode()) {
        g.pqM = bangConfig_.pqSubquantizers;
        g.codes = pqCodes_.data();
        g.pqCentroids = pqCentroids_.data();
    }

    // Pages of queries: grid size for the persistent kernel, state memory for the
    // stepwise one.
    int64_t page = INT_MAX;
    DeviceBuffer<char> state;
    DeviceBuffer<int> flag;
    if (kernel == BangKernel::kStepwise) {
        const size_t perQuery = kernels::bangStepStateBytesPerQuery(L);
        page = std::max<int64_t>(1, int64_t(res_.tempMemoryBytes() / perQuery));
        page = std::min(page, n);
        state = res_.alloc<char>(size_t(page) * perQuery);
        flag = res_.alloc<int>(1);
    }
    for (int64_t q0 = 0; q0 < n; q0 += page) {
        kernels::BangSearchArgs a;
        a.queries = xDevice + size_t(q0) * d;
        a.nq = std::min(page, n - q0);
        a.L = L;
        a.k = k;
        a.outD = distancesDevice + size_t(q0) * k;
        a.outI = labelsDevice + size_t(q0) * k;
        a.iterations = iterationsDevice ? iterationsDevice + q0 : nullptr;
        if (kernel == BangKernel::kPersistent) {
            kernels::bangSearchPersistent(g, a, stream);
        } else {
            kernels::bangSearchStepwise(g, a, state.data(), state.bytes(), flag.data(), stream);
        }
    }
}

} // namespace faiss_ext
