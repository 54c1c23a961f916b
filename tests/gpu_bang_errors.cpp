// GpuIndexBang's own bad inputs (worklist sizes, parameters, given graphs, its
// configuration, a corrupt graph in a file): errors are faiss::FaissException, name
// the bad value, and leave the index as it was. What every index does alike, saving
// and loading included, is gpu_index_contract.cpp.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <faiss/IndexIVF.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/index_io.h>

#include "LegacyIndexFiles.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// A search snapshot plus the graph: a failed call must leave both as they were.
struct Snapshot {
    SearchSnapshot search;
    std::vector<int32_t> graph;
    int64_t entry;
};

Snapshot snapshot(const GpuIndexBang& index, const std::vector<float>& q, int k) {
    return Snapshot{snapshotSearch(index, q, k), index.graph(), index.entryPoint()};
}

void expectSame(const Snapshot& a, const Snapshot& b) {
    expectSameSearch(a.search, b.search);
    EXPECT_EQ(a.graph, b.graph);
    EXPECT_EQ(a.entry, b.entry);
}

/// Runs fn, expects a FaissException whose message contains `needle`.
template <typename Fn>
void expectThrowNaming(Fn fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no exception; expected one naming " << needle;
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

} // namespace

TEST(GpuIndexBangErrors, BadInputsThrowAndLeaveIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 4;
    const int64_t n = smallUnderSanitizer(800, 200);
    GpuIndexBang index(res, d);
    auto xb = datasets::uniform(n, d, 1);
    auto q = datasets::uniform(1, d, 2);
    index.add(n, xb.data());
    index.search_L = 20;
    Snapshot before = snapshot(index, q, k);
    std::vector<float> D(3000);
    std::vector<int64_t> I(3000);

    EXPECT_NO_THROW(index.train(10, xb.data())); // trained from the start: a no-op

    index.search_L = 0;
    expectThrowNaming([&] { index.search(1, q.data(), k, D.data(), I.data()); }, "search_L=0");
    index.search_L = 1025;
    expectThrowNaming([&] { index.search(1, q.data(), k, D.data(), I.data()); }, "1025");
    index.search_L = 20;
    SearchParametersBang params;
    params.search_L = -3;
    expectThrowNaming(
            [&] { index.search(1, q.data(), k, D.data(), I.data(), &params); }, "search_L=-3");
    params.search_L = 5000;
    expectThrowNaming([&] { index.search(1, q.data(), k, D.data(), I.data(), &params); }, "5000");
    params.search_L = 30;
    params.entry = static_cast<BangEntry>(7);
    expectThrowNaming(
            [&] { index.search(1, q.data(), k, D.data(), I.data(), &params); }, "entry=7");
    params.entry = BangEntry::kMedoid;
    faiss::SearchParametersIVF foreign;
    expectThrowNaming(
            [&] { index.search(1, q.data(), k, D.data(), I.data(), &foreign); },
            "SearchParametersBang");
    faiss::SearchParameters plain; // no knobs: the index's search_L
    std::vector<float> Dp(k);
    std::vector<int64_t> Ip(k);
    index.search(1, q.data(), k, Dp.data(), Ip.data(), &plain);
    EXPECT_EQ(Ip, before.search.I);
    {
        // The device entry resolves the same knobs: refused before anything runs.
        auto qDev = res.alloc<float>(size_t(d));
        auto dDev = res.alloc<float>(1025);
        auto iDev = res.alloc<int64_t>(1025);
        copyToDevice(qDev.data(), q.data(), size_t(d), res.stream());
        params.search_L = 1025;
        expectThrowNaming(
                [&] { index.searchDevice(1, qDev.data(), k, dDev.data(), iDev.data(), &params); },
                "search_L=1025");
        expectThrowNaming(
                [&] { index.searchDevice(1, qDev.data(), 1025, dDev.data(), iDev.data()); },
                "k=1025");
        params.search_L = 30;
    }

    expectThrowNaming([&] { index.reconstruct(n, D.data()); }, std::to_string(n));
    EXPECT_THROW(index.reconstruct_n(n - 10, 11, D.data()), faiss::FaissException);

    // setGraph: bad ids, a repeated neighbour, a bad entry point, NaN vectors.
    const int R = index.graphDegree();
    std::vector<int32_t> g(size_t(10) * R, -1);
    g[3 * R] = 10;
    expectThrowNaming([&] { index.setGraph(10, xb.data(), g.data(), 0); }, "is 10");
    g[3 * R] = -2;
    expectThrowNaming([&] { index.setGraph(10, xb.data(), g.data(), 0); }, "is -2");
    g[3 * R] = 4;
    g[3 * R + 5] = 4;
    expectThrowNaming([&] { index.setGraph(10, xb.data(), g.data(), 0); }, "twice");
    g[3 * R + 5] = -1;
    expectThrowNaming([&] { index.setGraph(10, xb.data(), g.data(), 10); }, "entry point 10");
    EXPECT_THROW(index.setGraph(10, xb.data(), nullptr, 0), faiss::FaissException);
    EXPECT_THROW(index.setGraph(0, xb.data(), g.data(), 0), faiss::FaissException);
    std::vector<float> bad = xb;
    bad[2] = std::nanf("");
    EXPECT_THROW(index.setGraph(10, bad.data(), g.data(), 0), faiss::FaissException);

    expectSame(before, snapshot(index, q, k));
}

TEST(GpuIndexBangErrors, BadConstruction) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    expectThrowNaming(
            [&] { GpuIndexBang(res, 8, faiss::MetricType(7)); },
            "METRIC_INNER_PRODUCT (got metric 7)");
    GpuIndexBangConfig pq;
    pq.pqSubquantizers = 128; // inner product codes one more: 129
    expectThrowNaming(
            [&] { GpuIndexBang(res, 128, faiss::METRIC_INNER_PRODUCT, pq); },
            "codes 129 sub-quantizers");
    EXPECT_THROW(GpuIndexBang(res, 0), faiss::FaissException);
    expectThrowNaming([&] { GpuIndexBang(res, 1 << 20); }, "shared memory");
    auto make = [&](GpuIndexBangConfig c) { GpuIndexBang(res, 8, faiss::METRIC_L2, c); };
    GpuIndexBangConfig c;
    c.build.graphDegree = 0;
    expectThrowNaming([&] { make(c); }, "graphDegree=0");
    c.build.graphDegree = 129;
    expectThrowNaming([&] { make(c); }, "graphDegree=129");
    c = GpuIndexBangConfig();
    c.build.alpha = 0.5f;
    expectThrowNaming([&] { make(c); }, "alpha=0.5");
    c.build.alpha = std::nanf("");
    EXPECT_THROW(make(c), faiss::FaissException);
    c = GpuIndexBangConfig();
    c.build.candidates = 0;
    expectThrowNaming([&] { make(c); }, "build.candidates=0");
    c.build.candidates = 1025;
    expectThrowNaming([&] { make(c); }, "build.candidates=1025");
    c = GpuIndexBangConfig();
    c.build.candidateLists = -2;
    expectThrowNaming([&] { make(c); }, "build.candidateLists=-2");
    c = GpuIndexBangConfig();
    c.build.candidateProbes = 0;
    expectThrowNaming([&] { make(c); }, "build.candidateProbes=0");
    c.build.candidateProbes = 2049;
    expectThrowNaming([&] { make(c); }, "build.candidateProbes=2049");
    c = GpuIndexBangConfig();
    c.build.hubs = -1;
    expectThrowNaming([&] { make(c); }, "build.hubs=-1");
    c = GpuIndexBangConfig();
    c.build.passes = 17;
    expectThrowNaming([&] { make(c); }, "build.passes=17");
    c = GpuIndexBangConfig();
    c.build.searchL = 0;
    expectThrowNaming([&] { make(c); }, "build.searchL=0");
    c = GpuIndexBangConfig();
    c.pqSubquantizers = 3; // does not divide d = 8
    expectThrowNaming([&] { make(c); }, "pqSubquantizers=3");
    c = GpuIndexBangConfig();
    c.build.graphDegree = 128;
    EXPECT_NO_THROW(make(c));
}

TEST(GpuIndexBangErrors, FileWithAGraphIdOutOfRangeIsRefused) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 12;
    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = 20;
    GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
    const int32_t n = int32_t(smallUnderSanitizer(3000, 300));
    auto xb = datasets::uniform(n, d, 11);
    index.add(n, xb.data());
    // A file whose checksums hold (version 3 has none), so that the graph check itself
    // answers: the graph is the last array before the end marker (exact mode).
    std::vector<uint8_t> broken = version3File(faiss_ext::serialize_index(&index));
    const size_t graphStart = broken.size() - 8 - size_t(n) * 20 * 4;
    int32_t first = -2;
    std::memcpy(&first, broken.data() + graphStart, 4);
    ASSERT_EQ(first, index.graph()[0]);
    const int32_t outside = n;
    std::memcpy(broken.data() + graphStart, &outside, 4);
    expectThrowNaming(
            [&] { faiss_ext::deserialize_index(broken.data(), broken.size(), res); },
            "graph id " + std::to_string(n));
}
