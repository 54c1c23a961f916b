#include <faiss_ext/impl/BangGraph.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangPq.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <kernels/BangCandidates.h>
#include <kernels/BangHubEntry.h>
#include <kernels/BangPq.h>
#include <kernels/Distances.h>
#include <kernels/GatherRows.h>
#include <kernels/IdFilter.h>

namespace faiss_ext {

namespace {

/// gatherRows from device rows of either storage.
void gatherDeviceRows(
        const BangRows& rows,
        const int64_t* ids,
        int64_t n,
        float* out,
        cudaStream_t stream) {
    if (rows.isBytes()) {
        kernels::gatherRows(rows.bytes(), ids, n, rows.dim(), out, stream);
    } else {
        kernels::gatherRows(rows.floats(), ids, n, rows.dim(), out, stream);
    }
}

/// The rows (as floats) and norms of the bangEntryHubCount(n) entry hubs of n device
/// rows.
FlatStorage entryHubRows(const GpuResources& res, const BangRows& rows) {
    FlatStorage hubs(res, rows.dim());
    const int64_t n = rows.size();
    if (n == 0) {
        return hubs;
    }
    const int64_t H = bangEntryHubCount(n);
    auto idx = res.alloc<int64_t>(size_t(H));
    kernels::bangHubRows(n, H, idx.data(), res.stream());
    auto x = res.alloc<float>(size_t(H) * rows.dim());
    gatherDeviceRows(rows, idx.data(), H, x.data(), res.stream());
    hubs.append(H, x.data());
    return hubs;
}

} // namespace

BangGraph::BangGraph(const GpuResources& res, int d, int R, int pqM, BangVectorStorage storage)
        : res_(&res), R_(R), pqM_(pqM), storage_(storage), vectors_(res, d), hubs_(res, d) {}

void BangGraph::setVectors(int64_t n, const float* x) {
    BangRows fresh(*res_, dim());
    fresh.assign({{n, x, nullptr}}, storage_);
    setVectors(std::move(fresh));
}

void BangGraph::setVectors(const BangGraph& first, int64_t n, const float* x) {
    const BangRows::Source firstRows = first.vectorsOnHost()
            ? BangRows::Source{first.size(), first.hostRows(), nullptr}
            : first.vectors_.source();
    BangRows fresh(*res_, dim());
    fresh.assign({firstRows, {n, x, nullptr}}, storage_);
    setVectors(std::move(fresh));
}

void BangGraph::setVectors(BangRows rows) {
    FAISS_ASSERT(rows.dim() == dim());
    FlatStorage hubs = entryHubRows(*res_, rows);
    vectors_ = std::move(rows);
    hostRows_ = MappedHostBuffer<float>();
    hubs_ = std::move(hubs);
    dropGraph_();
}

void BangGraph::setVectorsOnHost(int64_t n, const float* x) {
    MappedHostBuffer<float> rows(size_t(n) * dim(), res_->stream());
    std::copy_n(x, rows.size(), rows.data());
    setVectorsOnHost(std::move(rows));
}

void BangGraph::setVectorsOnHost(MappedHostBuffer<float> rows) {
    const int d = dim();
    FAISS_ASSERT(rows.size() % size_t(d) == 0);
    const int64_t n = int64_t(rows.size() / size_t(d));
    FlatStorage hubs(*res_, d);
    if (n > 0) {
        const int64_t H = bangEntryHubCount(n);
        hubs.append(H, bangHubRowsOf(rows.data(), n, d, H).data());
    }
    vectors_.clear();
    hostRows_ = std::move(rows);
    hubs_ = std::move(hubs);
    dropGraph_();
}

void BangGraph::dropGraph_() {
    graph_ = DeviceBuffer<int32_t>();
    pqCentroids_ = DeviceBuffer<float>();
    pqCodes_ = DeviceBuffer<uint8_t>();
    entry_ = 0;
    clearTombstones_();
}

void BangGraph::placeVectorsOnHost() {
    if (vectorsOnHost() || size() == 0) {
        return;
    }
    MappedHostBuffer<float> rows(size_t(size()) * dim(), res_->stream());
    vectors_.copyRowsToHost(0, size(), rows.data());
    hostRows_ = std::move(rows);
    vectors_.clear();
}

void BangGraph::copyRowsToHost(int64_t i0, int64_t n, float* out) const {
    if (!vectorsOnHost()) {
        vectors_.copyRowsToHost(i0, n, out);
        return;
    }
    FAISS_THROW_IF_NOT_FMT(
            i0 >= 0 && n >= 0 && i0 + n <= size(), "rows [%lld, %lld) are outside [0, %lld)",
            (long long)i0, (long long)(i0 + n), (long long)size());
    std::copy_n(hostRows_.data() + size_t(i0) * dim(), size_t(n) * dim(), out);
}

void BangGraph::clearTombstones_() {
    tombHost_.clear();
    tombDev_ = DeviceBuffer<uint32_t>();
    tombCount_ = 0;
}

void BangGraph::setTombstones(const std::vector<uint32_t>& words, int64_t count) {
    FAISS_ASSERT(int64_t(words.size()) == kernels::idFilterWords(size()));
    if (count == 0) {
        clearTombstones_();
        return;
    }
    auto dev = res_->alloc<uint32_t>(words.size());
    copyToDevice(dev.data(), words.data(), words.size(), res_->stream());
    std::vector<uint32_t> host = words;
    tombDev_ = std::move(dev);
    tombHost_ = std::move(host);
    tombCount_ = count;
}

void BangGraph::setGraph(const int32_t* graph, int64_t entry) {
    FAISS_ASSERT(entry >= 0 && entry < size());
    const size_t count = size_t(size()) * R_;
    if (graph_.size() != count) {
        graph_ = res_->alloc<int32_t>(count);
    }
    copyToDevice(graph_.data(), graph, count, res_->stream());
    entry_ = entry;
}

void BangGraph::setGraph(DeviceBuffer<int32_t> graph, int64_t entry) {
    FAISS_ASSERT(entry >= 0 && entry < size());
    FAISS_ASSERT(graph.size() == size_t(size()) * R_);
    graph_ = std::move(graph);
    entry_ = entry;
}

void BangGraph::releaseGraph() {
    graph_ = DeviceBuffer<int32_t>();
}

void BangGraph::setPq(const BangPqTables& tables) {
    auto centroids = res_->alloc<float>(tables.centroids.size());
    auto codes = res_->alloc<uint8_t>(tables.codes.size());
    copyToDevice(
            centroids.data(), tables.centroids.data(), tables.centroids.size(), res_->stream());
    copyToDevice(codes.data(), tables.codes.data(), tables.codes.size(), res_->stream());
    setPq(std::move(centroids), std::move(codes));
}

void BangGraph::setPq(DeviceBuffer<float> centroids, DeviceBuffer<uint8_t> codes) {
    FAISS_ASSERT(pqM_ > 0);
    FAISS_ASSERT(centroids.size() == size_t(kernels::kBangPqCentroids) * dim());
    FAISS_ASSERT(codes.size() == size_t(size()) * pqM_);
    pqCentroids_ = std::move(centroids);
    pqCodes_ = std::move(codes);
}

void checkGraphRows(
        const int32_t* ids,
        int64_t v0,
        int64_t rows,
        int R,
        int64_t n,
        const char* what) {
    std::vector<int32_t> seen;
    seen.reserve(size_t(R));
    for (int64_t v = 0; v < rows; ++v) {
        const int32_t* row = ids + size_t(v) * R;
        seen.clear();
        for (int j = 0; j < R; ++j) {
            FAISS_THROW_IF_NOT_FMT(
                    row[j] >= -1 && row[j] < n,
                    "%s: neighbour %d of vector %lld is %d, outside [-1, %lld)", what, j,
                    (long long)(v0 + v), row[j], (long long)n);
            if (row[j] >= 0) {
                seen.push_back(row[j]);
            }
        }
        std::sort(seen.begin(), seen.end());
        FAISS_THROW_IF_NOT_FMT(
                std::adjacent_find(seen.begin(), seen.end()) == seen.end(),
                "%s: vector %lld lists a neighbour twice", what, (long long)(v0 + v));
    }
}

void BangGraph::clear() {
    vectors_.clear();
    hostRows_ = MappedHostBuffer<float>();
    hubs_.clear();
    dropGraph_();
}

void BangGraph::gatherRows(const int64_t* ids, int64_t n, float* out) const {
    if (vectorsOnHost()) {
        kernels::gatherRows(hostRows_.deviceData(), ids, n, dim(), out, res_->stream());
    } else {
        gatherDeviceRows(vectors_, ids, n, out, res_->stream());
    }
}

kernels::BangGraphView BangGraph::exactView() const {
    FAISS_ASSERT(size() >= 1 && graph_.size() == size_t(size()) * R_);
    kernels::BangGraphView g;
    g.vectors = vectorsOnHost() ? hostRows_.deviceData() : vectors_.floats();
    g.byteVectors = vectorsOnHost() ? nullptr : vectors_.bytes();
    g.graph = graph_.data();
    g.n = size();
    g.d = dim();
    g.R = R_;
    g.entry = int32_t(entry_);
    return g;
}

kernels::BangGraphView BangGraph::view() const {
    FAISS_ASSERT(pqM_ == 0 || pqCodes_.size() == size_t(size()) * pqM_);
    kernels::BangGraphView g = exactView();
    g.pqM = pqM_;
    g.codes = pqCodes_.data();
    g.pqCentroids = pqCentroids_.data();
    return g;
}

void BangGraph::search(
        const float* queries,
        int64_t nq,
        int k,
        int L,
        float* outD,
        int64_t* outI,
        int32_t* iterations,
        const uint32_t* allow,
        BangEntry entry) const {
    cudaStream_t stream = res_->stream();
    if (size() == 0) {
        kernels::fillMissingResults(outD, outI, nq * k, kernels::DistanceFinish::kL2, stream);
        if (iterations) {
            FAISS_EXT_CUDA_CHECK(
                    cudaMemsetAsync(iterations, 0, size_t(nq) * sizeof(int32_t), stream));
        }
        return;
    }
    const kernels::BangGraphView g = view();
    const int64_t hubs = entry == BangEntry::kNearestHub ? hubs_.size() : 0;
    const DeviceBuffer<uint64_t> entryKeys = hubs > 0
            ? nearestHubs(queries, nq, bangHubPathFor(nq, hubs, dim()))
            : DeviceBuffer<uint64_t>();
    // One block per query: pages of at most INT_MAX blocks.
    for (int64_t q0 = 0; q0 < nq; q0 += INT_MAX) {
        kernels::BangSearchArgs a;
        a.queries = queries + size_t(q0) * g.d;
        a.nq = std::min<int64_t>(INT_MAX, nq - q0);
        a.L = L;
        a.k = k;
        a.outD = outD + size_t(q0) * k;
        a.outI = outI + size_t(q0) * k;
        a.iterations = iterations ? iterations + q0 : nullptr;
        a.allow = allow;
        a.entryKeys = hubs > 0 ? entryKeys.data() + q0 : nullptr;
        a.hubs = hubs;
        kernels::bangSearchPersistent(g, a, stream);
    }
}

int64_t bangEntryHubCount(int64_t n) {
    // Twice the build's 4 sqrt(n) hubs: on data of c well separated clusters of random
    // sizes, a cluster holds none of H evenly spaced nodes with probability ~e^(-H / c)
    // and its queries then start in another one (500K x 768, 1000 blobs: 6% of the
    // queries at 4 sqrt(n), 0.5% at 8 sqrt(n); benchs/NOTES.md).
    return std::min<int64_t>(n, std::max<int64_t>(1, int64_t(8 * std::sqrt(double(n)))));
}

BangHubPath bangHubPathFor(int64_t nq, int64_t H, int d) {
    // The direct kernel reads every hub row for every query (from L2 after the first):
    // below ~2^25 multiply-adds it beats the flat search's ~6 launches; above, the
    // flat search's GEMM shares each hub row among the queries of a tile.
    return double(nq) * double(H) * d <= double(1 << 25) ? BangHubPath::kDirect
                                                         : BangHubPath::kFlat;
}

DeviceBuffer<uint64_t> BangGraph::nearestHubs(const float* queries, int64_t nq, BangHubPath path)
        const {
    const GpuResources& res = *res_;
    cudaStream_t stream = res.stream();
    const int d = dim();
    const int64_t H = hubs_.size();
    FAISS_ASSERT(H >= 1);
    auto keys = res.alloc<uint64_t>(size_t(nq));
    if (path == BangHubPath::kDirect) {
        kernels::bangNearestHubsDirect(hubs_.vectors(), d, H, queries, nq, keys.data(), stream);
        return keys;
    }
    auto hubOf = res.alloc<int64_t>(size_t(nq));
    auto dist = res.alloc<float>(size_t(nq));
    FlatSearchInput in;
    in.queries = queries;
    in.nq = nq;
    in.base = hubs_.vectors();
    in.baseNorms = hubs_.norms();
    in.nb = H;
    in.d = d;
    in.metric = faiss::METRIC_L2;
    // A start needs no exact order: tensor cores (3xTF32) for the product, which at
    // 10000 x 8000 x 128 is most of this search in FP32.
    in.precision = GpuFlatPrecision::kTF32x3;
    flatSearch(res, in, 1, dist.data(), hubOf.data());
    kernels::bangEntryKeys(dist.data(), hubOf.data(), nq, keys.data(), stream);
    return keys;
}

std::vector<int32_t> BangGraph::graph() const {
    return copyToHostVector(graph_.data(), graph_.size(), res_->stream());
}

std::vector<float> BangGraph::pqCentroids() const {
    return copyToHostVector(pqCentroids_.data(), pqCentroids_.size(), res_->stream());
}

std::vector<uint8_t> BangGraph::pqCodes() const {
    return copyToHostVector(pqCodes_.data(), pqCodes_.size(), res_->stream());
}

size_t BangGraph::deviceBytes() const {
    return vectors_.deviceBytes() + hubs_.deviceBytes() + graph_.bytes() + pqCentroids_.bytes() +
            pqCodes_.bytes() + tombDev_.bytes();
}

} // namespace faiss_ext
