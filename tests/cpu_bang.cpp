// GpuIndexBang's host parts: RobustPrune, the graph assembly, the sort keys, the PQ
// mode's host rules and arithmetic, and the index file payload.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangInnerProduct.h>
#include <faiss_ext/impl/BangMemory.h>
#include <faiss_ext/impl/BangPq.h>
#include <faiss_ext/impl/BangPrune.h>
#include <faiss_ext/impl/BangPruneGpu.h>
#include <faiss_ext/impl/HostMemory.h>
#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/impl/IvfSelfKnn.h>
#include <kernels/BangBloom.h>
#include <kernels/BangCandidates.h>
#include <kernels/BangPq.h>
#include <kernels/BangPrune.h>

#include "FlippedBytes.h"
#include "LegacyIndexFiles.h"
#include "TestUtil.h"

using namespace faiss_ext;

namespace {

std::vector<BangCandidate> candidatesOf(
        const std::vector<float>& x,
        int d,
        int self,
        const std::vector<int32_t>& ids) {
    std::vector<BangCandidate> c;
    for (int32_t id : ids) {
        c.push_back({bangL2Sqr(&x[size_t(self) * d], &x[size_t(id) * d], d), id});
    }
    std::sort(c.begin(), c.end());
    return c;
}

/// Three vectors of d = 4 and their degree-2 graph, exact mode.
BangImage smallImage() {
    BangImage im;
    im.d = 4;
    im.config.build.graphDegree = 2;
    im.ntotal = 3;
    im.entry = 2;
    im.vectors = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    im.graph = {1, -1, 0, 2, 1, -1};
    return im;
}

} // namespace

TEST(BangPrune, RobustPruneOnALine) {
    // 1-d points: node 0 at 0; 1 at 1, 2 at 2, 3 at 3, 4 at -1, 5 at -2.5.
    const std::vector<float> x = {0.f, 1.f, 2.f, 3.f, -1.f, -2.5f};
    auto c = candidatesOf(x, 1, 0, {1, 2, 3, 4, 5});
    // alpha 1.2 (squared distances): 1 is taken and hides 2 (1.2 * 1 <= 4) and 3
    // (1.2 * 4 <= 9) but not 4 (1.2 * 4 > 1); 4 hides 5 (1.2 * 2.25 <= 6.25).
    EXPECT_EQ(robustPrune(x.data(), 1, c, 1.2f, 10), (std::vector<int32_t>{1, 4}));
    // A huge alpha hides nothing: the candidates by distance, then id (1 and 4 tie).
    EXPECT_EQ(robustPrune(x.data(), 1, c, 1e6f, 10), (std::vector<int32_t>{1, 4, 2, 5, 3}));
    // The degree cap.
    EXPECT_EQ(robustPrune(x.data(), 1, c, 1e6f, 3), (std::vector<int32_t>{1, 4, 2}));
    EXPECT_TRUE(robustPrune(x.data(), 1, c, 1.2f, 0).empty());
    EXPECT_TRUE(robustPrune(x.data(), 1, {}, 1.2f, 5).empty());
}

TEST(BangPrune, RobustPruneConsidersTheClosestFourRCandidates) {
    // 1-d: node 0 at 0, a group of eight at 1.0 .. 1.7 (the nearest hides the others)
    // and one point at -5, the farthest, which nothing hides.
    const std::vector<float> x = {0.f, 1.f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f, -5.f};
    auto c = candidatesOf(x, 1, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    static_assert(kernels::kBangPruneWalkPerEdge == 4, "the cases below count 4 R");
    // R 3 walks 12 candidates: the far point is selected.
    EXPECT_EQ(robustPrune(x.data(), 1, c, 1.2f, 3), (std::vector<int32_t>{1, 9}));
    // R 2 walks the closest 8 only: the far point is never considered.
    EXPECT_EQ(robustPrune(x.data(), 1, c, 1.2f, 2), (std::vector<int32_t>{1}));
}

TEST(BangPrune, RobustPruneKeepsDiverseDirections) {
    // 2-d: node 0 at the origin, a tight group to the east and one point to the west.
    const std::vector<float> x = {0, 0, 1, 0, 1.1f, 0.1f, 1.2f, -0.1f, -1.5f, 0};
    auto c = candidatesOf(x, 2, 0, {1, 2, 3, 4});
    // alpha 1: the east group collapses onto its nearest; the west point stays.
    EXPECT_EQ(robustPrune(x.data(), 2, c, 1.f, 4), (std::vector<int32_t>{1, 4}));
}

TEST(BangPrune, GraphRowsAreSortedUniqueAndSymmetricWithoutPruning) {
    std::mt19937_64 rng(faiss_ext::test::testSeed());
    const int d = 3, K = 6;
    const int64_t n = 40;
    std::vector<float> x(size_t(n) * d);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (float& v : x) {
        v = u(rng);
    }
    // Candidates: K random ids with repeats, self and -1 thrown in.
    std::vector<int32_t> cand(size_t(n) * K);
    for (int64_t v = 0; v < n; ++v) {
        for (int j = 0; j < K; ++j) {
            const int r = int(rng() % (n + 2));
            cand[v * K + j] = r == n ? -1 : r == n + 1 ? int32_t(v) : r;
        }
    }
    // R >= n and a huge alpha: nothing is pruned, so the graph is the candidate graph
    // made symmetric.
    BangCandidateLists lists;
    for (int64_t v = 0; v < n; ++v) {
        lists.append(cand.data() + v * K, size_t(K));
    }
    const int R = int(n);
    std::vector<int32_t> g = pruneCandidateGraph(x.data(), n, d, lists, R, 1e9f);
    for (int64_t v = 0; v < n; ++v) {
        std::vector<int32_t> expect;
        for (int j = 0; j < K; ++j) {
            if (cand[v * K + j] >= 0 && cand[v * K + j] != v) {
                expect.push_back(cand[v * K + j]);
            }
        }
        for (int64_t u2 = 0; u2 < n; ++u2) {
            for (int j = 0; j < K; ++j) {
                if (cand[u2 * K + j] == v && u2 != v) {
                    expect.push_back(int32_t(u2));
                }
            }
        }
        std::sort(expect.begin(), expect.end());
        expect.erase(std::unique(expect.begin(), expect.end()), expect.end());
        std::vector<int32_t> row(g.begin() + v * R, g.begin() + (v + 1) * R);
        const auto end = std::find(row.begin(), row.end(), -1);
        std::vector<int32_t> got(row.begin(), end);
        EXPECT_TRUE(std::all_of(end, row.end(), [](int32_t a) { return a == -1; }));
        // Ascending (distance, id).
        auto dist = [&](int32_t a) { return bangL2Sqr(&x[v * d], &x[size_t(a) * d], d); };
        for (size_t i = 1; i < got.size(); ++i) {
            EXPECT_TRUE(
                    dist(got[i - 1]) < dist(got[i]) ||
                    (dist(got[i - 1]) == dist(got[i]) && got[i - 1] < got[i]));
        }
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, expect) << "row " << v;
    }
    // With a small R every row is capped and still free of self loops and repeats.
    std::vector<int32_t> small = pruneCandidateGraph(x.data(), n, d, lists, 3, 1.2f);
    for (int64_t v = 0; v < n; ++v) {
        std::vector<int32_t> row(small.begin() + v * 3, small.begin() + (v + 1) * 3);
        for (int32_t a : row) {
            EXPECT_NE(a, v);
            EXPECT_TRUE(a >= -1 && a < n);
        }
        std::sort(row.begin(), row.end());
        for (size_t i = 1; i < row.size(); ++i) {
            EXPECT_TRUE(row[i] == -1 || row[i] != row[i - 1]);
        }
    }
}

TEST(BangPrune, GpuPagesCoverEveryNodeWithinTheBudget) {
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 3);
    // Node v's entry count: mostly 0 .. 200, some empty, one of 5000 (a hub's row).
    const int64_t n = 20000;
    std::vector<int64_t> offsets(size_t(n) + 1, 0);
    for (int64_t v = 0; v < n; ++v) {
        const int64_t count = v == 777 ? 5000 : rng() % 8 == 0 ? 0 : int64_t(rng() % 201);
        offsets[size_t(v) + 1] = offsets[size_t(v)] + count;
    }
    auto noSort = [](int64_t, int64_t) { return size_t(0); };
    auto perNodeSort = [](int64_t entries, int64_t nodes) {
        return entries == 0 ? size_t(0) : size_t(512) + size_t(nodes) * 24;
    };
    for (size_t budget : {size_t(200) << 10, size_t(1) << 20, size_t(1) << 30}) {
        for (int sortModel = 0; sortModel < 2; ++sortModel) {
            const std::function<size_t(int64_t, int64_t)> sort = sortModel == 0
                    ? std::function<size_t(int64_t, int64_t)>(noSort)
                    : std::function<size_t(int64_t, int64_t)>(perNodeSort);
            const std::vector<BangPrunePageRange> pages = planBangPrunePages(offsets, budget, sort);
            ASSERT_FALSE(pages.empty());
            EXPECT_EQ(pages.front().begin, 0);
            EXPECT_EQ(pages.back().end, n);
            for (size_t i = 0; i < pages.size(); ++i) {
                const BangPrunePageRange& p = pages[i];
                EXPECT_LT(p.begin, p.end);
                EXPECT_EQ(p.entries, offsets[size_t(p.end)] - offsets[size_t(p.begin)]);
                EXPECT_LE(
                        bangPrunePageBytes(p.entries, p.end - p.begin) +
                                sort(p.entries, p.end - p.begin),
                        budget)
                        << "page " << i << " budget " << budget;
                if (i + 1 < pages.size()) {
                    EXPECT_EQ(pages[i + 1].begin, p.end);
                }
                // Without the sort's storage each page is as long as fits.
                if (sortModel == 0 && p.end < n) {
                    const int64_t e = offsets[size_t(p.end) + 1] - offsets[size_t(p.begin)];
                    EXPECT_GT(bangPrunePageBytes(e, p.end + 1 - p.begin), budget) << "page " << i;
                }
            }
            if (budget == (size_t(1) << 30)) {
                EXPECT_EQ(pages.size(), 1u);
            }
        }
    }
    // No nodes, no pages; nodes without entries, one page.
    EXPECT_TRUE(planBangPrunePages({0}, 1 << 20, noSort).empty());
    EXPECT_EQ(planBangPrunePages({0, 0, 0, 0}, 1 << 20, noSort).size(), 1u);
    // A node that does not fit alone is refused, naming it and the budget.
    try {
        planBangPrunePages(offsets, size_t(64) << 10, noSort);
        ADD_FAILURE() << "node 777's 5000 entries fit in 64 KiB";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("node 777 has 5000 candidates"), std::string::npos)
                << e.what();
        EXPECT_NE(std::string(e.what()).find("tempMemoryBytes = 65536"), std::string::npos)
                << e.what();
    }
}

TEST(BangPrune, OrderSplitByRangesKeepsEachRangesOrder) {
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 4);
    std::vector<int32_t> order(1000);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    // An empty range, and nodes below and above the ranges (left out).
    const std::vector<int64_t> bounds{100, 100, 250, 251, 600, 900};
    const std::vector<std::vector<int32_t>> parts = splitOrderByRanges(order, bounds);
    ASSERT_EQ(parts.size(), bounds.size() - 1);
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        std::vector<int32_t> expected;
        for (const int32_t v : order) {
            if (v >= bounds[i] && v < bounds[i + 1]) {
                expected.push_back(int32_t(v - bounds[i]));
            }
        }
        EXPECT_EQ(parts[i], expected) << "range " << i;
        EXPECT_EQ(int64_t(parts[i].size()), bounds[i + 1] - bounds[i]) << "range " << i;
    }
    // One range over everything: the order itself.
    EXPECT_EQ(splitOrderByRanges(order, {0, 1000}).front(), order);
    // No ranges, nothing.
    EXPECT_TRUE(splitOrderByRanges(order, {5}).empty());
}

TEST(BangBuild, CandidateSourceRule) {
    // -1: exact below kBangIvfCandidatesFrom, sqrt(n) lists from it.
    EXPECT_EQ(bangCandidateLists(1, -1), 0);
    EXPECT_EQ(bangCandidateLists(kBangIvfCandidatesFrom - 1, -1), 0);
    EXPECT_EQ(bangCandidateLists(1000000, -1), 1000);
    EXPECT_EQ(bangCandidateLists(10000000, -1), 3162);
    // 0: exact; > 0: as asked, at most n.
    EXPECT_EQ(bangCandidateLists(1000000, 0), 0);
    EXPECT_EQ(bangCandidateLists(1000000, 7), 7);
    EXPECT_EQ(bangCandidateLists(10, 50), 10);
}

TEST(BangBuild, PassRangesFitTheTemporaryMemory) {
    BangBuildConfig cfg; // R 64, searchL 64
    // Visited 128 ids, the lists 192 ids, 32 bytes of bookkeeping a node.
    EXPECT_EQ(bangPassBytesPerNode(cfg), size_t(128 * 4 + 32 + 192 * 4));
    const size_t GiB = size_t(1) << 30;
    EXPECT_EQ(bangPassNodes(1000000, cfg, 2 * GiB), 1000000);
    EXPECT_EQ(bangPassNodes(10000000, cfg, GiB), int64_t(GiB / bangPassBytesPerNode(cfg)));
    EXPECT_EQ(bangPassNodes(10, cfg, 100), 1); // at least one node a range
}

TEST(BangBuild, IvfSelfKnnPagesAndChunksFitTheirBudgets) {
    const size_t MiB = size_t(1) << 20;
    // A page query: 8 probes' 32 bytes and 65 running distances.
    EXPECT_EQ(ivfSelfKnnBytesPerPageQuery(65, 8), size_t(8 * 32 + 65 * 4));
    // 10M x 128, the build's k 65 and 4 of 3162 lists: the default 256 MiB would hold
    // ~690K queries (~870 pairs a list); the floor of 4096 pairs a list takes 3.24M.
    const size_t perQuery = ivfSelfKnnBytesPerPageQuery(65, 4);
    EXPECT_LT(int64_t(256 * MiB / perQuery) * 4 / 3162, 1000);
    const int64_t p = ivfSelfKnnPageQueries(10000000, 65, 4, 3162, 256 * MiB);
    EXPECT_EQ(p, (kIvfSelfKnnPairsPerList * 3162 + 3) / 4);
    // A budget above the floor: as many as it holds; one above n: n.
    EXPECT_EQ(
            ivfSelfKnnPageQueries(10000000, 65, 4, 3162, 2048 * MiB),
            int64_t(2048 * MiB / perQuery));
    EXPECT_EQ(ivfSelfKnnPageQueries(10000000, 65, 4, 3162, 8192 * MiB), 10000000);
    // Whatever the budget: at least the floor (or n), at most n.
    for (const int k : {1, 65, 1024}) {
        for (const int nprobe : {1, 8, 3162}) {
            for (const size_t bytes : {size_t(0), 4 * MiB, 64 * MiB}) {
                const int64_t q = ivfSelfKnnPageQueries(10000000, k, nprobe, 3162, bytes);
                const int64_t floor = (kIvfSelfKnnPairsPerList * 3162 + nprobe - 1) / nprobe;
                EXPECT_EQ(
                        q,
                        std::min<int64_t>(
                                10000000,
                                std::max(
                                        floor,
                                        int64_t(bytes / ivfSelfKnnBytesPerPageQuery(k, nprobe)))));
                EXPECT_EQ(ivfSelfKnnPageQueries(q / 2 + 1, k, nprobe, 3162, bytes), q / 2 + 1);
            }
        }
    }
    // CUB sorts at most INT_MAX pairs a page.
    EXPECT_LE(
            ivfSelfKnnPageQueries(int64_t(1) << 40, 1, 2048, 2048, size_t(1) << 50) * 2048,
            int64_t(INT_MAX));
    EXPECT_THROW(ivfSelfKnnPageQueries(1000, 65, 4, 0, MiB), faiss::FaissException);
    EXPECT_THROW(ivfSelfKnnPageQueries(0, 65, 4, 10, MiB), faiss::FaissException);
    // A list's search: a query row (128 floats and its bound) and its 65 results within
    // half the temporaries.
    EXPECT_EQ(ivfSelfKnnBytesPerChunkRow(128, 65, 3162), size_t(129 * 4 + 65 * 12 + 3162 * 4));
    EXPECT_EQ(
            ivfSelfKnnChunkRows(128, 65, 3162, 1024 * MiB),
            int64_t(512 * MiB / (129 * 4 + 65 * 12 + 3162 * 4)));
    EXPECT_EQ(
            ivfSelfKnnChunkRows(768, 1024, 100, 2 * ivfSelfKnnBytesPerChunkRow(768, 1024, 100)), 1);
    EXPECT_THROW(ivfSelfKnnChunkRows(768, 1024, 100, 10000), faiss::FaissException);
    // The peak: the int32 ids found, the sorted rows (their norms and ids), the centroids and
    // the lists' starts (the pairs': nearest and other lists) beside a page and the
    // temporaries. 1M in 1000 lists, 4 probes: the floor (1.02M queries) is every query.
    const int64_t n = 1000000;
    const size_t lists = 1000 * (128 + 1) * 4 + 2001 * 8;
    EXPECT_EQ(
            ivfSelfKnnPeakBytes(n, 128, false, 65, 1000, 4, 256 * MiB, 1024 * MiB),
            lists + size_t(n) * (65 * 4 + 128 * 4 + 12) + size_t(n) * perQuery + 1024 * MiB);
    // Rows stored as bytes: a quarter of the sorted rows, plus a page of float queries and a
    // list's floats (half the temporaries).
    EXPECT_EQ(
            ivfSelfKnnPeakBytes(n, 128, true, 65, 1000, 4, 256 * MiB, 1024 * MiB),
            lists + size_t(n) * (65 * 4 + 128 + 12) + size_t(n) * perQuery + 256 * MiB + 512 * MiB +
                    1024 * MiB);
    // Small rows and k: the sort of the rows by list (four ids a vector) is the peak.
    EXPECT_EQ(
            ivfSelfKnnPeakBytes(n, 1, false, 1, 1, 1, MiB, MiB),
            (1 * 2) * 4 + 3 * 8 + size_t(n) * 32 + MiB);
}

TEST(BangBuild, EveryHubIsFoundFromItsNode) {
    // The kernels find a node's hub with bangHubOf; the hubs are nodes bangHubNode(h).
    for (int64_t n : {1, 2, 3, 7, 100, 1000, 12345}) {
        for (int64_t H : {int64_t(1), int64_t(2), bangHubCount(n, 0), n / 3 + 1, n}) {
            H = std::min(H, n);
            std::vector<int64_t> hubOf(size_t(n), -1);
            for (int64_t h = 0; h < H; ++h) {
                const int64_t v = kernels::bangHubNode(h, n, H);
                ASSERT_TRUE(v >= 0 && v < n && hubOf[size_t(v)] == -1) << n << " " << H << " " << h;
                hubOf[size_t(v)] = h;
            }
            for (int64_t v = 0; v < n; ++v) {
                ASSERT_EQ(kernels::bangHubOf(v, n, H), hubOf[size_t(v)])
                        << n << " " << H << " " << v;
            }
        }
    }
}

TEST(BangBuild, LocalityOrderGroupsNodesByCellThenId) {
    // Cells of 10 nodes: 2, 0, -1 (none), 2, 1, 0, 5 (out of range), 1, 0, 2.
    const std::vector<int64_t> cell{2, 0, -1, 2, 1, 0, 5, 1, 0, 2};
    EXPECT_EQ(bangLocalityOrder(cell, 3), (std::vector<int32_t>{1, 5, 8, 4, 7, 0, 3, 9, 2, 6}));
    EXPECT_TRUE(bangLocalityOrder({}, 4).empty());
    // A permutation of every node, whatever the cells.
    std::mt19937_64 rng(7);
    std::vector<int64_t> many(1000);
    for (int64_t& c : many) {
        c = int64_t(rng() % 40) - 3;
    }
    std::vector<int32_t> order = bangLocalityOrder(many, 30);
    std::sort(order.begin(), order.end());
    for (int32_t v = 0; v < 1000; ++v) {
        ASSERT_EQ(order[size_t(v)], v);
    }
}

TEST(BangMemory, EstimateCountsTheIndexAndBoundsTheBuild) {
    GpuIndexBangConfig device;
    device.pqSubquantizers = 32;
    GpuIndexBangConfig host = device;
    host.vectorPlacement = BangVectorPlacement::kHost;
    const int64_t n = 1000000;
    const int d = 128;
    const BangMemoryEstimate a = GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, device);
    const BangMemoryEstimate b = GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, host);
    // Placed on the host: the rows move, their norms go; the build is the same.
    EXPECT_EQ(a.hostBytes, 0u);
    EXPECT_EQ(b.hostBytes, size_t(n) * d * 4);
    EXPECT_EQ(a.deviceBytes - b.deviceBytes, size_t(n) * (d + 1) * 4);
    EXPECT_EQ(a.buildDeviceBytes, b.buildDeviceBytes);
    // Graph, codes, codebooks and entry hubs beside the rows.
    EXPECT_EQ(
            b.deviceBytes,
            size_t(n) * (64 * 4 + 32) + 256 * d * 4 + size_t(bangEntryHubCount(n)) * (d + 1) * 4);
    EXPECT_GT(a.buildDeviceBytes, a.deviceBytes);
    // A first add of host rows is built from them in place (L2): no copy of the rows,
    // the bookkeeping of every node.
    EXPECT_LT(a.buildHostBytes, size_t(n) * d * 4);
    EXPECT_GE(a.buildHostBytes, size_t(n) * 16);
    // The IVF lists' k-means copies its sample: 256 rows of each of sqrt(n) centroids.
    EXPECT_GE(a.buildHostBytes, size_t(256) * 1000 * (d * 4 + 12));
    // The arrays grow with n, the temporaries' caps (1.25 GiB here) do not.
    const BangMemoryEstimate ten = GpuIndexBang::estimateMemory(10 * n, d, faiss::METRIC_L2, host);
    const double growth = double(ten.buildDeviceBytes) / double(b.buildDeviceBytes);
    EXPECT_GT(growth, 4.0);
    EXPECT_LT(growth, 10.5);
    // Inner product stores d + 1 (PQ: d + d / M) components a row.
    const BangMemoryEstimate ip =
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_INNER_PRODUCT, host);
    EXPECT_EQ(ip.hostBytes, size_t(n) * (d + d / 32) * 4);
    // The transformed rows are a new host array.
    EXPECT_GE(ip.buildHostBytes, ip.hostBytes);
    // Bad arguments are refused as the constructor refuses them.
    EXPECT_THROW(
            GpuIndexBang::estimateMemory(0, d, faiss::METRIC_L2, device), faiss::FaissException);
    GpuIndexBangConfig exactOnHost;
    exactOnHost.vectorPlacement = BangVectorPlacement::kHost;
    EXPECT_THROW(
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, exactOnHost),
            faiss::FaissException);
    EXPECT_THROW(
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L1, device), faiss::FaissException);
    // What issue 15's 100M x 128 would take built in one add on one GPU.
    const BangMemoryEstimate big = GpuIndexBang::estimateMemory(100 * n, d, faiss::METRIC_L2, host);
    std::printf(
            "100M x 128, PQ 32, host placement: index %.1f GiB device + %.1f GiB host; build "
            "peak %.1f GiB device, %.1f GiB host\n",
            big.deviceBytes / 1073741824.0, big.hostBytes / 1073741824.0,
            big.buildDeviceBytes / 1073741824.0, big.buildHostBytes / 1073741824.0);
}

TEST(BangMemory, BytesStoredCountAQuarterOfTheRows) {
    GpuIndexBangConfig floats, bytes, automatic;
    floats.vectorStorage = BangVectorStorage::kFloat;
    bytes.vectorStorage = BangVectorStorage::kBytes;
    // From 10M the rows saved outweigh the conversions' pages (a page and half the
    // temporaries: 0.75 GiB here).
    const int64_t n = 10000000;
    const int d = 128;
    const BangMemoryEstimate f = GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, floats);
    const BangMemoryEstimate b = GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, bytes);
    EXPECT_EQ(f.deviceBytes - b.deviceBytes, size_t(n) * d * 3);
    EXPECT_LT(b.buildDeviceBytes, f.buildDeviceBytes);
    // kAuto counts floats: it cannot know the data.
    EXPECT_EQ(
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, automatic).buildDeviceBytes,
            f.buildDeviceBytes);
    // kBytes is refused where bytes do not apply (PQ mode, inner product), as the
    // constructor refuses it.
    GpuIndexBangConfig pqBytes = bytes;
    pqBytes.pqSubquantizers = 32;
    EXPECT_THROW(
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, pqBytes), faiss::FaissException);
    EXPECT_THROW(
            GpuIndexBang::estimateMemory(n, d, faiss::METRIC_INNER_PRODUCT, bytes),
            faiss::FaissException);
    GpuIndexBangConfig bad;
    bad.vectorStorage = BangVectorStorage(7);
    EXPECT_THROW(GpuIndexBang::estimateMemory(n, d, faiss::METRIC_L2, bad), faiss::FaissException);
    // Issue 15's 100M x 128 in exact mode with bytes, within an 80 GB H100's ~79 GiB.
    const BangMemoryEstimate big = GpuIndexBang::estimateMemory(10 * n, d, faiss::METRIC_L2, bytes);
    std::printf(
            "100M x 128, exact, bytes: index %.1f GiB device; build peak %.1f GiB device\n",
            big.deviceBytes / 1073741824.0, big.buildDeviceBytes / 1073741824.0);
    EXPECT_LT(big.buildDeviceBytes, size_t(79) << 30);
}

TEST(BangMemory, HostMemoryAvailableFromMeminfo) {
    const std::string meminfo =
            "MemTotal:       131072000 kB\nMemFree:         1000000 kB\n"
            "MemAvailable:    65536000 kB\nBuffers:          12345 kB\n";
    EXPECT_EQ(memAvailableBytes(meminfo), size_t(65536000) * 1024);
    EXPECT_EQ(memAvailableBytes("MemTotal: 10 kB\n"), 0u);
    EXPECT_EQ(memAvailableBytes(""), 0u);
    // This process's resident memory, and its peak at least that.
    EXPECT_GT(processStatusBytes("VmRSS"), 0u);
    EXPECT_GE(processStatusBytes("VmHWM"), processStatusBytes("VmRSS"));
    EXPECT_EQ(processStatusBytes("NoSuchField"), 0u);
    // This machine's figure: something, or "unknown" (no check).
    EXPECT_GT(availableHostBytes(), 0u);
}

TEST(BangInnerProduct, StoredLayoutAndTransform) {
    // L2 stores the vectors as they are; inner product one component more, or in PQ
    // mode one sub-quantizer's width more (and one sub-quantizer more).
    EXPECT_EQ(bangStoredDim(32, 0, faiss::METRIC_L2), 32);
    EXPECT_EQ(bangStoredDim(32, 8, faiss::METRIC_L2), 32);
    EXPECT_EQ(bangStoredDim(32, 0, faiss::METRIC_INNER_PRODUCT), 33);
    EXPECT_EQ(bangStoredDim(32, 8, faiss::METRIC_INNER_PRODUCT), 36);
    EXPECT_EQ(bangStoredPqM(8, faiss::METRIC_L2), 8);
    EXPECT_EQ(bangStoredPqM(0, faiss::METRIC_INNER_PRODUCT), 0);
    EXPECT_EQ(bangStoredPqM(8, faiss::METRIC_INNER_PRODUCT), 9);
    // Every transformed row has the squared norm M2, and |q' - x'|^2 = |q|^2 + M2 - 2 q.x.
    const std::vector<float> x = {3, 4, 1, 0, 0, 2};
    const double M2 = maxNormSq(x.data(), 3, 2);
    EXPECT_EQ(M2, 25.0);
    const std::vector<float> t = mipsRows(x.data(), 3, 2, 4, M2);
    ASSERT_EQ(t.size(), 12u);
    for (int v = 0; v < 3; ++v) {
        double s = 0;
        for (int j = 0; j < 4; ++j) {
            s += double(t[v * 4 + j]) * t[v * 4 + j];
        }
        EXPECT_NEAR(s, M2, 1e-5) << "row " << v;
        EXPECT_EQ(t[v * 4 + 3], 0.f);
        EXPECT_EQ(t[v * 4 + 0], x[v * 2 + 0]);
        EXPECT_EQ(t[v * 4 + 1], x[v * 2 + 1]);
    }
    EXPECT_EQ(t[2], 0.f);                     // the longest row: no extra component
    EXPECT_NEAR(t[6], std::sqrt(24.f), 1e-6); // [1, 0]: sqrt(25 - 1)
}

TEST(BangKeys, OrderByDistanceThenId) {
    using namespace faiss_ext::kernels;
    EXPECT_LT(bangKey(0.f, 5), bangKey(0.f, 6));
    EXPECT_LT(bangKey(0.5f, 900), bangKey(0.75f, 1));
    EXPECT_LT(bangKey(1e30f, 7), bangKey(INFINITY, 0));
    EXPECT_LT(bangKey(INFINITY, INT32_MAX), kBangEmptyKey);
    EXPECT_EQ(bangKeyId(bangKey(3.25f, 123456)), 123456);
    EXPECT_EQ(bangKeyDist(bangKey(3.25f, 123456)), 3.25f);
    std::vector<uint32_t> bloom(kBangBloomWords, 0);
    EXPECT_FALSE(bangBloomTest(bloom.data(), 42));
    const uint32_t a = bangBloomHash1(42), b = bangBloomHash2(42);
    bloom[a >> 5] |= 1u << (a & 31);
    EXPECT_EQ(bangBloomTest(bloom.data(), 42), a == b);
    bloom[b >> 5] |= 1u << (b & 31);
    EXPECT_TRUE(bangBloomTest(bloom.data(), 42));
}

TEST(BangImage, RoundTripAndRefusals) {
    BangImage im;
    im.d = 3;
    im.config.build.graphDegree = 2;
    im.config.build.alpha = 1.25f;
    im.config.build.candidates = 17;
    im.config.build.hubs = 4;
    im.config.build.passes = 3;
    im.config.build.searchL = 50;
    im.config.build.candidateLists = 12;
    im.config.build.candidateProbes = 5;
    im.config.pageBytes = size_t(9) << 20;
    // The image layer keeps any placement and storage; the index constructor checks them
    // with the mode.
    im.config.vectorPlacement = BangVectorPlacement::kHost;
    im.config.vectorStorage = BangVectorStorage::kBytes;
    im.searchL = 33;
    im.ntotal = 3;
    im.entry = 1;
    im.vectors = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    im.graph = {1, -1, 0, 2, 1, -1};
    VectorSink s;
    writeHeader(s, IndexKind::kBang);
    writeBangImage(s, im);
    writeTrailer(s);
    {
        MemorySource in(s.bytes.data(), s.bytes.size());
        ASSERT_EQ(readHeader(in), IndexKind::kBang);
        BangImage back = readBangImage(in);
        readTrailer(in);
        EXPECT_EQ(back.d, 3);
        EXPECT_EQ(back.config.build.graphDegree, 2);
        EXPECT_EQ(back.config.build.alpha, 1.25f);
        EXPECT_EQ(back.config.build.candidates, 17);
        EXPECT_EQ(back.config.build.hubs, 4);
        EXPECT_EQ(back.config.build.passes, 3);
        EXPECT_EQ(back.config.build.searchL, 50);
        EXPECT_EQ(back.config.build.candidateLists, 12);
        EXPECT_EQ(back.config.build.candidateProbes, 5);
        EXPECT_EQ(back.config.pageBytes, size_t(9) << 20);
        EXPECT_EQ(back.config.pqSubquantizers, 0);
        EXPECT_EQ(back.config.vectorPlacement, BangVectorPlacement::kHost);
        EXPECT_EQ(back.config.vectorStorage, BangVectorStorage::kBytes);
        EXPECT_EQ(back.searchL, 33);
        EXPECT_EQ(back.ntotal, 3);
        EXPECT_EQ(back.entry, 1);
        EXPECT_EQ(back.vectors, im.vectors);
        EXPECT_EQ(back.graph, im.graph);
    }
    auto refuses = [](const BangImage& bad) {
        VectorSink b;
        writeBangImage(b, bad);
        MemorySource in(b.bytes.data(), b.bytes.size());
        EXPECT_THROW(readBangImage(in), faiss::FaissException);
    };
    BangImage bad = im;
    bad.graph[3] = 3; // id == ntotal
    refuses(bad);
    bad = im;
    bad.entry = 3;
    refuses(bad);
    bad = im;
    bad.vectors[4] = NAN;
    refuses(bad);
    bad = im;
    bad.ntotal = 4; // more rows than the bytes hold
    refuses(bad);
    bad = im;
    bad.config.build.candidateProbes = 0;
    refuses(bad);
    bad = im;
    bad.config.build.candidateLists = -2;
    refuses(bad);
    bad = im;
    bad.config.vectorPlacement = BangVectorPlacement(2);
    refuses(bad);
    bad = im;
    bad.config.vectorStorage = BangVectorStorage(3);
    refuses(bad);
    // Version 7 (no storage) loads with floats, the storage its indexes had, and the rest
    // as is.
    {
        const std::vector<uint8_t> old = test::version7File(s.bytes);
        const BangImage back = test::decodeFile(IndexKind::kBang, readBangImage, old, old.size());
        EXPECT_EQ(back.config.vectorStorage, BangVectorStorage::kFloat);
        EXPECT_EQ(back.config.vectorPlacement, BangVectorPlacement::kHost);
        EXPECT_EQ(back.searchL, 33);
        EXPECT_EQ(back.entry, 1);
        EXPECT_EQ(back.graph, im.graph);
    }
    // Version 5 (no placement) loads with the vectors on the device and the rest as is.
    {
        const std::vector<uint8_t> old = test::version5File(s.bytes);
        const BangImage back = test::decodeFile(IndexKind::kBang, readBangImage, old, old.size());
        EXPECT_EQ(back.config.vectorPlacement, BangVectorPlacement::kDevice);
        EXPECT_EQ(back.config.build.candidateLists, 12);
        EXPECT_EQ(back.config.build.candidateProbes, 5);
        EXPECT_EQ(back.searchL, 33);
        EXPECT_EQ(back.entry, 1);
        EXPECT_EQ(back.graph, im.graph);
    }
    // Versions 3 and 4 (no candidate source) load with its defaults and the rest as is.
    for (const std::vector<uint8_t>& old :
         {test::version4File(s.bytes), test::version3File(s.bytes)}) {
        const BangImage back = test::decodeFile(IndexKind::kBang, readBangImage, old, old.size());
        EXPECT_EQ(back.config.vectorPlacement, BangVectorPlacement::kDevice);
        EXPECT_EQ(back.config.build.candidateLists, BangBuildConfig().candidateLists);
        EXPECT_EQ(back.config.build.candidateProbes, BangBuildConfig().candidateProbes);
        EXPECT_EQ(back.config.build.searchL, 50);
        EXPECT_EQ(back.config.pageBytes, size_t(9) << 20);
        EXPECT_EQ(back.searchL, 33);
        EXPECT_EQ(back.entry, 1);
        EXPECT_EQ(back.graph, im.graph);
    }
    for (size_t cut = 0; cut + 1 < s.bytes.size(); cut += 7) {
        MemorySource in(s.bytes.data(), cut);
        EXPECT_THROW(
                {
                    readHeader(in);
                    readBangImage(in);
                    readTrailer(in);
                },
                faiss::FaissException)
                << "cut " << cut;
    }
}

TEST(BangPrune, L2SqrMatchesDoublePrecision) {
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 7);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (int d : {1, 7, 16, 128, 131}) {
        std::vector<float> a(d), b(d);
        double ref = 0;
        for (int j = 0; j < d; ++j) {
            a[j] = u(rng);
            b[j] = u(rng);
            ref += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
        }
        EXPECT_NEAR(bangL2Sqr(a.data(), b.data(), d), ref, 1e-5 * ref) << "d=" << d;
    }
}

TEST(BangPq, SubquantizerRuleNamesTheValue) {
    EXPECT_NO_THROW(checkBangPqSubquantizers(24, 0));
    EXPECT_NO_THROW(checkBangPqSubquantizers(24, 1));
    EXPECT_NO_THROW(checkBangPqSubquantizers(24, 24));
    EXPECT_NO_THROW(checkBangPqSubquantizers(256, 128));
    auto names = [](int d, int M, const char* needle) {
        try {
            checkBangPqSubquantizers(d, M);
            ADD_FAILURE() << "d=" << d << " M=" << M << " accepted";
        } catch (const faiss::FaissException& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    names(24, 5, "pqSubquantizers=5 does not divide d=24");
    names(24, 48, "pqSubquantizers=48");
    names(24, -1, "pqSubquantizers=-1 is outside [0, 128]");
    names(258, 129, "pqSubquantizers=129 is outside [0, 128]");
}

TEST(BangPq, TrainRowsAreEvenlySpaced) {
    EXPECT_EQ(bangPqTrainRows(3), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(bangPqTrainRows(kBangPqMaxTrainVectors).size(), size_t(kBangPqMaxTrainVectors));
    for (int64_t n : {int64_t(65537), int64_t(1000000), int64_t(2147483646)}) {
        const std::vector<int64_t> r = bangPqTrainRows(n);
        ASSERT_EQ(r.size(), size_t(kBangPqMaxTrainVectors)) << n;
        EXPECT_EQ(r.front(), 0);
        EXPECT_LT(r.back(), n);
        EXPECT_GE(r.back(), n - n / kBangPqMaxTrainVectors - 1);
        EXPECT_TRUE(
                std::adjacent_find(
                        r.begin(), r.end(), [](int64_t a, int64_t b) { return b <= a; }) == r.end())
                << "rows not strictly ascending for n=" << n;
    }
}

TEST(BangPq, DistanceIsTheLanesSumInTheKernelsOrder) {
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 30);
    std::uniform_real_distribution<float> u(0.f, 10.f);
    for (int M : {1, 3, 8, 13, 32}) {
        std::vector<float> table(size_t(M) * kernels::kBangPqCentroids);
        for (float& t : table) {
            t = u(rng);
        }
        std::vector<uint8_t> code(static_cast<size_t>(M), 0);
        for (uint8_t& c : code) {
            c = uint8_t(rng() & 255);
        }
        // Lane l sums m = l, l + 8, ...; then lanes 4 apart, 2 apart, 1 apart.
        float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        double exact = 0;
        for (int m = 0; m < M; ++m) {
            const float v = table[size_t(m) * kernels::kBangPqCentroids + code[m]];
            lane[m % 8] += v;
            exact += v;
        }
        const float want = ((lane[0] + lane[4]) + (lane[2] + lane[6])) +
                ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        EXPECT_EQ(kernels::bangPqDistance(table.data(), code.data(), M), want) << "M=" << M;
        EXPECT_NEAR(want, exact, 1e-5 * exact) << "M=" << M;
    }
    const float q[3] = {1.f, 2.f, 3.f}, c[3] = {0.5f, 4.f, 3.f};
    EXPECT_EQ(kernels::bangPqTableEntry(q, c, 3), 0.25f + 4.f);
}

TEST(BangPq, EncodingNamesTheNearestCentroid) {
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 31);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    const int d = 12, M = 4, dsub = 3;
    const int64_t n = 300;
    std::vector<float> cent(size_t(256) * d), x(size_t(n) * d);
    for (float& v : cent) {
        v = u(rng);
    }
    for (float& v : x) {
        v = u(rng);
    }
    const std::vector<uint8_t> codes = encodeBangPq(n, d, M, cent.data(), x.data());
    ASSERT_EQ(codes.size(), size_t(n) * M);
    for (int64_t i = 0; i < n; ++i) {
        for (int m = 0; m < M; ++m) {
            const float* sv = x.data() + i * d + m * dsub;
            const float* base = cent.data() + size_t(m) * 256 * dsub;
            float best = INFINITY;
            for (int c = 0; c < 256; ++c) {
                best = std::min(best, kernels::bangPqTableEntry(sv, base + c * dsub, dsub));
            }
            EXPECT_LE(
                    kernels::bangPqTableEntry(sv, base + codes[i * M + m] * dsub, dsub),
                    best * (1 + 1e-5f) + 1e-7f)
                    << "vector " << i << " sub-quantizer " << m;
        }
    }
}

TEST(BangImage, PqStateRoundTripsAndVersions1And2AreRead) {
    BangImage im = smallImage();
    im.config.pqSubquantizers = 2;
    im.pqCentroids.resize(256 * 4);
    for (size_t i = 0; i < im.pqCentroids.size(); ++i) {
        im.pqCentroids[i] = float(i) * 0.5f;
    }
    im.pqCodes = {0, 255, 7, 8, 128, 1};
    VectorSink s;
    writeHeader(s, IndexKind::kBang);
    writeBangImage(s, im);
    writeTrailer(s);
    {
        MemorySource in(s.bytes.data(), s.bytes.size());
        uint32_t version = 0;
        ASSERT_EQ(readHeader(in, &version), IndexKind::kBang);
        EXPECT_EQ(version, kIndexFormatVersion);
        BangImage back = readBangImage(in, version);
        readTrailer(in);
        EXPECT_EQ(back.config.pqSubquantizers, 2);
        EXPECT_EQ(back.pqCentroids, im.pqCentroids);
        EXPECT_EQ(back.pqCodes, im.pqCodes);
        EXPECT_EQ(back.graph, im.graph);
    }
    for (size_t cut = 0; cut + 1 < s.bytes.size(); cut += 97) {
        MemorySource in(s.bytes.data(), cut);
        EXPECT_THROW(
                {
                    uint32_t version = 0;
                    readHeader(in, &version);
                    readBangImage(in, version);
                    readTrailer(in);
                },
                faiss::FaissException)
                << "cut " << cut;
    }
    auto refuses = [](const BangImage& bad) {
        VectorSink b;
        writeBangImage(b, bad);
        MemorySource in(b.bytes.data(), b.bytes.size());
        EXPECT_THROW(readBangImage(in), faiss::FaissException);
    };
    BangImage bad = im;
    bad.config.pqSubquantizers = 3; // does not divide d
    refuses(bad);
    bad = im;
    bad.config.pqSubquantizers = -2;
    refuses(bad);
    bad = im;
    bad.pqCentroids[5] = NAN;
    refuses(bad);
    bad = im;
    bad.pqCodes.pop_back(); // codes short of ntotal x M
    refuses(bad);

    // Version 2: the build fields in place of the config; read with the default
    // pageBytes and the PQ state.
    BangImage older = im;
    older.config.pageBytes = size_t(11) << 20;
    auto read = [](const std::vector<uint8_t>& bytes, uint32_t expectVersion) {
        MemorySource in(bytes.data(), bytes.size());
        uint32_t version = 0;
        EXPECT_EQ(readHeader(in, &version), IndexKind::kBang);
        EXPECT_EQ(version, expectVersion);
        BangImage back = readBangImage(in, version);
        readTrailer(in);
        return back;
    };
    BangImage back = read(test::legacyBangFile(older, 2), 2);
    EXPECT_EQ(back.config.pqSubquantizers, 2);
    EXPECT_EQ(back.config.pageBytes, GpuIndexBangConfig().pageBytes);
    EXPECT_EQ(back.config.build.graphDegree, 2);
    EXPECT_EQ(back.pqCentroids, im.pqCentroids);
    EXPECT_EQ(back.pqCodes, im.pqCodes);
    EXPECT_EQ(back.graph, im.graph);
    // Version 1: no sub-quantizer count; read as exact mode.
    BangImage exact = older;
    exact.config.pqSubquantizers = 0;
    exact.pqCentroids.clear();
    exact.pqCodes.clear();
    std::vector<uint8_t> v1 = test::legacyBangFile(exact, 1);
    back = read(v1, 1);
    EXPECT_EQ(back.config.pqSubquantizers, 0);
    EXPECT_EQ(back.vectors, exact.vectors);
    EXPECT_EQ(back.graph, exact.graph);
    EXPECT_EQ(back.entry, 2);
    // Versions outside [1, current] are refused, naming the version.
    for (uint32_t v : {0u, kIndexFormatVersion + 1}) {
        std::memcpy(v1.data() + 8, &v, 4);
        MemorySource bad(v1.data(), v1.size());
        try {
            readHeader(bad);
            ADD_FAILURE() << "version " << v << " accepted";
        } catch (const faiss::FaissException& e) {
            EXPECT_NE(std::string(e.what()).find("version " + std::to_string(v)), std::string::npos)
                    << e.what();
        }
    }
}

TEST(BangImage, EveryFlippedByteIsRefusedNamingTheSection) {
    BangImage im = smallImage();
    auto load = [](const std::vector<uint8_t>& b) {
        test::decodeFile(IndexKind::kBang, readBangImage, b, b.size());
    };
    const std::vector<std::string> sections = {
            "fields", "vectors", "graph", "PQ codebooks and codes", "removed vectors"};
    test::expectEveryFlippedByteRefused(
            test::encodeFile(IndexKind::kBang, writeBangImage, im), sections, test::testSeed(),
            load);
    // PQ mode: the codebooks (256 x d floats) and codes.
    im.config.pqSubquantizers = 2;
    im.pqCentroids.assign(256 * 4, 0.25f);
    im.pqCodes = {0, 255, 7, 8, 128, 1};
    test::expectEveryFlippedByteRefused(
            test::encodeFile(IndexKind::kBang, writeBangImage, im), sections, test::testSeed() + 1,
            load);
}
