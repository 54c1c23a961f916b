// GpuIndexBang: the GPU search against its CPU reference (same ids, distances and
// iterations), recall on clustered data, the graph the build makes, edge cases.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <kernels/BangCandidates.h>
#include <kernels/BangHubEntry.h>
#include <kernels/BangSearch.h>

#include "BangReference.h"
#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// GPU (both kernels) against the CPU reference on every query: same ids and
/// distances (bitwise) at every rank, same number of iterations.
void expectMatchesReference(
        const GpuIndexBang& index,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int L,
        int k) {
    const int d = index.d;
    const int64_t nq = int64_t(xq.size()) / d, nb = index.ntotal;
    const std::vector<float> table = distanceTable(index.resources(), xq, xb, d);
    const std::vector<int32_t> graph = index.graph();
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        DeviceResults got = searchWith(index, xq, k, L, kernel);
        int64_t bad = 0;
        for (int64_t q = 0; q < nq; ++q) {
            BangReferenceResult ref = bangReferenceSearch(
                    graph, index.graphDegree(), int32_t(index.entryPoint()), table.data() + q * nb,
                    L);
            bool same = ref.iterations == got.iters[q];
            for (int j = 0; j < k && same; ++j) {
                const bool has = j < int(ref.keys.size());
                const int64_t id = has ? kernels::bangKeyId(ref.keys[j]) : -1;
                const float dist = has ? kernels::bangKeyDist(ref.keys[j])
                                       : std::numeric_limits<float>::infinity();
                same = got.I[q * k + j] == id && got.D[q * k + j] == dist;
            }
            if (!same && bad++ < 3) {
                ADD_FAILURE() << "kernel " << int(kernel) << " L=" << L << " query " << q
                              << ": iterations " << got.iters[q] << " vs " << ref.iterations
                              << ", first id " << got.I[q * k] << " vs "
                              << (ref.keys.empty() ? -1 : kernels::bangKeyId(ref.keys[0]));
            }
        }
        EXPECT_EQ(bad, 0) << "kernel " << int(kernel) << " L=" << L << " k=" << k;
    }
}

double recallAt10(const std::vector<int64_t>& gt, const std::vector<int64_t>& I, int64_t nq) {
    int64_t hit = 0;
    for (int64_t q = 0; q < nq; ++q) {
        for (int j = 0; j < 10; ++j) {
            hit += std::count(gt.begin() + q * 10, gt.begin() + q * 10 + 10, I[q * 10 + j]);
        }
    }
    return double(hit) / double(nq * 10);
}

/// 100K x 32 clustered vectors (200 blobs, spread 0.1), 1000 queries and their exact 10
/// nearest (GpuIndexFlat). Under compute-sanitizer 200 vectors and 200 queries: the
/// builds are the time there (TenExtendsKeepTheRecallOfOneBuild's eleven).
struct Clustered100K {
    int d = 32;
    int64_t nb = smallUnderSanitizer(100000, 200), nq = smallUnderSanitizer(1000, 200);
    std::vector<float> xb, xq;
    std::vector<int64_t> gtI;
};

Clustered100K clustered100K(GpuResources& res) {
    Clustered100K c;
    datasets::ClusteredSpec spec{c.nb, c.d, 200, 0.1f, 99};
    c.xb = datasets::clustered(spec, 0);
    spec.n = c.nq;
    c.xq = datasets::clustered(spec, 1);
    GpuIndexFlat flat(res, c.d);
    flat.add(c.nb, c.xb.data());
    std::vector<float> gtD(c.nq * 10);
    c.gtI.resize(c.nq * 10);
    flat.search(c.nq, c.xq.data(), 10, gtD.data(), c.gtI.data());
    return c;
}

/// Nodes reachable from the entry point.
int64_t reachable(const std::vector<int32_t>& graph, int R, int64_t n, int64_t entry) {
    std::vector<char> seen(size_t(n), 0);
    std::queue<int64_t> frontier;
    frontier.push(entry);
    seen[entry] = 1;
    int64_t count = 1;
    while (!frontier.empty()) {
        const int64_t v = frontier.front();
        frontier.pop();
        for (int j = 0; j < R; ++j) {
            const int32_t u = graph[size_t(v) * R + j];
            if (u >= 0 && !seen[u]) {
                seen[u] = 1;
                ++count;
                frontier.push(u);
            }
        }
    }
    return count;
}

} // namespace

TEST(GpuIndexBang, MatchesCpuReferenceOnBuiltGraphs) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    // Under compute-sanitizer builds of 100 to 200 vectors, 8 queries.
    const int64_t least = smallUnderSanitizer(2000, 100);
    for (int d : {24, 13}) {
        const int64_t nb = least + int64_t(rng() % least);
        GpuIndexBangConfig cfg;
        cfg.build.graphDegree = d == 24 ? 16 : 40; // a power of two and not
        cfg.build.candidates = 48;
        GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
        datasets::ClusteredSpec spec{nb, d, 20, 0.1f, rng()};
        auto xb = datasets::clustered(spec, 0);
        spec.n = smallUnderSanitizer(100, 8);
        auto xq = datasets::clustered(spec, 1);
        index.add(nb, xb.data());
        SCOPED_TRACE("d=" + std::to_string(d) + " nb=" + std::to_string(nb));
        for (int L : {1, 8, 33, 100}) {
            expectMatchesReference(index, xb, xq, L, std::min(L, 10));
        }
    }
}

TEST(GpuIndexBang, MatchesCpuReferenceOnGivenGraphs) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 1);
    // Random graphs with holes (-1 anywhere in a row), self loops and unreachable parts.
    const int d = 8, R = 5;
    const int64_t nb = 500;
    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = R;
    GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
    auto xb = datasets::uniform(nb, d, rng());
    auto xq = datasets::uniform(50, d, rng());
    std::vector<int32_t> graph(size_t(nb) * R);
    for (int64_t v = 0; v < nb; ++v) {
        std::vector<int32_t> row;
        while (int(row.size()) < R) {
            int32_t id = int32_t(rng() % (nb + 100)) - 100; // some -1..-100 -> holes
            id = id < 0 ? -1 : id;
            if (id == -1 || std::find(row.begin(), row.end(), id) == row.end()) {
                row.push_back(id);
            }
        }
        std::copy(row.begin(), row.end(), graph.begin() + v * R);
    }
    index.setGraph(nb, xb.data(), graph.data(), 17);
    EXPECT_EQ(index.graph(), graph);
    EXPECT_EQ(index.entryPoint(), 17);
    for (int L : {3, 20, 64}) {
        expectMatchesReference(index, xb, xq, L, std::min(L, 10));
    }
}

TEST(GpuIndexBang, RecallOnClustered100KFromEitherCandidateSource) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const Clustered100K data = clustered100K(res);
    const int d = data.d, k = 10;
    const int64_t nb = data.nb, nq = data.nq;
    const std::vector<float>&xb = data.xb, &xq = data.xq;
    const std::vector<int64_t>& gtI = data.gtI;

    const std::vector<int> Ls{10, 20, 40, 60, 80, 100};
    std::vector<double> exactRecall;
    // The first candidates from the exact k-NN, then from IVF lists (sqrt(nb) of them).
    for (int64_t lists : {int64_t(0), int64_t(316)}) {
        GpuIndexBangConfig cfg;
        cfg.build.candidateLists = lists;
        GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
        index.add(nb, xb.data()); // the graph pruned on the GPU (impl/BangPruneGpu.h)
        std::printf(
                "candidate lists %lld: build k-NN %.2f s, searches %.2f s, prune %.2f s\n",
                (long long)lists, index.lastBuildKnnSeconds(), index.lastBuildSearchSeconds(),
                index.lastBuildPruneSeconds());
        const std::vector<int32_t> graph = index.graph();
        const int64_t reached = reachable(graph, index.graphDegree(), nb, index.entryPoint());
        std::printf(
                "%lld of %lld vectors reachable from the entry point\n", (long long)reached,
                (long long)nb);
        EXPECT_GE(reached, nb - nb / 1000);
        std::vector<float> D(nq * k);
        std::vector<int64_t> I(nq * k);
        double best = 0, previous = 0;
        for (size_t i = 0; i < Ls.size(); ++i) {
            SearchParametersBang params;
            params.search_L = Ls[i];
            index.search(nq, xq.data(), k, D.data(), I.data(), &params);
            const double r = recallAt10(gtI, I, nq);
            std::printf(
                    "GpuIndexBang 100K x %d clustered, candidate lists %lld: L=%d recall@10 "
                    "%.4f\n",
                    d, (long long)lists, Ls[i], r);
            EXPECT_GE(r, previous - 0.01) << "recall fell as L grew, L=" << Ls[i];
            if (lists == 0) {
                exactRecall.push_back(r);
            } else {
                EXPECT_GE(r, exactRecall[i] - 0.01)
                        << "IVF candidates lose recall against exact ones at L=" << Ls[i];
            }
            previous = r;
            best = std::max(best, r);
            for (int64_t q = 0; q < nq; ++q) {
                EXPECT_TRUE(std::is_sorted(D.begin() + q * k, D.begin() + (q + 1) * k));
            }
        }
        EXPECT_GE(best, 0.95);
        // The stepwise kernel walks the same way.
        DeviceResults a = searchWith(index, xq, k, 40, BangKernel::kPersistent);
        DeviceResults b = searchWith(index, xq, k, 40, BangKernel::kStepwise);
        EXPECT_EQ(a.I, b.I);
        EXPECT_EQ(a.D, b.D);
        EXPECT_EQ(a.iters, b.iters);
    }
}

// 100 blobs of 200 vectors in 512 dimensions: every vector of another blob is about as
// far as any other, so a greedy walk from the medoid cannot tell which way a query's blob
// lies. BangEntry::kNearestHub (the default) starts each walk at the query's nearest hub
// instead. Both ways of finding the hubs (BangHubPath) are checked against a CPU scan,
// and the search runs on each: 16 queries take the direct kernel, 200 the flat search.
// Under compute-sanitizer 25 blobs of 40 vectors in a graph of degree 8 (a walk's step
// reads R d floats: the time there), and 300 queries, which the flat search then needs
// (nq H d above 2^25): a blob holds none of the 252 hubs with probability e^(-10)
// (e^(-11) with 20000 vectors in 100 blobs).
TEST(GpuIndexBang, NearestHubEntryFindsSeparatedClusters) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 512, k = 10;
    const int64_t nb = smallUnderSanitizer(20000, 1000), nq = smallUnderSanitizer(200, 300),
                  nqSmall = 16;
    datasets::ClusteredSpec spec{nb, d, int(smallUnderSanitizer(100, 25)), 0.1f, 7};
    const std::vector<float> xb = datasets::clustered(spec, 0);
    spec.n = nq;
    std::vector<float> xq = datasets::clustered(spec, 1);
    GpuIndexFlat flat(res, d);
    flat.add(nb, xb.data());
    std::vector<float> gtD(nq * k);
    std::vector<int64_t> gtI(nq * k);
    flat.search(nq, xq.data(), k, gtD.data(), gtI.data());

    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = int(smallUnderSanitizer(64, 8));
    GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
    index.add(nb, xb.data());
    const int64_t H = bangEntryHubCount(nb);
    ASSERT_EQ(bangHubPathFor(nqSmall, H, d), BangHubPath::kDirect);
    ASSERT_EQ(bangHubPathFor(nq, H, d), BangHubPath::kFlat);

    // The hubs each path finds are each query's nearest by exact distance; a query with
    // a NaN has none.
    auto dist = [&](const std::vector<float>& queries, int64_t i, int64_t node) {
        double s = 0;
        for (int j = 0; j < d; ++j) {
            const double t = double(queries[i * d + j]) - xb[node * d + j];
            s += t * t;
        }
        return s;
    };
    std::vector<float> xqNan = xq;
    xqNan[3 * d + 5] = std::numeric_limits<float>::quiet_NaN();
    auto q = res.alloc<float>(xq.size());
    copyToDevice(q.data(), xqNan.data(), xqNan.size(), res.stream());
    std::vector<double> hubDist(nq);
    for (BangHubPath path : {BangHubPath::kDirect, BangHubPath::kFlat}) {
        SCOPED_TRACE(path == BangHubPath::kDirect ? "direct" : "flat");
        const DeviceBuffer<uint64_t> keys =
                GpuIndexBangAccess::deviceState(index).nearestHubs(q.data(), nq, path);
        std::vector<uint64_t> hostKeys(nq);
        copyToHost(hostKeys.data(), keys.data(), hostKeys.size(), res.stream());
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t hub = kernels::bangEntryHub(hostKeys[i]);
            if (i == 3) {
                EXPECT_EQ(hostKeys[i], kernels::kBangNoEntry);
                continue;
            }
            double best = std::numeric_limits<double>::infinity();
            for (int64_t h = 0; h < H; ++h) {
                best = std::min(best, dist(xq, i, kernels::bangHubNode(h, nb, H)));
            }
            ASSERT_GE(hub, 0);
            ASSERT_LT(hub, H);
            hubDist[i] = dist(xq, i, kernels::bangHubNode(hub, nb, H));
            EXPECT_LE(hubDist[i], best * (1 + 1e-4)) << "query " << i;
        }
    }

    for (int64_t n : {nqSmall, nq}) {
        SCOPED_TRACE(n);
        std::vector<float> D(n * k);
        std::vector<int64_t> I(n * k);
        std::vector<int64_t> gt(gtI.begin(), gtI.begin() + n * k);
        SearchParametersBang params;
        EXPECT_EQ(params.entry, BangEntry::kNearestHub);
        params.search_L = 40;
        index.search(n, xq.data(), k, D.data(), I.data(), &params);
        const double fromHub = recallAt10(gt, I, n);
        // No params: the index's own search_L (set to the same 40) and the same default
        // entry, so the same walks.
        index.search_L = params.search_L;
        index.search(n, xq.data(), k, D.data(), I.data());
        EXPECT_EQ(recallAt10(gt, I, n), fromHub);
        params.entry = BangEntry::kMedoid;
        index.search(n, xq.data(), k, D.data(), I.data(), &params);
        const double fromMedoid = recallAt10(gt, I, n);
        std::printf(
                "512-d separated blobs, %lld queries, L=40: recall@10 %.4f from the medoid, "
                "%.4f from the nearest hub\n",
                (long long)n, fromMedoid, fromHub);
        EXPECT_GE(fromHub, 0.9);
        EXPECT_GE(fromHub, fromMedoid - 0.01);
        // A walk of L = k = 1 ends no farther than where it starts: its query's hub.
        std::vector<float> D1(n);
        std::vector<int64_t> I1(n);
        params.entry = BangEntry::kNearestHub;
        params.search_L = 1;
        index.search(n, xq.data(), 1, D1.data(), I1.data(), &params);
        for (int64_t i = 0; i < n; ++i) {
            if (i != 3) {
                EXPECT_LE(D1[i], hubDist[i] * (1 + 1e-4) + 1e-3) << "query " << i;
            }
        }
    }
}

// Exact candidates, then IVF candidates from lists of ~5 vectors probed twice: each
// vector finds ~10 of the 65 it asks for, the rest of its row is -1. Under
// compute-sanitizer 300 vectors in 60 lists (every vector then has to be reachable).
TEST(GpuIndexBang, BuiltGraphIsWellFormedFromEitherCandidateSource) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16;
    const int64_t nb = smallUnderSanitizer(5000, 300);
    datasets::ClusteredSpec spec{nb, d, 50, 0.05f, 5};
    auto xb = datasets::clustered(spec, 0);
    // The entry point is the vector nearest the centroid.
    std::vector<double> c(d, 0.0);
    for (int64_t v = 0; v < nb; ++v) {
        for (int j = 0; j < d; ++j) {
            c[j] += xb[v * d + j];
        }
    }
    auto toCentroid = [&](int64_t v) {
        double s = 0;
        for (int j = 0; j < d; ++j) {
            const double t = xb[v * d + j] - c[j] / nb;
            s += t * t;
        }
        return s;
    };
    double bestDist = 1e300;
    for (int64_t v = 0; v < nb; ++v) {
        bestDist = std::min(bestDist, toCentroid(v));
    }
    for (int64_t lists : {int64_t(0), nb / 5}) {
        SCOPED_TRACE("candidate lists " + std::to_string(lists));
        GpuIndexBangConfig cfg;
        cfg.build.graphDegree = 24;
        cfg.build.candidateLists = lists;
        cfg.build.candidateProbes = 2;
        GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
        index.add(nb, xb.data());
        // Nothing of the build stays (the IVF lists of the candidates included).
        EXPECT_EQ(
                index.deviceMemoryBytes(),
                size_t(nb) * (d + 1) * 4 + size_t(nb) * 24 * 4 + entryHubBytes(nb, d));
        const std::vector<int32_t> g = index.graph();
        ASSERT_EQ(g.size(), size_t(nb) * 24);
        int64_t edges = 0;
        for (int64_t v = 0; v < nb; ++v) {
            std::vector<int32_t> row(g.begin() + v * 24, g.begin() + (v + 1) * 24);
            const auto end = std::find(row.begin(), row.end(), -1);
            EXPECT_TRUE(std::all_of(end, row.end(), [](int32_t x) { return x == -1; }))
                    << "row " << v << " is not padded at the end";
            EXPECT_GE(end - row.begin(), 1) << "vector " << v << " has no neighbour";
            edges += end - row.begin();
            for (auto it = row.begin(); it != end; ++it) {
                EXPECT_TRUE(*it >= 0 && *it < nb && *it != v) << "row " << v;
            }
            std::sort(row.begin(), end);
            EXPECT_EQ(std::adjacent_find(row.begin(), end), end) << "row " << v;
        }
        std::printf(
                "graph of %lld vectors, R=24, candidate lists %lld: mean degree %.1f\n",
                (long long)nb, (long long)lists, double(edges) / nb);
        EXPECT_GE(reachable(g, 24, nb, index.entryPoint()), nb - nb / 1000);
        // Nearest up to the float rounding of the GPU's GEMM-based distances.
        EXPECT_LE(toCentroid(index.entryPoint()), bestDist * (1 + 1e-4) + 1e-6);
    }
}

TEST(GpuIndexBang, KAboveSearchLRaisesL) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16;
    // Under compute-sanitizer 150 vectors: k = 50 still finds 50, and L = 1024 walks them all.
    const int64_t nb = smallUnderSanitizer(3000, 150);
    auto xb = datasets::uniform(nb, d, 8);
    auto xq = datasets::uniform(20, d, 9);
    GpuIndexBang index(res, d);
    index.add(nb, xb.data());
    const int k = 50;
    std::vector<float> D1(20 * k), D2(20 * k);
    std::vector<int64_t> I1(20 * k), I2(20 * k);
    index.search_L = 8; // below k: L becomes k, like faiss HNSW's max(efSearch, k)
    index.search(20, xq.data(), k, D1.data(), I1.data());
    SearchParametersBang params;
    params.search_L = k;
    index.search(20, xq.data(), k, D2.data(), I2.data(), &params);
    EXPECT_EQ(I1, I2);
    EXPECT_EQ(D1, D2);
    EXPECT_EQ(std::count(I1.begin(), I1.end(), int64_t(-1)), 0);
    EXPECT_EQ(GpuIndexBang::effectiveL(8, 50), 50);
    EXPECT_EQ(GpuIndexBang::effectiveL(100, 10), 100);
    // k above the largest worklist: refused with both numbers.
    std::vector<float> D(20 * 1025);
    std::vector<int64_t> I(20 * 1025);
    try {
        index.search(20, xq.data(), 1025, D.data(), I.data());
        FAIL() << "k=1025 accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("1025"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("1024"), std::string::npos) << e.what();
    }
    params.search_L = 1024;
    EXPECT_NO_THROW(index.search(2, xq.data(), 1024, D.data(), I.data(), &params));
}

TEST(GpuIndexBang, EmptySingleAndReset) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 12, k = 5;
    GpuIndexBang index(res, d);
    EXPECT_TRUE(index.is_trained);
    auto xq = datasets::uniform(3, d, 1);
    std::vector<float> D(3 * k, 7.f);
    std::vector<int64_t> I(3 * k, 7);
    const float inf = std::numeric_limits<float>::infinity();
    index.search(3, xq.data(), k, D.data(), I.data());
    for (int i = 0; i < 3 * k; ++i) {
        EXPECT_EQ(I[i], -1);
        EXPECT_EQ(D[i], inf);
    }
    auto one = datasets::uniform(1, d, 2);
    index.add(1, one.data());
    EXPECT_EQ(index.ntotal, 1);
    EXPECT_EQ(index.entryPoint(), 0);
    index.search(3, xq.data(), k, D.data(), I.data());
    for (int q = 0; q < 3; ++q) {
        EXPECT_EQ(I[q * k], 0);
        float s = 0;
        for (int j = 0; j < d; ++j) {
            s += (xq[q * d + j] - one[j]) * (xq[q * d + j] - one[j]);
        }
        EXPECT_NEAR(D[q * k], s, 1e-5f * (1 + s));
        for (int j = 1; j < k; ++j) {
            EXPECT_EQ(I[q * k + j], -1);
            EXPECT_EQ(D[q * k + j], inf);
        }
    }
    std::vector<float> back(d);
    index.reconstruct(0, back.data());
    EXPECT_EQ(back, one);
    index.reset();
    EXPECT_EQ(index.ntotal, 0);
    EXPECT_EQ(index.deviceMemoryBytes(), 0u);
    index.search(3, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(std::count(I.begin(), I.end(), int64_t(-1)), 3 * k);
}

TEST(GpuIndexBang, DuplicateVectors) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 20, copies = 4, k = 8;
    const int64_t distinct = smallUnderSanitizer(400, 200), nb = distinct * copies;
    auto base = datasets::uniform(distinct, d, 3);
    std::vector<float> xb;
    for (int c = 0; c < copies; ++c) {
        xb.insert(xb.end(), base.begin(), base.end()); // vector i at i, i + 400, ...
    }
    GpuIndexBang index(res, d);
    index.add(nb, xb.data());
    // Query the stored vectors: every copy is at distance 0.
    std::vector<float> D(distinct * k);
    std::vector<int64_t> I(distinct * k);
    SearchParametersBang params;
    params.search_L = 32;
    index.search(distinct, base.data(), k, D.data(), I.data(), &params);
    int64_t complete = 0;
    for (int64_t q = 0; q < distinct; ++q) {
        int zeros = 0;
        for (int j = 0; j < copies; ++j) {
            zeros += D[q * k + j] == 0.f && I[q * k + j] % distinct == q;
        }
        complete += zeros == copies;
        EXPECT_GT(D[q * k + copies], 0.f) << "query " << q;
    }
    std::printf(
            "duplicates: %lld of %lld queries found all %d copies\n", (long long)complete,
            (long long)distinct, copies);
    EXPECT_GE(complete, distinct * 98 / 100);
}

TEST(GpuIndexBang, NonFiniteQueriesGetMissingResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 4;
    const int64_t nb = smallUnderSanitizer(1000, 300);
    auto xb = datasets::uniform(nb, d, 4);
    auto xq = datasets::uniform(4, d, 5);
    GpuIndexBang index(res, d);
    index.add(nb, xb.data());
    std::vector<float> Dok(4 * k);
    std::vector<int64_t> Iok(4 * k);
    index.search(4, xq.data(), k, Dok.data(), Iok.data());
    xq[1 * d + 3] = std::nanf("");
    xq[2 * d + 0] = -std::numeric_limits<float>::infinity();
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        DeviceResults r = searchWith(index, xq, k, 64, kernel);
        for (int q : {1, 2}) {
            for (int j = 0; j < k; ++j) {
                EXPECT_EQ(r.I[q * k + j], -1);
                EXPECT_EQ(r.D[q * k + j], std::numeric_limits<float>::infinity());
            }
            EXPECT_EQ(r.iters[q], 0);
        }
        for (int q : {0, 3}) {
            for (int j = 0; j < k; ++j) {
                EXPECT_EQ(r.I[q * k + j], Iok[q * k + j]);
                EXPECT_EQ(r.D[q * k + j], Dok[q * k + j]);
            }
        }
    }
}

TEST(GpuIndexBang, SecondAddExtendsTheGraph) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, R = 24;
    // Under compute-sanitizer a graph of 160, then 2 new vectors (a bound of kept rows
    // that still says something: 160 - 2 R 3 = 16) and 78.
    const int64_t first = smallUnderSanitizer(2000, 160), second = smallUnderSanitizer(1500, 80),
                  few = smallUnderSanitizer(20, 2), total = first + second;
    auto xa = datasets::uniform(first, d, 6);
    auto xb = datasets::uniform(second, d, 7);
    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = R;
    GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
    index.add(first, xa.data());
    const std::vector<int32_t> before = index.graph();
    const int64_t entry = index.entryPoint();
    // 20 new vectors: only the old rows they point at may change (re-pruned with them),
    // at most 20 R of the 2000 (more in-edges come with each pass, but still from them).
    index.add(few, xb.data());
    ASSERT_EQ(index.ntotal, first + few);
    EXPECT_EQ(index.entryPoint(), entry);
    const std::vector<int32_t> after = index.graph();
    int64_t kept = 0;
    for (int64_t u = 0; u < first; ++u) {
        kept += std::equal(
                after.begin() + u * R, after.begin() + (u + 1) * R, before.begin() + u * R);
    }
    std::printf(
            "old rows kept %lld of %lld after %lld new vectors\n", (long long)kept,
            (long long)first, (long long)few);
    EXPECT_GE(kept, first - few * R * (1 + cfg.build.passes));
    EXPECT_LT(kept, first);
    index.add(second - few, xb.data() + few * d);
    ASSERT_EQ(index.ntotal, total);
    std::vector<float> v(d);
    index.reconstruct(first + second / 2, v.data());
    EXPECT_TRUE(std::equal(v.begin(), v.end(), xb.begin() + second / 2 * d));
    const std::vector<int32_t> g = index.graph();
    for (int64_t u = 0; u < total; ++u) {
        std::vector<int32_t> row(g.begin() + u * R, g.begin() + (u + 1) * R);
        const auto end = std::find(row.begin(), row.end(), -1);
        EXPECT_TRUE(std::all_of(end, row.end(), [](int32_t x) { return x == -1; }))
                << "row " << u << " is not padded at the end";
        EXPECT_GE(end - row.begin(), 1) << "vector " << u << " has no neighbour";
        for (auto it = row.begin(); it != end; ++it) {
            EXPECT_TRUE(*it >= 0 && *it < total && *it != u) << "row " << u;
        }
        std::sort(row.begin(), end);
        EXPECT_EQ(std::adjacent_find(row.begin(), end), end) << "row " << u;
    }
    // Every stored vector finds itself.
    std::vector<float> all(xa);
    all.insert(all.end(), xb.begin(), xb.end());
    std::vector<float> D(total);
    std::vector<int64_t> I(total);
    index.search(total, all.data(), 1, D.data(), I.data());
    int64_t self = 0;
    for (int64_t i = 0; i < total; ++i) {
        self += I[i] == i;
    }
    EXPECT_GE(self, total * 99 / 100);
    // After a removal the next add rebuilds over what remains (ids compacted).
    faiss::IDSelectorRange removed(0, 10);
    EXPECT_EQ(index.remove_ids(removed), 10u);
    index.add(10, xa.data());
    EXPECT_EQ(index.ntotal, total);
    EXPECT_EQ(index.nodeCount(), total);
    index.reconstruct(0, v.data());
    EXPECT_TRUE(std::equal(v.begin(), v.end(), xa.begin() + 10 * d));
}

// The criterion: a graph built on half the vectors and extended ten times by
// 10% of them searches as well as one build over all of them. Under compute-sanitizer
// (200 vectors, extends of 10) both graphs of degree 32, and L 10 and 40.
TEST(GpuIndexBang, TenExtendsKeepTheRecallOfOneBuild) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const Clustered100K data = clustered100K(res);
    const int d = data.d, k = 10;
    const int64_t nb = data.nb, nq = data.nq, base = nb / 2, step = base / 10;
    const std::vector<float>&xb = data.xb, &xq = data.xq;
    const std::vector<int64_t>& gtI = data.gtI;

    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = int(smallUnderSanitizer(cfg.build.graphDegree, 32));
    GpuIndexBang once(res, d, faiss::METRIC_L2, cfg);
    once.add(nb, xb.data());
    GpuIndexBang extended(res, d, faiss::METRIC_L2, cfg);
    extended.add(base, xb.data());
    for (int64_t i0 = base; i0 < nb; i0 += step) {
        extended.add(step, xb.data() + i0 * d);
        std::printf(
                "extend to %lld: searches %.3f s, prune %.3f s\n", (long long)(i0 + step),
                extended.lastBuildSearchSeconds(), extended.lastBuildPruneSeconds());
    }
    ASSERT_EQ(extended.ntotal, nb);
    EXPECT_GE(
            reachable(extended.graph(), extended.graphDegree(), nb, extended.entryPoint()),
            nb - nb / 1000);
    std::vector<float> D(nq * k);
    std::vector<int64_t> I(nq * k);
    const std::vector<int> Ls =
            underSanitizer() ? std::vector<int>{10, 40} : std::vector<int>{10, 20, 40, 80};
    for (int L : Ls) {
        SearchParametersBang params;
        params.search_L = L;
        once.search(nq, xq.data(), k, D.data(), I.data(), &params);
        const double rOnce = recallAt10(gtI, I, nq);
        extended.search(nq, xq.data(), k, D.data(), I.data(), &params);
        const double rExtended = recallAt10(gtI, I, nq);
        std::printf(
                "L=%d recall@10: one build %.4f, built on half + ten extends %.4f\n", L, rOnce,
                rExtended);
        EXPECT_GE(rExtended, rOnce - 0.01) << "L=" << L;
    }
}
