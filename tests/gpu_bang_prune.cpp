// GpuIndexBang's build prune on the GPU (impl/BangPruneGpu.h) against the host's
// pruneCandidateGraph (impl/BangPrune.h), the reference, on the same candidate lists.
//
// The rule for comparing them. The GPU sums a distance in another order than the host's
// SIMD loop (kernels/bang_prune.cu: 8 lanes, fmaf, a fixed xor tree), so where two
// distances, or alpha * d(p*, c) and d(node, c), are within a few ulp the two may choose
// differently; nowhere else.
// - Exact data: integer coordinates small enough that every squared distance is below
//   2^24. Every partial sum is then exact in float whatever the order, and alpha * d is
//   the same single rounding on both sides, so the graphs must be identical, row for
//   row (ties between equal distances, which such data has many of, are broken by id on
//   both sides).
// - Random data (normal floats): at least 99.9% of the host's edges must be in the GPU's
//   row for the same node, and at least 99.9% at the same position. A host simulation of
//   the kernels' summation order (3000 nodes, d 7 / 128 / 960, R 16 / 64, alpha 1 / 1.2,
//   up to 150 candidates) differed from the host's graph on at most 0.001% of the edges
//   (6 rows of 3000 at worst).
// Both also check that every GPU row is well formed (ids in [0, n), not the node, no
// repeats, -1 only at the end).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangPrune.h>
#include <faiss_ext/impl/BangPruneGpu.h>
#include <faiss_ext/impl/BangRows.h>
#include <kernels/BangPrune.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// What the candidate generator mixes in.
struct CandidateSpec {
    int maxCandidates = 0;   ///< per node, 0 .. maxCandidates (one node in 8 gets none)
    int64_t fans = 0;        ///< nodes 1 .. fans list only node 0 (and noise): node 0 gets
                             ///< more reverse edges than R when fans > R
    int wide = 0;            ///< node n / 2 gets this many candidates (0: none such)
    bool outOfRange = false; ///< the GPU's lists also get ids >= n (ignored by it)
};

/// Candidate lists for the GPU and, without the out-of-range ids, for the host: random
/// ids with -1, the node itself and repeats mixed in.
void makeCandidates(
        std::mt19937_64& rng,
        int64_t n,
        const CandidateSpec& spec,
        BangCandidateLists& gpu,
        BangCandidateLists& host) {
    std::vector<int32_t> row, hostRow;
    for (int64_t v = 0; v < n; ++v) {
        row.clear();
        int count = int(rng() % uint64_t(spec.maxCandidates + 1));
        if (rng() % 8 == 0) {
            count = 0;
        }
        if (spec.wide > 0 && v == n / 2) {
            count = spec.wide;
        }
        const bool fan = v >= 1 && v <= spec.fans;
        for (int j = 0; j < count; ++j) {
            const uint64_t r = rng() % 16;
            if (r == 0) {
                row.push_back(-1);
            } else if (r == 1) {
                row.push_back(int32_t(v));
            } else if (r == 2 && !row.empty()) {
                row.push_back(row[rng() % row.size()]);
            } else if (r == 3 && spec.outOfRange) {
                row.push_back(int32_t(n + int64_t(rng() % 1000)));
            } else {
                row.push_back(fan ? 0 : int32_t(rng() % uint64_t(n)));
            }
        }
        if (fan) {
            row.push_back(0);
        }
        hostRow.clear();
        for (int32_t id : row) {
            if (id < n) {
                hostRow.push_back(id);
            }
        }
        gpu.append(row.data(), row.size());
        host.append(hostRow.data(), hostRow.size());
    }
}

/// n x d integer coordinates in [-c, c] with d (2c)^2 < 2^24: every squared distance and
/// partial sum is exact in float.
std::vector<float> integerVectors(std::mt19937_64& rng, int64_t n, int d) {
    int c = 1;
    while (int64_t(d) * (2 * (c + 1)) * (2 * (c + 1)) < (int64_t(1) << 24) && c < 1000) {
        ++c;
    }
    std::vector<float> x(size_t(n) * d);
    for (float& v : x) {
        v = float(int64_t(rng() % uint64_t(2 * c + 1)) - c);
    }
    return x;
}

std::vector<float> normalVectors(std::mt19937_64& rng, int64_t n, int d) {
    std::normal_distribution<float> N(0.f, 1.f);
    std::vector<float> x(size_t(n) * d);
    for (float& v : x) {
        v = N(rng);
    }
    return x;
}

/// The GPU prune over the rows x stored as `storage` says (kBytes: x must be bytes).
std::vector<int32_t> gpuPrune(
        const GpuResources& res,
        const std::vector<float>& x,
        int64_t n,
        int d,
        const BangCandidateLists& lists,
        int R,
        float alpha,
        const std::vector<int32_t>* order = nullptr,
        BangVectorStorage storage = BangVectorStorage::kFloat) {
    BangRows rows(res, d);
    rows.assign({{n, x.data(), nullptr}}, storage);
    EXPECT_EQ(rows.isBytes(), storage == BangVectorStorage::kBytes);
    return pruneCandidateGraphGpu(res, rows, lists, R, alpha, order);
}

/// 0 .. n - 1 shuffled: an order of the prunes unrelated to the ids.
std::vector<int32_t> shuffledNodes(std::mt19937_64& rng, int64_t n) {
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

/// Rows that are not well formed (first few reported).
int64_t malformedRows(const std::vector<int32_t>& g, int64_t n, int R) {
    int64_t bad = 0;
    for (int64_t v = 0; v < n; ++v) {
        std::vector<int32_t> row(g.begin() + v * R, g.begin() + (v + 1) * R);
        const auto end = std::find(row.begin(), row.end(), -1);
        bool ok = std::all_of(end, row.end(), [](int32_t a) { return a == -1; });
        ok = ok &&
                std::all_of(row.begin(), end, [&](int32_t a) { return a >= 0 && a < n && a != v; });
        std::sort(row.begin(), end);
        ok = ok && std::adjacent_find(row.begin(), end) == end;
        if (!ok && bad++ < 3) {
            ADD_FAILURE() << "GPU row " << v << " is malformed";
        }
    }
    return bad;
}

/// Rows of gpu that differ from host (first few reported).
int64_t differingRows(
        const std::vector<int32_t>& gpu,
        const std::vector<int32_t>& host,
        int64_t n,
        int R,
        const std::string& what) {
    int64_t bad = 0;
    for (int64_t v = 0; v < n; ++v) {
        if (!std::equal(gpu.begin() + v * R, gpu.begin() + (v + 1) * R, host.begin() + v * R) &&
            bad++ < 3) {
            std::string g, h;
            for (int j = 0; j < std::min(R, 8); ++j) {
                g += " " + std::to_string(gpu[v * R + j]);
                h += " " + std::to_string(host[v * R + j]);
            }
            ADD_FAILURE() << what << ": row " << v << " differs; GPU" << g << " ..., host" << h
                          << " ...";
        }
    }
    return bad;
}

} // namespace

TEST(GpuBangPrune, IdenticalToHostOnExactData) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 40);
    int runs = 0;
    for (int d : {1, 7, 128, 960}) {
        for (int R : {1, 16, 64, 128}) {
            for (float alpha : {1.0f, 1.2f}) {
                if (underSanitizer() && runs >= 2) {
                    continue;
                }
                ++runs;
                const int64_t n = 300 + int64_t(rng() % 400);
                CandidateSpec spec;
                spec.maxCandidates = 2 * R + 20; // most rows are pruned
                spec.fans = std::min<int64_t>(n - 1, 2 * R + 5);
                spec.outOfRange = (runs % 2) == 0;
                // Every other run one node above kBangPruneSharedSortMax: its keys sorted
                // in global memory (CUB), the other nodes' in shared memory.
                spec.wide = (runs % 2) == 1 ? kernels::kBangPruneSharedSortMax + 300 : 0;
                BangCandidateLists gpuLists, hostLists;
                makeCandidates(rng, n, spec, gpuLists, hostLists);
                const std::vector<float> x = integerVectors(rng, n, d);
                const std::string what = "d=" + std::to_string(d) + " R=" + std::to_string(R) +
                        " alpha=" + std::to_string(alpha) + " n=" + std::to_string(n);
                const std::vector<int32_t> host =
                        pruneCandidateGraph(x.data(), n, d, hostLists, R, alpha);
                const std::vector<int32_t> gpu = gpuPrune(res, x, n, d, gpuLists, R, alpha);
                ASSERT_EQ(gpu.size(), host.size()) << what;
                EXPECT_EQ(differingRows(gpu, host, n, R, what), 0) << what;
                EXPECT_EQ(malformedRows(gpu, n, R), 0) << what;
                // The nodes pruned in another order: the same graph.
                const std::vector<int32_t> order = shuffledNodes(rng, n);
                const std::vector<int32_t> reordered =
                        gpuPrune(res, x, n, d, gpuLists, R, alpha, &order);
                EXPECT_EQ(differingRows(reordered, host, n, R, what + " reordered"), 0) << what;
            }
        }
    }
}

TEST(GpuBangPrune, IdenticalToHostOnSmallAndEmptyInputs) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 41);
    for (int64_t n : {1, 2, 3, 5, 40}) {
        for (int R : {1, 16}) {
            for (int maxCandidates : {0, 3, 50}) {
                const int d = 7;
                CandidateSpec spec;
                spec.maxCandidates = maxCandidates;
                spec.outOfRange = true;
                BangCandidateLists gpuLists, hostLists;
                makeCandidates(rng, n, spec, gpuLists, hostLists);
                const std::vector<float> x = integerVectors(rng, n, d);
                const std::string what = "n=" + std::to_string(n) + " R=" + std::to_string(R) +
                        " candidates<=" + std::to_string(maxCandidates);
                const std::vector<int32_t> host =
                        pruneCandidateGraph(x.data(), n, d, hostLists, R, 1.2f);
                const std::vector<int32_t> gpu = gpuPrune(res, x, n, d, gpuLists, R, 1.2f);
                ASSERT_EQ(gpu.size(), size_t(n) * R) << what;
                EXPECT_EQ(differingRows(gpu, host, n, R, what), 0) << what;
                EXPECT_EQ(malformedRows(gpu, n, R), 0) << what;
                if (maxCandidates == 0) {
                    EXPECT_EQ(std::count(gpu.begin(), gpu.end(), -1), int64_t(n) * R) << what;
                }
            }
        }
    }
}

TEST(GpuBangPrune, CloseToHostOnRandomData) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 42);
    int runs = 0;
    for (int d : {7, 128, 960}) {
        for (int R : {16, 64}) {
            for (float alpha : {1.0f, 1.2f}) {
                if (underSanitizer() && runs >= 1) {
                    continue;
                }
                ++runs;
                const int64_t n = 2000;
                CandidateSpec spec;
                spec.maxCandidates = 150;
                spec.fans = 3 * R;
                spec.wide = 1500; // as a hub's row in the first candidates
                BangCandidateLists gpuLists, hostLists;
                makeCandidates(rng, n, spec, gpuLists, hostLists);
                const std::vector<float> x = normalVectors(rng, n, d);
                const std::vector<int32_t> host =
                        pruneCandidateGraph(x.data(), n, d, hostLists, R, alpha);
                const std::vector<int32_t> gpu = gpuPrune(res, x, n, d, gpuLists, R, alpha);
                ASSERT_EQ(gpu.size(), host.size());
                int64_t edges = 0, shared = 0, samePosition = 0, rows = 0;
                for (int64_t v = 0; v < n; ++v) {
                    std::set<int32_t> g;
                    for (int j = 0; j < R; ++j) {
                        if (gpu[v * R + j] >= 0) {
                            g.insert(gpu[v * R + j]);
                        }
                    }
                    for (int j = 0; j < R; ++j) {
                        const int32_t h = host[v * R + j];
                        if (h >= 0) {
                            ++edges;
                            shared += int64_t(g.count(h));
                            samePosition += gpu[v * R + j] == h;
                        }
                    }
                    rows += !std::equal(
                            gpu.begin() + v * R, gpu.begin() + (v + 1) * R, host.begin() + v * R);
                }
                std::printf(
                        "GPU prune vs host, d=%d R=%d alpha=%.1f: %lld edges, %.4f%% shared, "
                        "%.4f%% at the same position, %lld of %lld rows differ\n",
                        d, R, double(alpha), (long long)edges, 100.0 * double(shared) / edges,
                        100.0 * double(samePosition) / edges, (long long)rows, (long long)n);
                EXPECT_GE(double(shared), 0.999 * double(edges)) << "d=" << d << " R=" << R;
                EXPECT_GE(double(samePosition), 0.999 * double(edges)) << "d=" << d << " R=" << R;
                EXPECT_EQ(malformedRows(gpu, n, R), 0);
            }
        }
    }
}

// A node's keys are sorted in shared memory up to kBangPruneSharedSortMax entries, in
// global memory (CUB) above. The same lists padded with invalid ids past that size take
// the global path for every node, and must give the same graph bit for bit: the keys
// are the same numbers either way.
TEST(GpuBangPrune, SharedAndGlobalSortsGiveTheSameGraph) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 44);
    const int64_t n = underSanitizer() ? 300 : 2000;
    for (int d : {7, 128}) {
        CandidateSpec spec;
        spec.maxCandidates = 150;
        spec.fans = 100;
        BangCandidateLists lists, unused;
        makeCandidates(rng, n, spec, lists, unused);
        BangCandidateLists padded;
        for (int64_t v = 0; v < n; ++v) {
            std::vector<int32_t> row(
                    lists.ids.begin() + lists.offsets[size_t(v)],
                    lists.ids.begin() + lists.offsets[size_t(v) + 1]);
            row.resize(size_t(kernels::kBangPruneSharedSortMax) + 1 + size_t(v % 3), -1);
            padded.append(row.data(), row.size());
        }
        const std::vector<float> x = normalVectors(rng, n, d);
        const std::vector<int32_t> shared = gpuPrune(res, x, n, d, lists, 64, 1.2f);
        const std::vector<int32_t> global = gpuPrune(res, x, n, d, padded, 64, 1.2f);
        EXPECT_EQ(differingRows(global, shared, n, 64, "d=" + std::to_string(d)), 0);
        EXPECT_EQ(malformedRows(shared, n, 64), 0);
    }
}

// Rows stored as bytes are read as the floats they stand for, in the same order: the
// same graph bit for bit, in both sorts (a node above kBangPruneSharedSortMax), at a d
// whose sums are not exact in float (960 x 255^2 > 2^24) and at one that is not a
// multiple of 4.
TEST(GpuBangPrune, ByteRowsGiveTheGraphOfFloatRows) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 46);
    for (int d : {7, 128, 960}) {
        const int64_t n = smallUnderSanitizer(1500, 300);
        CandidateSpec spec;
        spec.maxCandidates = 150;
        spec.fans = 100;
        spec.wide = kernels::kBangPruneSharedSortMax + 200;
        BangCandidateLists lists, unused;
        makeCandidates(rng, n, spec, lists, unused);
        std::vector<float> x(size_t(n) * d);
        for (float& v : x) {
            v = float(rng() % 256);
        }
        const std::string what = "d=" + std::to_string(d);
        const std::vector<int32_t> floats = gpuPrune(res, x, n, d, lists, 64, 1.2f);
        const std::vector<int32_t> bytes =
                gpuPrune(res, x, n, d, lists, 64, 1.2f, nullptr, BangVectorStorage::kBytes);
        EXPECT_EQ(differingRows(bytes, floats, n, 64, what), 0) << what;
        EXPECT_EQ(malformedRows(bytes, n, 64), 0) << what;
    }
}

TEST(GpuBangPrune, PagesDoNotChangeTheGraphAndANodeTooLargeIsRefused) {
    FAISS_EXT_REQUIRE_GPU();
    std::mt19937_64 rng(testSeed() + 43);
    // Under compute-sanitizer 14000 nodes (~1.8M entries: still 3 pages or more) of lower
    // d and R, which the prune's shared-memory work grows with.
    const int64_t n = smallUnderSanitizer(20000, 14000);
    const int d = int(smallUnderSanitizer(24, 8)), R = int(smallUnderSanitizer(32, 8));
    CandidateSpec spec;
    spec.maxCandidates = 300; // ~3M entries: 21 bytes each, 4 pages of 16 MiB
    spec.fans = 200;
    spec.wide = 1500;
    spec.outOfRange = true;
    BangCandidateLists gpuLists, hostLists;
    makeCandidates(rng, n, spec, gpuLists, hostLists);
    const std::vector<float> x = integerVectors(rng, n, d);
    GpuResources whole; // 1 GiB: one page per prune
    const std::vector<int32_t> once = gpuPrune(whole, x, n, d, gpuLists, R, 1.2f);
    EXPECT_EQ(
            differingRows(
                    once, pruneCandidateGraph(x.data(), n, d, hostLists, R, 1.2f), n, R,
                    "one page"),
            0);
    // The smallest temporary memory GpuResources takes, 16 MiB: several pages.
    GpuResourcesConfig small;
    small.tempMemoryBytes = size_t(16) << 20;
    GpuResources paged(small);
    ASSERT_GT(
            planBangPrunePages(
                    gpuLists.offsets, small.tempMemoryBytes, kernels::bangPruneSortTempBytes)
                    .size(),
            2u);
    const std::vector<int32_t> many = gpuPrune(paged, x, n, d, gpuLists, R, 1.2f);
    EXPECT_EQ(differingRows(many, once, n, R, "pages"), 0);
    const std::vector<int32_t> order = shuffledNodes(rng, n);
    const std::vector<int32_t> manyReordered = gpuPrune(paged, x, n, d, gpuLists, R, 1.2f, &order);
    EXPECT_EQ(differingRows(manyReordered, once, n, R, "pages, reordered"), 0);
    // A node with 2^20 candidates (21 bytes each: 21 MiB) does not fit in 16 MiB: refused,
    // naming the budget, before any kernel runs.
    CandidateSpec huge;
    huge.maxCandidates = 10;
    huge.wide = 1 << 20;
    BangCandidateLists hugeLists, unused;
    makeCandidates(rng, n, huge, hugeLists, unused);
    try {
        gpuPrune(paged, x, n, d, hugeLists, R, 1.2f);
        ADD_FAILURE() << "a node larger than tempMemoryBytes was accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("tempMemoryBytes"), std::string::npos) << e.what();
    }
}

// A refinement pass searches and prunes its nodes a range at a time (the ranges bound
// its lists in temporary memory): every range searches the pass's starting graph and
// prunes into the new one, so any ranges give the graph of one range.
TEST(GpuBangBuild, PassRangesGiveTheSameGraph) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 24;
    // Under compute-sanitizer 90 nodes, in ranges of the same proportions (15, 11 and 1:
    // each range is a search and a prune of its own), and one pass: each pass's ranges
    // search the graph it starts from.
    const int64_t n = smallUnderSanitizer(6000, 90);
    datasets::ClusteredSpec spec{n, d, 40, 0.1f, testSeed() + 3};
    const std::vector<float> x = datasets::clustered(spec, 0);
    BangBuildConfig cfg;
    cfg.graphDegree = 24;
    cfg.candidates = 24;
    cfg.passes = int(smallUnderSanitizer(2, 1));
    cfg.searchL = 32;
    auto build = [&](int64_t passNodes) {
        BangGraph work(res, d, cfg.graphDegree, 0);
        work.setVectors(n, x.data());
        buildBangGraph(
                res, work, x.data(), cfg, size_t(64) << 20, Progress(false, "test"), passNodes);
        return std::make_pair(work.graph(), work.entry());
    };
    const auto whole = build(n);
    for (int64_t range : {n / 6, n * 777 / 6000, int64_t(1)}) {
        SCOPED_TRACE(range);
        const auto paged = build(range);
        EXPECT_EQ(paged.second, whole.second);
        EXPECT_EQ(paged.first, whole.first);
    }
}
