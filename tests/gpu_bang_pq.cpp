// GpuIndexBang in PQ mode: the GPU search against its CPU reference (same walk on the
// same ADC distances, then the exact re-rank), recall on clustered data, device
// memory, bad configurations, determinism and save / load.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/BangPq.h>
#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/index_io.h>
#include <kernels/BangPq.h>
#include <kernels/BangSearch.h>

#include "BangReference.h"
#include "BangTestUtil.h"
#include "LegacyIndexFiles.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// Both kernels against the CPU reference on every query, with k = L so that the
/// whole final worklist is seen: the reference walks the graph on the index's own
/// codes and codebooks (ADC distances formed as the kernels form them) and re-ranks
/// its final worklist by exact distance; the GPU must return exactly those nodes in
/// that order with those (exact) distances, bitwise, after as many iterations.
void expectMatchesPqReference(
        const GpuIndexBang& index,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int L) {
    const int d = index.d, M = index.bangConfig().pqSubquantizers;
    const int64_t nq = int64_t(xq.size()) / d, nb = index.ntotal;
    const std::vector<float> exact = distanceTable(index.resources(), xq, xb, d);
    const std::vector<int32_t> graph = index.graph();
    const std::vector<float> centroids = index.pqCentroids();
    const std::vector<uint8_t> codes = index.pqCodes();
    ASSERT_EQ(centroids.size(), size_t(kernels::kBangPqCentroids) * d);
    ASSERT_EQ(codes.size(), size_t(nb) * M);
    std::vector<BangReferenceResult> refs;
    std::vector<std::vector<uint64_t>> reranked;
    for (int64_t q = 0; q < nq; ++q) {
        const std::vector<float> adc = bangPqReferenceDistances(
                xq.data() + q * d, d, M, centroids.data(), codes.data(), nb);
        refs.push_back(bangReferenceSearch(
                graph, index.graphDegree(), int32_t(index.entryPoint()), adc.data(), L));
        reranked.push_back(bangReferenceRerank(refs.back().keys, exact.data() + q * nb));
    }
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        const DeviceResults got = searchWith(index, xq, L, L, kernel);
        int64_t bad = 0;
        for (int64_t q = 0; q < nq; ++q) {
            const std::vector<uint64_t>& want = reranked[size_t(q)];
            bool same = refs[size_t(q)].iterations == got.iters[q];
            for (int j = 0; j < L && same; ++j) {
                const bool has = j < int(want.size());
                const int64_t id = has ? kernels::bangKeyId(want[j]) : -1;
                const float dist = has ? kernels::bangKeyDist(want[j])
                                       : std::numeric_limits<float>::infinity();
                same = got.I[q * L + j] == id && got.D[q * L + j] == dist;
            }
            if (!same && bad++ < 3) {
                ADD_FAILURE() << "kernel " << int(kernel) << " L=" << L << " query " << q
                              << ": iterations " << got.iters[q] << " vs "
                              << refs[size_t(q)].iterations << ", first id " << got.I[q * L]
                              << " vs " << (want.empty() ? -1 : kernels::bangKeyId(want[0]));
            }
        }
        EXPECT_EQ(bad, 0) << "kernel " << int(kernel) << " L=" << L;
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

GpuIndexBangConfig pqConfig(int M, int R = 64) {
    GpuIndexBangConfig c;
    c.pqSubquantizers = M;
    c.build.graphDegree = R;
    return c;
}

/// Runs fn, expects a FaissException whose message contains every needle.
template <typename Fn>
void expectThrowNaming(Fn fn, std::vector<std::string> needles) {
    try {
        fn();
        ADD_FAILURE() << "no exception; expected one naming " << needles[0];
    } catch (const faiss::FaissException& e) {
        for (const std::string& n : needles) {
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
        }
    }
}

} // namespace

TEST(GpuIndexBangPq, MatchesCpuReferenceOnBuiltGraphs) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 20);
    struct Case {
        int d, M, R;
    };
    // M below the 8 lanes, a multiple of them, and one sub-dimension per code. Under
    // compute-sanitizer two cases, whose codebooks (25 k-means iterations each) are the
    // time there: M below the lanes, and M above them and not a multiple of them (lanes
    // of one and of two sub-quantizers) with one sub-dimension per code; builds of 256
    // to 319 vectors (PQ mode takes 256 or more), 10 queries, L without 8.
    const int64_t least = smallUnderSanitizer(2000, 256), spread = smallUnderSanitizer(2000, 64);
    const std::vector<Case> cases = underSanitizer()
            ? std::vector<Case>{Case{8, 2, 16}, Case{9, 9, 40}}
            : std::vector<Case>{Case{24, 6, 16}, Case{36, 12, 40}, Case{16, 16, 20}};
    const std::vector<int> Ls =
            underSanitizer() ? std::vector<int>{1, 33, 100} : std::vector<int>{1, 8, 33, 100};
    for (Case c : cases) {
        const int64_t nb = least + int64_t(rng() % spread);
        GpuIndexBangConfig cfg = pqConfig(c.M, c.R);
        cfg.build.candidates = 48;
        GpuIndexBang index(res, c.d, faiss::METRIC_L2, cfg);
        datasets::ClusteredSpec spec{nb, c.d, 20, 0.1f, rng()};
        auto xb = datasets::clustered(spec, 0);
        spec.n = smallUnderSanitizer(60, 10);
        auto xq = datasets::clustered(spec, 1);
        index.add(nb, xb.data());
        SCOPED_TRACE(
                "d=" + std::to_string(c.d) + " M=" + std::to_string(c.M) +
                " nb=" + std::to_string(nb));
        ASSERT_TRUE(index.pqMode());
        // Every code names the centroid nearest its subvector (up to float rounding).
        const std::vector<float> cent = index.pqCentroids();
        const std::vector<uint8_t> codes = index.pqCodes();
        const int dsub = c.d / c.M;
        int64_t farther = 0;
        for (int64_t v = 0; v < nb; ++v) {
            for (int m = 0; m < c.M; ++m) {
                const float* sv = xb.data() + v * c.d + m * dsub;
                const float* base = cent.data() + size_t(m) * 256 * dsub;
                float best = std::numeric_limits<float>::infinity();
                for (int k = 0; k < 256; ++k) {
                    best = std::min(best, kernels::bangPqTableEntry(sv, base + k * dsub, dsub));
                }
                const float mine =
                        kernels::bangPqTableEntry(sv, base + codes[v * c.M + m] * dsub, dsub);
                farther += mine > best * (1 + 1e-5f) + 1e-7f;
            }
        }
        EXPECT_EQ(farther, 0);
        for (int L : Ls) {
            expectMatchesPqReference(index, xb, xq, L);
        }
    }
}

TEST(GpuIndexBangPq, MatchesCpuReferenceOnGivenGraphsAndCodes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed() + 21);
    // Random graphs with holes and unreachable parts, random codebooks and codes (every
    // byte value), as setGraph takes them.
    const int d = 8, R = 5, M = 4;
    const int64_t nb = 500;
    GpuIndexBang index(res, d, faiss::METRIC_L2, pqConfig(M, R));
    auto xb = datasets::uniform(nb, d, rng());
    auto xq = datasets::uniform(50, d, rng());
    auto cent = datasets::uniform(256, d, rng());
    std::vector<uint8_t> codes(size_t(nb) * M);
    for (uint8_t& c : codes) {
        c = uint8_t(rng() & 255);
    }
    std::vector<int32_t> graph(size_t(nb) * R);
    for (int64_t v = 0; v < nb; ++v) {
        std::vector<int32_t> row;
        while (int(row.size()) < R) {
            int32_t id = int32_t(rng() % (nb + 100)) - 100;
            id = id < 0 ? -1 : id;
            if (id == -1 || std::find(row.begin(), row.end(), id) == row.end()) {
                row.push_back(id);
            }
        }
        std::copy(row.begin(), row.end(), graph.begin() + v * R);
    }
    index.setGraph(nb, xb.data(), graph.data(), 17, cent.data(), codes.data());
    EXPECT_EQ(index.graph(), graph);
    EXPECT_EQ(index.pqCentroids(), cent);
    EXPECT_EQ(index.pqCodes(), codes);
    for (int L : {3, 20, 64}) {
        expectMatchesPqReference(index, xb, xq, L);
    }
}

TEST(GpuIndexBangPq, RecallOnClustered100K) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // 1000 blobs of ~100 vectors: exhaustive ADC with M = d / 4 plus the exact re-rank of
    // its 100 best reaches recall@10 ~1.0 on such data (faiss IndexPQ), 0.81 on blobs
    // of 500 (every 4-dimensional sub-space is then a smooth mixture that 256 centroids
    // quantize coarsely).
    const int d = 32, k = 10, M = d / 4;
    const int64_t nb = 100000, nq = 1000;
    datasets::ClusteredSpec spec{nb, d, 1000, 0.1f, 99};
    auto xb = datasets::clustered(spec, 0);
    spec.n = nq;
    auto xq = datasets::clustered(spec, 1);
    GpuIndexFlat flat(res, d);
    flat.add(nb, xb.data());
    std::vector<float> gtD(nq * k);
    std::vector<int64_t> gtI(nq * k);
    flat.search(nq, xq.data(), k, gtD.data(), gtI.data());

    GpuIndexBang index(res, d, faiss::METRIC_L2, pqConfig(M));
    index.add(nb, xb.data());
    // Device memory: exact mode's (vectors, norms, entry hubs, graph) plus codes and
    // codebooks; the search loop reads M bytes per visited vector instead of 4 d.
    const int R = index.graphDegree();
    EXPECT_EQ(
            index.deviceMemoryBytes(),
            size_t(nb) * (d + 1) * 4 + entryHubBytes(nb, d) + size_t(nb) * R * 4 + size_t(nb) * M +
                    256 * d * 4);
    GpuIndexBang exactMode(res, d);
    EXPECT_EQ(index.traversalBytesPerVector(), size_t(M));
    EXPECT_EQ(exactMode.traversalBytesPerVector(), size_t(d) * 4);
    EXPECT_LT(index.traversalBytesPerVector(), exactMode.traversalBytesPerVector());
    std::printf(
            "PQ mode M=%d: %zu traversal bytes per vector (exact mode %zu), device memory "
            "%.1f bytes per vector\n",
            M, index.traversalBytesPerVector(), exactMode.traversalBytesPerVector(),
            double(index.deviceMemoryBytes()) / nb);

    std::vector<float> D(nq * k);
    std::vector<int64_t> I(nq * k);
    double at100 = 0;
    for (int L : {10, 20, 40, 60, 80, 100, 160}) {
        SearchParametersBang params;
        params.search_L = L;
        index.search(nq, xq.data(), k, D.data(), I.data(), &params);
        const double r = recallAt10(gtI, I, nq);
        std::printf("GpuIndexBang PQ M=%d 100K x %d clustered: L=%d recall@10 %.4f\n", M, d, L, r);
        if (L == 100) {
            at100 = r;
        }
        // Returned distances are exact (the re-rank), sorted.
        for (int64_t q = 0; q < nq; ++q) {
            EXPECT_TRUE(std::is_sorted(D.begin() + q * k, D.begin() + (q + 1) * k));
        }
    }
    EXPECT_GE(at100, 0.9);
    int64_t off = 0;
    for (int64_t q = 0; q < nq; ++q) {
        for (int j = 0; j < k; ++j) {
            const int64_t id = I[q * k + j];
            ASSERT_GE(id, 0);
            double s = 0;
            for (int t = 0; t < d; ++t) {
                const double u = double(xq[q * d + t]) - xb[id * d + t];
                s += u * u;
            }
            off += std::abs(D[q * k + j] - s) > 1e-4 * (1 + s);
        }
    }
    EXPECT_EQ(off, 0);
    // k < L returns the first k of the same re-ranked list; the kernels agree.
    DeviceResults all = searchWith(index, xq, 100, 100, BangKernel::kPersistent);
    DeviceResults top = searchWith(index, xq, k, 100, BangKernel::kStepwise);
    for (int64_t q = 0; q < nq; ++q) {
        for (int j = 0; j < k; ++j) {
            EXPECT_EQ(top.I[q * k + j], all.I[q * 100 + j]);
            EXPECT_EQ(top.D[q * k + j], all.D[q * 100 + j]);
        }
    }
    EXPECT_EQ(top.iters, all.iters);
}

TEST(GpuIndexBangPq, BadConfigsAndInputsThrowAndLeaveIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 24;
    auto make = [&](int M) { GpuIndexBang(res, d, faiss::METRIC_L2, pqConfig(M)); };
    expectThrowNaming([&] { make(5); }, {"pqSubquantizers=5", "d=24"});
    expectThrowNaming([&] { make(48); }, {"pqSubquantizers=48", "d=24"});
    expectThrowNaming([&] { make(-1); }, {"pqSubquantizers=-1", "128"});
    expectThrowNaming(
            [&] { GpuIndexBang(res, 258, faiss::METRIC_L2, pqConfig(129)); },
            {"pqSubquantizers=129", "128"});
    EXPECT_NO_THROW(make(24));
    EXPECT_NO_THROW(make(1));

    // Fewer than 256 vectors in all: refused, nothing stored; 256 is enough.
    GpuIndexBang index(res, d, faiss::METRIC_L2, pqConfig(6, 16));
    auto xb = datasets::uniform(600, d, 3);
    expectThrowNaming([&] { index.add(255, xb.data()); }, {"256", "255"});
    EXPECT_EQ(index.ntotal, 0);
    EXPECT_TRUE(index.pqCodes().empty());
    index.add(256, xb.data());
    ASSERT_EQ(index.ntotal, 256);
    EXPECT_EQ(index.pqCodes().size(), size_t(256) * 6);

    // setGraph: PQ arrays given halfway, to an exact index, or with a NaN codebook entry.
    const std::vector<int32_t> graph = index.graph();
    const std::vector<float> cent = index.pqCentroids();
    const std::vector<uint8_t> codes = index.pqCodes();
    const int64_t entry = index.entryPoint();
    auto q = datasets::uniform(5, d, 4);
    const DeviceResults before = searchWith(index, q, 5, 20, BangKernel::kPersistent);
    auto unchanged = [&] {
        EXPECT_EQ(index.ntotal, 256);
        EXPECT_EQ(index.graph(), graph);
        EXPECT_EQ(index.pqCentroids(), cent);
        EXPECT_EQ(index.pqCodes(), codes);
        EXPECT_EQ(index.entryPoint(), entry);
        const DeviceResults after = searchWith(index, q, 5, 20, BangKernel::kPersistent);
        EXPECT_EQ(after.I, before.I);
        EXPECT_EQ(after.D, before.D);
    };
    expectThrowNaming(
            [&] { index.setGraph(256, xb.data(), graph.data(), 0, cent.data(), nullptr); },
            {"both"});
    unchanged();
    std::vector<float> nanCent = cent;
    nanCent[77] = std::nanf("");
    EXPECT_THROW(
            index.setGraph(256, xb.data(), graph.data(), 0, nanCent.data(), codes.data()),
            faiss::FaissException);
    unchanged();
    GpuIndexBang exact(res, d, faiss::METRIC_L2, GpuIndexBangConfig());
    expectThrowNaming(
            [&] { exact.setGraph(256, xb.data(), graph.data(), 0, cent.data(), codes.data()); },
            {"exact mode"});
    EXPECT_EQ(exact.ntotal, 0);
}

TEST(GpuIndexBangPq, SecondAddKeepsTheCodebooksAndEncodesTheNewVectors) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // Under compute-sanitizer M = 2 (two codebooks to train), 260 + 60 vectors.
    const int d = 16, M = int(smallUnderSanitizer(4, 2));
    const int64_t first = smallUnderSanitizer(1500, 260), second = smallUnderSanitizer(1000, 60),
                  total = first + second;
    auto xa = datasets::uniform(first, d, 6);
    auto xb = datasets::uniform(second, d, 7);
    GpuIndexBang twice(res, d, faiss::METRIC_L2, pqConfig(M, 24));
    twice.add(first, xa.data());
    const std::vector<float> centroids = twice.pqCentroids();
    const std::vector<uint8_t> codesBefore = twice.pqCodes();
    twice.add(second, xb.data());
    EXPECT_EQ(twice.pqCentroids(), centroids);
    std::vector<uint8_t> expected = codesBefore;
    const std::vector<uint8_t> newCodes = encodeBangPq(second, d, M, centroids.data(), xb.data());
    expected.insert(expected.end(), newCodes.begin(), newCodes.end());
    EXPECT_EQ(twice.pqCodes(), expected);
    // Every stored vector finds itself at distance 0 (exact re-rank).
    std::vector<float> all(xa);
    all.insert(all.end(), xb.begin(), xb.end());
    std::vector<float> D(total);
    std::vector<int64_t> I(total);
    twice.search(total, all.data(), 1, D.data(), I.data());
    int64_t self = 0;
    for (int64_t i = 0; i < total; ++i) {
        self += I[i] == i && D[i] == 0.f;
    }
    EXPECT_GE(self, total * 99 / 100);
    twice.reset();
    EXPECT_EQ(twice.deviceMemoryBytes(), 0u);
    EXPECT_TRUE(twice.pqCodes().empty());
    EXPECT_TRUE(twice.pqCentroids().empty());
}

TEST(GpuIndexBangPq, SaveLoadRoundTrip) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // Under compute-sanitizer M = 2 (two codebooks to train), 260 vectors, 20 queries.
    const int d = 16, k = 10, M = int(smallUnderSanitizer(8, 2));
    const int64_t nb = smallUnderSanitizer(3000, 260);
    datasets::ClusteredSpec spec{nb, d, 30, 0.1f, 12};
    auto xb = datasets::clustered(spec, 0);
    spec.n = smallUnderSanitizer(200, 20);
    auto xq = datasets::clustered(spec, 1);
    GpuIndexBang index(res, d, faiss::METRIC_L2, pqConfig(M, 20));
    index.search_L = 48;
    index.add(nb, xb.data());
    const std::string path = std::string(::testing::TempDir()) + "bang_pq.fxidx";
    faiss_ext::write_index(&index, path.c_str());
    auto loaded = faiss_ext::read_index(path.c_str(), res);
    auto* back = dynamic_cast<GpuIndexBang*>(loaded.get());
    ASSERT_NE(back, nullptr);
    EXPECT_TRUE(back->pqMode());
    EXPECT_EQ(back->bangConfig().pqSubquantizers, M);
    EXPECT_EQ(back->search_L, 48);
    EXPECT_EQ(back->graph(), index.graph());
    EXPECT_EQ(back->entryPoint(), index.entryPoint());
    EXPECT_EQ(back->pqCentroids(), index.pqCentroids());
    EXPECT_EQ(back->pqCodes(), index.pqCodes());
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        const DeviceResults a = searchWith(index, xq, k, 48, kernel);
        const DeviceResults b = searchWith(*back, xq, k, 48, kernel);
        EXPECT_EQ(a.I, b.I);
        EXPECT_EQ(a.D, b.D);
        EXPECT_EQ(a.iters, b.iters);
    }
    // Truncated anywhere (the codes come last): refused.
    const std::vector<uint8_t> bytes = faiss_ext::serialize_index(&index);
    for (size_t cut :
         {size_t(74), bytes.size() / 2, bytes.size() - 8 - size_t(nb) * M + 5, bytes.size() - 9}) {
        EXPECT_THROW(faiss_ext::deserialize_index(bytes.data(), cut, res), faiss::FaissException)
                << "cut at " << cut;
    }
    // An empty PQ index round-trips, and searches as empty.
    GpuIndexBang empty(res, d, faiss::METRIC_L2, pqConfig(4));
    const std::vector<uint8_t> e = faiss_ext::serialize_index(&empty);
    auto eBack = faiss_ext::deserialize_index(e.data(), e.size(), res);
    auto* eb = dynamic_cast<GpuIndexBang*>(eBack.get());
    ASSERT_NE(eb, nullptr);
    EXPECT_EQ(eb->bangConfig().pqSubquantizers, 4);
    EXPECT_EQ(eb->ntotal, 0);
    std::vector<float> D(2 * k);
    std::vector<int64_t> I(2 * k);
    eb->search(2, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(std::count(I.begin(), I.end(), int64_t(-1)), 2 * k);
}

TEST(GpuIndexBangPq, ReadsVersion1Files) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 12;
    const int64_t nb = smallUnderSanitizer(800, 300);
    auto xb = datasets::uniform(nb, d, 13);
    auto xq = datasets::uniform(20, d, 14);
    GpuIndexBang index(res, d);
    index.add(nb, xb.data());
    // A version 1 file of the same index (no configuration struct, no PQ state).
    BangImage im;
    im.d = d;
    im.config = index.bangConfig();
    im.searchL = index.search_L;
    im.ntotal = index.ntotal;
    im.entry = index.entryPoint();
    im.vectors.resize(size_t(index.ntotal) * d);
    index.reconstruct_n(0, index.ntotal, im.vectors.data());
    im.graph = index.graph();
    std::vector<uint8_t> v1 = test::legacyBangFile(im, 1);
    auto loaded = faiss_ext::deserialize_index(v1.data(), v1.size(), res);
    auto* back = dynamic_cast<GpuIndexBang*>(loaded.get());
    ASSERT_NE(back, nullptr);
    EXPECT_FALSE(back->pqMode());
    EXPECT_EQ(back->graph(), index.graph());
    const DeviceResults a = searchWith(index, xq, 5, 30, BangKernel::kPersistent);
    const DeviceResults b = searchWith(*back, xq, 5, 30, BangKernel::kPersistent);
    EXPECT_EQ(a.I, b.I);
    EXPECT_EQ(a.D, b.D);
    // A version this build does not know: refused naming it.
    const uint32_t next = kIndexFormatVersion + 1;
    std::memcpy(v1.data() + 8, &next, 4);
    expectThrowNaming(
            [&] { faiss_ext::deserialize_index(v1.data(), v1.size(), res); },
            {"version " + std::to_string(next)});
}
