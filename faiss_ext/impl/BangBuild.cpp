#include <faiss_ext/impl/BangBuild.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <faiss/IndexIVF.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangPruneGpu.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/PinnedStaging.h>
#include <kernels/BangSearch.h>

namespace faiss_ext {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Ids of the k nearest base rows of each query row (device arrays), paged through
/// host memory: out[q * k + j] (int64 as FlatSearch gives them). The build's large
/// copies to the host go through the pinned staging: pageable ones run at ~1.1 GB/s
/// (0.5 s for the ids of 1M vectors' 65 neighbours).
std::vector<int64_t> knnIds(
        const GpuResources& res,
        const float* queries,
        int64_t nq,
        const float* base,
        const float* baseNorms,
        int64_t nb,
        int d,
        int k,
        size_t pageBytes) {
    std::vector<int64_t> ids(size_t(nq) * k);
    const int64_t page =
            std::max<int64_t>(1, std::min<int64_t>(nq, int64_t(pageBytes / (size_t(k) * 12))));
    auto dDev = res.alloc<float>(size_t(page) * k);
    auto iDev = res.alloc<int64_t>(size_t(page) * k);
    for (int64_t q0 = 0; q0 < nq; q0 += page) {
        const int64_t m = std::min(page, nq - q0);
        FlatSearchInput in;
        in.queries = queries + size_t(q0) * d;
        in.nq = m;
        in.base = base;
        in.baseNorms = baseNorms;
        in.nb = nb;
        in.d = d;
        in.metric = faiss::METRIC_L2;
        flatSearch(res, in, k, dDev.data(), iDev.data());
        res.pinnedStaging().toHost(
                ids.data() + size_t(q0) * k, iDev.data(), size_t(m) * k * sizeof(int64_t),
                res.stream());
    }
    return ids;
}

/// Ids of approximately the k nearest stored vectors of each stored vector of
/// `storage` (xHost: the same vectors on the host): an IVF-Flat over nlist lists
/// (k-means on a sample of xHost), every vector searched with nprobe probes, in pages of
/// pageBytes of results. out[v * k + j], -1 where the probed lists hold fewer than k.
/// Reports the trained and filled IVF-Flat to `progress`.
std::vector<int64_t> ivfKnnIds(
        GpuResources& res,
        const FlatStorage& storage,
        const float* xHost,
        int k,
        int64_t nlist,
        int nprobe,
        size_t pageBytes,
        const Progress& progress) {
    const int64_t n = storage.size();
    const int d = storage.dim();
    GpuIndexIVFFlatConfig config;
    config.pageBytes = pageBytes;
    GpuIndexIVFFlat ivf(res, d, nlist, faiss::METRIC_L2, config);
    ivf.train(n, xHost);
    ivf.add(n, storage.vectors());
    progress.report("candidates: IVF-Flat trained and filled", 0.3);
    faiss::SearchParametersIVF params;
    params.nprobe = size_t(nprobe);
    std::vector<int64_t> ids(size_t(n) * k);
    const int64_t page =
            std::max<int64_t>(1, std::min<int64_t>(n, int64_t(pageBytes / (size_t(k) * 12))));
    auto dDev = res.alloc<float>(size_t(page) * k);
    auto iDev = res.alloc<int64_t>(size_t(page) * k);
    for (int64_t q0 = 0; q0 < n; q0 += page) {
        const int64_t m = std::min(page, n - q0);
        ivf.searchDevice(
                m, storage.vectors() + size_t(q0) * d, k, dDev.data(), iDev.data(), &params);
        res.pinnedStaging().toHost(
                ids.data() + size_t(q0) * k, iDev.data(), size_t(m) * k * sizeof(int64_t),
                res.stream());
    }
    return ids;
}

/// Stage 1's candidates: nearest neighbours (exact or from an IVF-Flat), nearest hubs,
/// hubs' nearest hubs.
BangCandidateLists firstCandidates(
        GpuResources& res,
        const FlatStorage& storage,
        const float* xHost,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress) {
    const int64_t n = storage.size();
    const int d = storage.dim();
    const int K = int(std::min<int64_t>(p.candidates, n - 1));
    const int64_t H = bangHubCount(n, p.hubs);
    const int hubK = int(std::min<int64_t>(kBangHubsPerNode, H));
    const int hubHubK = int(std::min<int64_t>(kBangHubsPerHub + 1, H));

    std::vector<int64_t> nn;
    const int64_t ivfLists = bangCandidateLists(n, p.candidateLists);
    if (K > 0 && ivfLists == 0) {
        nn =
                knnIds(res, storage.vectors(), n, storage.vectors(), storage.norms(), n, d, K + 1,
                       pageBytes);
    } else if (K > 0) {
        nn = ivfKnnIds(
                res, storage, xHost, K + 1, ivfLists, p.candidateProbes, pageBytes, progress);
    }
    progress.report(
            ivfLists == 0 ? "candidates: exact nearest neighbours"
                          : "candidates: IVF-Flat "
                            "nearest neighbours",
            0.7);
    std::vector<int64_t> hubIds(static_cast<size_t>(H));
    std::vector<float> hubX(size_t(H) * d);
    for (int64_t h = 0; h < H; ++h) {
        hubIds[h] = h * n / H;
        std::copy_n(xHost + size_t(hubIds[h]) * d, d, hubX.data() + size_t(h) * d);
    }
    FlatStorage hubs(res, d);
    hubs.append(H, hubX.data());
    const std::vector<int64_t> toHub =
            knnIds(res, storage.vectors(), n, hubs.vectors(), hubs.norms(), H, d, hubK, pageBytes);
    const std::vector<int64_t> hubToHub =
            knnIds(res, hubs.vectors(), H, hubs.vectors(), hubs.norms(), H, d, hubHubK, pageBytes);
    progress.report("candidates: nearest hubs", 0.8);

    BangCandidateLists lists;
    lists.ids.reserve(size_t(n) * (K + hubK) + size_t(H) * hubHubK);
    std::vector<int32_t> row;
    int64_t nextHub = 0; // hubIds is increasing
    for (int64_t v = 0; v < n; ++v) {
        row.clear();
        for (int j = 0; j < K + 1 && K > 0; ++j) {
            row.push_back(int32_t(nn[size_t(v) * (K + 1) + j]));
        }
        for (int j = 0; j < hubK; ++j) {
            const int64_t h = toHub[size_t(v) * hubK + j];
            row.push_back(h >= 0 ? int32_t(hubIds[h]) : -1);
        }
        if (nextHub < H && hubIds[nextHub] == v) {
            for (int j = 0; j < hubHubK; ++j) {
                const int64_t o = hubToHub[size_t(nextHub) * hubHubK + j];
                row.push_back(o >= 0 ? int32_t(hubIds[o]) : -1);
            }
            ++nextHub;
        }
        lists.append(row.data(), row.size());
    }
    return lists;
}

int64_t medoidOf(
        const GpuResources& res,
        const FlatStorage& storage,
        const float* xHost,
        size_t pageBytes) {
    const int64_t n = storage.size();
    const int d = storage.dim();
    std::vector<double> sum(static_cast<size_t>(d), 0.0);
    for (int64_t v = 0; v < n; ++v) {
        const float* xv = xHost + size_t(v) * d;
        for (int j = 0; j < d; ++j) {
            sum[j] += xv[j];
        }
    }
    std::vector<float> centroid(static_cast<size_t>(d));
    for (int j = 0; j < d; ++j) {
        centroid[j] = float(sum[j] / double(n));
    }
    auto cDev = res.alloc<float>(size_t(d));
    copyToDevice(cDev.data(), centroid.data(), size_t(d), res.stream());
    const std::vector<int64_t> m =
            knnIds(res, cDev.data(), 1, storage.vectors(), storage.norms(), n, d, 1, pageBytes);
    return m[0] >= 0 ? m[0] : 0;
}

/// One refinement pass's candidates: the parents each vector's search expanded in
/// `graph` (set in `work` with the medoid as entry), plus its current neighbours.
BangCandidateLists searchCandidates(
        const GpuResources& res,
        BangGraph& work,
        const std::vector<int32_t>& graph,
        int64_t medoid,
        const BangBuildConfig& p,
        size_t pageBytes,
        const Progress& progress) {
    const int64_t n = work.size();
    const int d = work.dim();
    const int R = p.graphDegree;
    const int maxVisited = 2 * p.searchL;
    work.setGraph(graph.data(), medoid);
    const kernels::BangGraphView g = work.exactView();

    const int64_t page = std::max<int64_t>(
            1, std::min<int64_t>(n, int64_t(pageBytes / (size_t(maxVisited + 3) * 4 + 8))));
    auto visitedDev = res.alloc<int32_t>(size_t(page) * maxVisited);
    auto itersDev = res.alloc<int32_t>(size_t(page));
    auto dDev = res.alloc<float>(size_t(page));
    auto iDev = res.alloc<int64_t>(size_t(page));
    std::vector<int32_t> visited(size_t(page) * maxVisited), iters(static_cast<size_t>(page));
    BangCandidateLists lists;
    lists.ids.reserve(size_t(n) * (p.searchL + R));
    for (int64_t q0 = 0; q0 < n; q0 += page) {
        kernels::BangSearchArgs a;
        a.queries = g.vectors + size_t(q0) * d;
        a.nq = std::min(page, n - q0);
        a.L = p.searchL;
        a.k = 1;
        a.outD = dDev.data();
        a.outI = iDev.data();
        a.iterations = itersDev.data();
        a.visited = visitedDev.data();
        a.maxVisited = maxVisited;
        kernels::bangSearchPersistent(g, a, res.stream());
        copyToHost(iters.data(), itersDev.data(), size_t(a.nq), res.stream());
        res.pinnedStaging().toHost(
                visited.data(), visitedDev.data(), size_t(a.nq) * maxVisited * sizeof(int32_t),
                res.stream());
        progress.report("searches: vectors searched", double(q0 + a.nq) / double(n) * 0.8);
        for (int64_t i = 0; i < a.nq; ++i) {
            const int count = std::min(iters[i], maxVisited);
            lists.ids.insert(
                    lists.ids.end(), visited.begin() + i * maxVisited,
                    visited.begin() + i * maxVisited + count);
            const int32_t* row = graph.data() + size_t(q0 + i) * R;
            lists.append(row, size_t(R));
        }
    }
    return lists;
}

} // namespace

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
        const Progress& progress) {
    const FlatStorage& storage = work.vectors();
    const int64_t n = storage.size();
    FAISS_ASSERT(
            n >= 1 && p.graphDegree == work.degree() && p.candidates >= 1 && p.passes >= 0 &&
            p.searchL >= 1);
    BangBuildTimes t;
    auto t0 = std::chrono::steady_clock::now();
    // Stages: candidates, first prune, then a search and a prune per pass.
    const int64_t stages = 2 + 2 * int64_t(p.passes);
    auto stage = [&](int64_t s) {
        return progress.part(double(s - 1) / double(stages), double(s) / double(stages));
    };
    BangCandidateLists first = firstCandidates(res, storage, xHost, p, pageBytes, stage(1));
    const int64_t medoid = medoidOf(res, storage, xHost, pageBytes);
    t.knnSeconds = secondsSince(t0);
    progress.step(
            bangCandidateLists(n, p.candidateLists) == 0 ? "graph: exact k-NN candidates, stage"
                                                         : "graph: IVF-Flat candidates, stage",
            1, stages);

    t0 = std::chrono::steady_clock::now();
    std::vector<int32_t> graph =
            pruneCandidateGraphGpu(res, storage, first, p.graphDegree, p.alpha, stage(2));
    t.pruneSeconds = secondsSince(t0);
    progress.step("graph: first prune, stage", 2, stages);
    for (int pass = 0; pass < p.passes; ++pass) {
        t0 = std::chrono::steady_clock::now();
        BangCandidateLists c =
                searchCandidates(res, work, graph, medoid, p, pageBytes, stage(3 + 2 * pass));
        t.searchSeconds += secondsSince(t0);
        progress.step(
                "graph: pass " + std::to_string(pass + 1) + " searches, stage", 3 + 2 * pass,
                stages);
        t0 = std::chrono::steady_clock::now();
        graph = pruneCandidateGraphGpu(
                res, storage, c, p.graphDegree, p.alpha, stage(4 + 2 * pass));
        t.pruneSeconds += secondsSince(t0);
        progress.step(
                "graph: pass " + std::to_string(pass + 1) + " prune, stage", 4 + 2 * pass, stages);
    }
    work.setGraph(graph.data(), medoid);
    return t;
}

} // namespace faiss_ext
