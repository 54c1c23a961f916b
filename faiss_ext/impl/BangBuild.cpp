#include <faiss_ext/impl/BangBuild.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangPruneGpu.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/IvfSelfKnn.h>
#include <faiss_ext/impl/ResourcesAccess.h>
#include <faiss_ext/utils/CudaCheck.h>
#include <kernels/BangCandidates.h>
#include <kernels/BangSearch.h>
#include <kernels/IvfSelfKnn.h>

namespace faiss_ext {

namespace {

/// Times the phases of a build: each lap adds the seconds since the previous one, taken
/// once the device has done the work queued on `stream`.
class PhaseClock {
   public:
    explicit PhaseClock(cudaStream_t stream)
            : stream_(stream), t0_(std::chrono::steady_clock::now()) {}

    void lap(double& seconds) {
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const auto now = std::chrono::steady_clock::now();
        seconds += std::chrono::duration<double>(now - t0_).count();
        t0_ = now;
    }

   private:
    cudaStream_t stream_;
    std::chrono::steady_clock::time_point t0_;
};

/// Device float rows of a view a page at a time: the view's own rows when stored as
/// floats, else converted into one page buffer. Float and byte rows are read in the same
/// pages, so that both give the same searches.
class FloatPages {
   public:
    /// Pages of at most `page` rows.
    FloatPages(const BangRowsView& rows, int64_t page)
            : rows_(rows),
              buffer_(rows.res->alloc<float>(rows.isBytes() ? size_t(page) * rows.dim() : 0)) {}

    /// Rows [i0, i0 + m) as floats (m at most the page).
    const float* rows(int64_t i0, int64_t m) {
        if (!rows_.isBytes()) {
            return rows_.floats() + size_t(i0) * rows_.dim();
        }
        rows_.toDeviceFloats(i0, m, buffer_.data());
        return buffer_.data();
    }

   private:
    BangRowsView rows_;
    DeviceBuffer<float> buffer_;
};

/// Query rows a page of knnIds takes: pageBytes of distances, or of float rows.
int64_t knnPageRows(int64_t nq, int d, int k, size_t pageBytes) {
    const size_t perRow = std::max(size_t(k), size_t(d)) * 4;
    return std::max<int64_t>(1, std::min<int64_t>(nq, int64_t(pageBytes / perRow)));
}

/// Ids of the k nearest base rows of each query row, all in device memory: nq x k
/// (int64 as FlatSearch gives them), searched in pages of pageBytes of distances or of
/// float queries.
DeviceBuffer<int64_t> knnIds(
        const GpuResources& res,
        const BangRowsView& queries,
        const float* base,
        const float* baseNorms,
        int64_t nb,
        int k,
        size_t pageBytes) {
    const int64_t nq = queries.size();
    const int d = queries.dim();
    auto ids = res.alloc<int64_t>(size_t(nq) * k);
    const int64_t page = knnPageRows(nq, d, k, pageBytes);
    auto dDev = res.alloc<float>(size_t(page) * k);
    FloatPages pages(queries, page);
    for (int64_t q0 = 0; q0 < nq; q0 += page) {
        FlatSearchInput in;
        in.nq = std::min(page, nq - q0);
        in.queries = pages.rows(q0, in.nq);
        in.base = base;
        in.baseNorms = baseNorms;
        in.nb = nb;
        in.d = d;
        in.metric = faiss::METRIC_L2;
        flatSearch(res, in, k, dDev.data(), ids.data() + size_t(q0) * k);
    }
    return ids;
}

/// The K1 nearest of the n vectors `vectors` (device rows, floats or bytes) to each of
/// them (itself included), n x K1 int32 in device memory: exact, or from IVF lists
/// (ivfSelfKnn) when bangCandidateLists(n, p.candidateLists) says so (trainX: the same
/// rows, host or device).
DeviceBuffer<int32_t> nearestAmong(
        GpuResources& res,
        const BangRowsView& vectors,
        const float* trainX,
        int K1,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress) {
    const int64_t n = vectors.size();
    const int64_t lists = bangCandidateLists(n, p.candidateLists);
    DeviceBuffer<int32_t> nn;
    if (lists == 0) {
        // Every row is a base row of every page: rows stored as bytes are converted whole
        // (the exact k-NN is for small n: kBangIvfCandidatesFrom).
        DeviceBuffer<float> converted =
                res.alloc<float>(vectors.isBytes() ? size_t(n) * vectors.dim() : 0);
        const float* base = vectors.floats();
        if (vectors.isBytes()) {
            vectors.toDeviceFloats(0, n, converted.data());
            base = converted.data();
        }
        const DeviceBuffer<int64_t> exact =
                knnIds(res, vectors, base, vectors.norms(), n, K1, pageBytes);
        nn = res.alloc<int32_t>(exact.size());
        kernels::narrowIds(exact.data(), int64_t(exact.size()), nn.data(), res.stream());
    } else {
        // TF32 products: the candidates need only be near (the prunes measure exact
        // distances), and the k-NN's GEMMs take 2.3x less time (10M x 128 in one page:
        // 2.3 -> 1.0 s, the graph's recall@10 unchanged; on byte data such as SIFT the
        // products are exact; benchs/NOTES.md, thirtieth session).
        nn = ivfSelfKnn(
                res, vectors, trainX, K1, lists, p.candidateProbes, kernels::GemmProduct::kTF32,
                pageBytes, progress.part(0, 0.7));
    }
    progress.reportAfter(
            res.stream(),
            lists == 0 ? "candidates: exact nearest neighbours"
                       : "candidates: IVF lists' nearest neighbours",
            0.7);
    return nn;
}

/// Stage 1's candidates, in device memory: nearest neighbours (exact or from IVF
/// lists), nearest hubs, hubs' nearest hubs (kernels::bangFillFirstCandidates); and
/// in `order` the nodes grouped by their nearest hub (bangLocalityOrder), the order of
/// every prune of the build.
BangDeviceCandidates firstCandidates(
        GpuResources& res,
        const BangRows& storage,
        const float* xHost,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress,
        std::vector<int32_t>& order) {
    const int64_t n = storage.size();
    const int d = storage.dim();
    const int K1 = n > 1 ? int(std::min<int64_t>(p.candidates, n - 1)) + 1 : 0;
    const int64_t H = bangHubCount(n, p.hubs);
    const int hubK = int(std::min<int64_t>(kBangHubsPerNode, H));
    const int hubHubK = int(std::min<int64_t>(kBangHubsPerHub + 1, H));

    DeviceBuffer<int32_t> nn;
    if (K1 > 0) {
        nn = nearestAmong(res, storage.view(), xHost, K1, p, pageBytes, progress);
    }
    BangRows hubs(res, d);
    hubs.assign({{H, bangHubRowsOf(xHost, n, d, H).data(), nullptr}}, BangVectorStorage::kFloat);
    const DeviceBuffer<int64_t> toHub =
            knnIds(res, storage.view(), hubs.floats(), hubs.norms(), H, hubK, pageBytes);
    progress.reportAfter(res.stream(), "candidates: each vector's nearest hubs", 0.75);
    const DeviceBuffer<int64_t> hubToHub =
            knnIds(res, hubs.view(), hubs.floats(), hubs.norms(), H, hubHubK, pageBytes);
    progress.reportAfter(res.stream(), "candidates: the hubs' nearest hubs", 0.8);
    // Each node's nearest hub: column 0 of toHub.
    std::vector<int64_t> nearestHub(static_cast<size_t>(n));
    FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
            nearestHub.data(), sizeof(int64_t), toHub.data(), size_t(hubK) * sizeof(int64_t),
            sizeof(int64_t), size_t(n), cudaMemcpyDeviceToHost, res.stream()));
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(res.stream()));
    order = bangLocalityOrder(nearestHub, H);

    BangDeviceCandidates lists;
    lists.offsets.assign(size_t(n) + 1, 0);
    for (int64_t v = 0; v < n; ++v) {
        const bool isHub = kernels::bangHubOf(v, n, H) >= 0;
        lists.offsets[size_t(v) + 1] = lists.offsets[size_t(v)] + K1 + hubK + (isHub ? hubHubK : 0);
    }
    auto offsetsDev = res.alloc<int64_t>(lists.offsets.size());
    copyToDevice(offsetsDev.data(), lists.offsets.data(), lists.offsets.size(), res.stream());
    lists.ids = res.alloc<int32_t>(size_t(lists.offsets.back()));
    kernels::bangFillFirstCandidates(
            nn.data(), K1, toHub.data(), hubK, hubToHub.data(), hubHubK, n, H, offsetsDev.data(),
            lists.ids.data(), res.stream());
    return lists;
}

/// The row nearest the rows' centroid (the first of the nearest page's on a tie between
/// pages), the rows searched in pages of pageBytes of float rows.
int64_t medoidOf(const GpuResources& res, const BangRows& storage, size_t pageBytes) {
    const int64_t n = storage.size();
    const int d = storage.dim();
    auto partial = res.alloc<double>(size_t(kernels::kBangCentroidChunks) * d);
    auto cDev = res.alloc<float>(size_t(d));
    if (storage.isBytes()) {
        kernels::bangCentroid(storage.bytes(), n, d, partial.data(), cDev.data(), res.stream());
    } else {
        kernels::bangCentroid(storage.floats(), n, d, partial.data(), cDev.data(), res.stream());
    }
    const int64_t page = knnPageRows(n, d, 1, pageBytes);
    FloatPages pages(storage.view(), page);
    auto dist = res.alloc<float>(1);
    auto id = res.alloc<int64_t>(1);
    int64_t medoid = -1;
    float best = 0.f;
    for (int64_t b0 = 0; b0 < n; b0 += page) {
        FlatSearchInput in;
        in.queries = cDev.data();
        in.nq = 1;
        in.nb = std::min(page, n - b0);
        in.base = pages.rows(b0, in.nb);
        in.baseNorms = storage.norms() + b0;
        in.d = d;
        in.metric = faiss::METRIC_L2;
        flatSearch(res, in, 1, dist.data(), id.data());
        float pageDist = 0.f;
        int64_t pageId = -1;
        copyToHost(&pageDist, dist.data(), 1, res.stream());
        copyToHost(&pageId, id.data(), 1, res.stream());
        if (pageId >= 0 && (medoid < 0 || pageDist < best)) {
            medoid = b0 + pageId;
            best = pageDist;
        }
    }
    return medoid >= 0 ? medoid : 0;
}

/// The parents each of nq device queries expanded searching graph g from its entry
/// point with worklist L: visited (nq x maxVisited, a query's first min(iterations,
/// maxVisited)) and iterations (nq).
struct VisitedParents {
    DeviceBuffer<int32_t> visited;
    DeviceBuffer<int32_t> iterations;
};

VisitedParents searchVisited(
        const GpuResources& res,
        const kernels::BangGraphView& g,
        const float* queries,
        int64_t nq,
        int L,
        int maxVisited) {
    VisitedParents out{res.alloc<int32_t>(size_t(nq) * maxVisited), res.alloc<int32_t>(size_t(nq))};
    auto dDev = res.alloc<float>(size_t(nq));
    auto iDev = res.alloc<int64_t>(size_t(nq));
    kernels::BangSearchArgs a;
    a.queries = queries;
    a.nq = nq;
    a.L = L;
    a.k = 1;
    a.outD = dDev.data();
    a.outI = iDev.data();
    a.iterations = out.iterations.data();
    a.visited = out.visited.data();
    a.maxVisited = maxVisited;
    kernels::bangSearchPersistent(g, a, res.stream());
    return out;
}

/// Offsets (device and host) of lists of nq search's parents plus `extra` entries each
/// (kernels::bangPassOffsets), with the lists' ids allocated.
std::pair<BangDeviceCandidates, DeviceBuffer<int64_t>> allocateParentLists(
        const GpuResources& res,
        const VisitedParents& parents,
        int64_t nq,
        int maxVisited,
        int extra) {
    BangDeviceCandidates lists;
    auto counts = res.alloc<int64_t>(size_t(nq));
    auto offsets = res.alloc<int64_t>(size_t(nq) + 1);
    auto temp = res.alloc<char>(kernels::bangPassOffsetsTempBytes(nq));
    kernels::bangPassOffsets(
            parents.iterations.data(), nq, maxVisited, extra, counts.data(), offsets.data(),
            temp.data(), temp.size(), res.stream());
    lists.offsets.resize(size_t(nq) + 1);
    GpuResourcesAccess::pinnedStaging(res).toHost(
            lists.offsets.data(), offsets.data(), offsets.bytes(), res.stream());
    lists.ids = res.alloc<int32_t>(size_t(lists.offsets.back()));
    return {std::move(lists), std::move(offsets)};
}

/// Rows [v0, v0 + m) of `rows` as float queries in device memory: the rows themselves,
/// or (stored as bytes) converted into `converted`.
const float* queryRows(
        const GpuResources& res,
        const BangRows& rows,
        int64_t v0,
        int64_t m,
        DeviceBuffer<float>& converted) {
    if (!rows.isBytes()) {
        return rows.floats() + size_t(v0) * rows.dim();
    }
    converted = res.alloc<float>(size_t(m) * rows.dim());
    rows.view(v0, m).toDeviceFloats(0, m, converted.data());
    return converted.data();
}

/// One refinement pass's candidates of nodes v0 .. v0 + m - 1, in device memory: the
/// parents each one's search expanded in the graph `work` holds (from its entry point),
/// plus its current neighbours (kernels::bangFillPassCandidates).
BangDeviceCandidates searchCandidates(
        const GpuResources& res,
        const BangGraph& work,
        const BangBuildConfig& p,
        int64_t v0,
        int64_t m) {
    const int R = p.graphDegree;
    const int maxVisited = 2 * p.searchL;
    const kernels::BangGraphView g = work.exactView();
    DeviceBuffer<float> converted;
    const VisitedParents parents = searchVisited(
            res, g, queryRows(res, work.vectors(), v0, m, converted), m, p.searchL, maxVisited);
    auto [lists, offsets] = allocateParentLists(res, parents, m, maxVisited, R);
    kernels::bangFillPassCandidates(
            parents.visited.data(), parents.iterations.data(), maxVisited, g.graph + size_t(v0) * R,
            R, m, offsets.data(), lists.ids.data(), res.stream());
    return std::move(lists);
}

} // namespace

std::vector<int32_t> bangLocalityOrder(const std::vector<int64_t>& cell, int64_t cells) {
    // A counting sort; a cell outside [0, cells) counts as cell `cells`.
    std::vector<int64_t> start(size_t(cells) + 2, 0);
    auto cellOf = [&](size_t v) { return cell[v] >= 0 && cell[v] < cells ? cell[v] : cells; };
    for (size_t v = 0; v < cell.size(); ++v) {
        ++start[size_t(cellOf(v)) + 1];
    }
    for (size_t c = 1; c < start.size(); ++c) {
        start[c] += start[c - 1];
    }
    std::vector<int32_t> order(cell.size());
    for (size_t v = 0; v < cell.size(); ++v) {
        order[size_t(start[size_t(cellOf(v))]++)] = int32_t(v);
    }
    return order;
}

std::vector<float> bangHubRowsOf(const float* x, int64_t n, int d, int64_t H) {
    std::vector<float> rows(size_t(H) * d);
    for (int64_t h = 0; h < H; ++h) {
        std::copy_n(x + size_t(kernels::bangHubNode(h, n, H)) * d, d, rows.data() + size_t(h) * d);
    }
    return rows;
}

int64_t bangPassNodes(int64_t n, const BangBuildConfig& p, size_t tempMemoryBytes) {
    const size_t perNode = bangPassBytesPerNode(p);
    return std::max<int64_t>(1, std::min<int64_t>(n, int64_t(tempMemoryBytes / perNode)));
}

size_t bangPassBytesPerNode(const BangBuildConfig& p) {
    // Visited parents (2 searchL ids), the search's iterations, distance and id, the
    // lists' counts and offsets, and the lists (2 searchL + R ids at most).
    const size_t visited = 2 * size_t(p.searchL);
    return visited * 4 + (4 + 4 + 8 + 8 + 8) + (visited + size_t(p.graphDegree)) * 4;
}

int64_t bangHubCount(int64_t n, int64_t requested) {
    if (requested > 0) {
        return std::min(requested, n);
    }
    return std::min<int64_t>(n, std::max<int64_t>(1, int64_t(4 * std::sqrt(double(n)))));
}

int64_t bangCandidateLists(int64_t n, int64_t requested) {
    if (requested >= 0) {
        return std::min(requested, n);
    }
    if (n < kBangIvfCandidatesFrom) {
        return 0;
    }
    return std::max<int64_t>(1, std::llround(std::sqrt(double(n))));
}

BangBuildTimes buildBangGraph(
        GpuResources& res,
        BangGraph& work,
        const float* xHost,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress,
        int64_t passNodes) {
    const BangRows& storage = work.vectors();
    const int64_t n = storage.size();
    FAISS_ASSERT(
            n >= 1 && p.graphDegree == work.degree() && p.candidates >= 1 && p.passes >= 0 &&
            p.searchL >= 1 && passNodes >= 0);
    BangBuildTimes t;
    PhaseClock clock(res.stream());
    // Stages: candidates, first prune, then a search and a prune per pass.
    const int64_t stages = 2 + 2 * int64_t(p.passes);
    auto stage = [&](int64_t s) {
        return progress.part(double(s - 1) / double(stages), double(s) / double(stages));
    };
    DeviceBuffer<int32_t> graph;
    int64_t medoid = 0;
    std::vector<int32_t> order;
    {
        BangDeviceCandidates first =
                firstCandidates(res, storage, xHost, p, pageBytes, stage(1), order);
        stage(1).reportAfter(res.stream(), "candidates: lists filled", 0.9);
        medoid = medoidOf(res, storage, pageBytes);
        clock.lap(t.knnSeconds);
        progress.step(
                bangCandidateLists(n, p.candidateLists) == 0 ? "graph: exact k-NN candidates, stage"
                                                             : "graph: IVF candidates, stage",
                1, stages);
        graph = pruneCandidateGraphOnDevice(
                res, storage, std::move(first), p.graphDegree, p.alpha, stage(2), nullptr, 0,
                &order);
        clock.lap(t.pruneSeconds);
        progress.step("graph: first prune, stage", 2, stages);
    }
    // Each pass searches and prunes its nodes in ranges whose lists fit the temporary
    // memory (bangPassNodes): every search reads the pass's starting graph and every
    // prune writes the new one, so the ranges change the peak, not the graph.
    const int64_t range =
            passNodes > 0 ? std::min(passNodes, n) : bangPassNodes(n, p, res.tempMemoryBytes());
    std::vector<int64_t> bounds;
    for (int64_t v0 = 0; v0 < n; v0 += range) {
        bounds.push_back(v0);
    }
    bounds.push_back(n);
    // Each range's nodes in the locality order, split once for every pass.
    const std::vector<std::vector<int32_t>> rangeOrders =
            p.passes > 0 ? splitOrderByRanges(order, bounds) : std::vector<std::vector<int32_t>>();
    for (int pass = 0; pass < p.passes; ++pass) {
        work.setGraph(std::move(graph), medoid);
        DeviceBuffer<int32_t> next = res.alloc<int32_t>(size_t(n) * p.graphDegree);
        for (size_t r = 0; r + 1 < bounds.size(); ++r) {
            const int64_t v0 = bounds[r], m = bounds[r + 1] - v0;
            const BangDeviceCandidates c = searchCandidates(res, work, p, v0, m);
            clock.lap(t.searchSeconds);
            pruneCandidatesInto(
                    res, storage, c, p.graphDegree, p.alpha, v0, &rangeOrders[r], next.data());
            clock.lap(t.pruneSeconds);
        }
        stage(3 + 2 * pass).report("searches: vectors searched", 0.8);
        progress.step(
                "graph: pass " + std::to_string(pass + 1) + " searches, stage", 3 + 2 * pass,
                stages);
        stage(4 + 2 * pass).report("prune: candidates pruned", 0.4);
        // The searches are done: the graph they walked is not read again (the reverse
        // edges read the new one), and its n x R ids make room for the reverse edges'.
        work.releaseGraph();
        pruneWithReverseEdges(
                res, storage, p.graphDegree, p.alpha, 0, &order, next.data(), stage(4 + 2 * pass));
        graph = std::move(next);
        clock.lap(t.pruneSeconds);
        progress.step(
                "graph: pass " + std::to_string(pass + 1) + " prune, stage", 4 + 2 * pass, stages);
    }
    work.setGraph(std::move(graph), medoid);
    return t;
}

BangBuildTimes extendBangGraph(
        GpuResources& res,
        BangGraph& work,
        const BangGraph& old,
        const float* newX,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress) {
    const BangRows& storage = work.vectors();
    const int64_t n = storage.size(), oldN = old.size(), m = n - oldN;
    FAISS_ASSERT(
            oldN >= 1 && m >= 1 && p.graphDegree == work.degree() && old.degree() == work.degree());
    BangBuildTimes t;
    PhaseClock clock(res.stream());
    DeviceBuffer<float> converted;
    const float* newRows = queryRows(res, storage, oldN, m, converted);
    // Stages: the first links (k-NN, searches, prune), then one per pass.
    const double stages = 1.0 + p.passes;
    // The new vectors' nearest among themselves: what the old graph cannot offer them.
    const int K1 = m > 1 ? int(std::min<int64_t>(p.candidates, m - 1)) + 1 : 0;
    DeviceBuffer<int32_t> nn;
    if (K1 > 0) {
        nn = nearestAmong(
                res, storage.view(oldN, m), newX, K1, p, pageBytes, progress.part(0, 0.3 / stages));
    }
    clock.lap(t.knnSeconds);
    // Their routes through the old graph, over work's first oldN rows (the old rows, on
    // the device whatever old's placement).
    kernels::BangGraphView g = old.exactView();
    g.vectors = storage.floats();
    g.byteVectors = storage.bytes();
    const int maxVisited = 2 * p.searchL;
    const VisitedParents parents = searchVisited(res, g, newRows, m, p.searchL, maxVisited);
    auto [lists, offsets] = allocateParentLists(res, parents, m, maxVisited, K1);
    kernels::bangFillExtendCandidates(
            parents.visited.data(), parents.iterations.data(), maxVisited, nn.data(), K1, oldN, m,
            offsets.data(), lists.ids.data(), res.stream());
    clock.lap(t.searchSeconds);
    progress.reportAfter(
            res.stream(), "extension: new vectors searched in the graph", 0.5 / stages);
    DeviceBuffer<int32_t> graph = pruneCandidateGraphOnDevice(
            res, storage, std::move(lists), p.graphDegree, p.alpha,
            progress.part(0.5 / stages, 1 / stages), g.graph, oldN);
    clock.lap(t.pruneSeconds);
    // Vamana passes over the new nodes only: each searched again in the extended graph,
    // its row re-pruned with the parents it expanded there (new nodes among them).
    const int R = p.graphDegree;
    for (int pass = 0; pass < p.passes; ++pass) {
        work.setGraph(std::move(graph), old.entry());
        const kernels::BangGraphView all = work.exactView();
        const VisitedParents again = searchVisited(res, all, newRows, m, p.searchL, maxVisited);
        auto [passLists, passOffsets] = allocateParentLists(res, again, m, maxVisited, R);
        kernels::bangFillPassCandidates(
                again.visited.data(), again.iterations.data(), maxVisited,
                all.graph + size_t(oldN) * R, R, m, passOffsets.data(), passLists.ids.data(),
                res.stream());
        clock.lap(t.searchSeconds);
        graph = pruneCandidateGraphOnDevice(
                res, storage, std::move(passLists), R, p.alpha,
                progress.part((1 + pass) / stages, (2 + pass) / stages), all.graph, oldN);
        clock.lap(t.pruneSeconds);
    }
    work.setGraph(std::move(graph), old.entry());
    return t;
}

} // namespace faiss_ext
