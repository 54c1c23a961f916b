// GpuIndexBang with its full vectors in host memory (BangVectorPlacement::kHost): the
// same results as with the vectors on the device, bit for bit, on every path that
// reads them (the walk's final re-rank from either entry, the filtered search's graph
// walk and exact fallback, reconstruct, a later add, a rebuild after remove_ids, save /
// load, inner product; a query with a NaN), and where the bytes are.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/index_io.h>
#include <kernels/IdFilter.h>

#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 32;
constexpr int kK = 10;
constexpr int kL = 48;

/// PQ mode with M = 8, or under compute-sanitizer M = 1: every add that builds trains
/// M codebooks (M + 1 for inner product) of 25 k-means iterations each, the time there;
/// where the rows live does not depend on M.
GpuIndexBangConfig placedConfig(BangVectorPlacement placement) {
    GpuIndexBangConfig c;
    c.pqSubquantizers = int(smallUnderSanitizer(8, 1));
    c.build.graphDegree = 24;
    c.build.candidates = 32;
    c.vectorPlacement = placement;
    return c;
}

struct Results {
    std::vector<float> D;
    std::vector<int64_t> I;
};

Results searchOf(
        const GpuIndexBang& index,
        const std::vector<float>& xq,
        BangEntry entry,
        const faiss::IDSelector* sel = nullptr) {
    const int64_t nq = int64_t(xq.size()) / index.d;
    SearchParametersBang p;
    p.search_L = kL;
    p.entry = entry;
    p.sel = const_cast<faiss::IDSelector*>(sel);
    Results r{std::vector<float>(size_t(nq) * kK), std::vector<int64_t>(size_t(nq) * kK)};
    index.search(nq, xq.data(), kK, r.D.data(), r.I.data(), &p);
    return r;
}

/// Both indexes hold the same graph, codes and vectors and answer every search the same.
void expectSameIndex(
        const GpuIndexBang& host,
        const GpuIndexBang& device,
        const std::vector<float>& xq) {
    ASSERT_EQ(host.ntotal, device.ntotal);
    EXPECT_EQ(host.graph(), device.graph());
    EXPECT_EQ(host.entryPoint(), device.entryPoint());
    EXPECT_EQ(host.pqCodes(), device.pqCodes());
    std::vector<float> a(size_t(host.nodeCount()) * host.d), b(a.size());
    host.copyNodeVectors(0, host.nodeCount(), a.data());
    device.copyNodeVectors(0, device.nodeCount(), b.data());
    EXPECT_EQ(a, b);
    for (BangEntry entry : {BangEntry::kMedoid, BangEntry::kNearestHub}) {
        SCOPED_TRACE(entry == BangEntry::kMedoid ? "medoid" : "nearest hub");
        const Results h = searchOf(host, xq, entry), d = searchOf(device, xq, entry);
        EXPECT_EQ(h.I, d.I);
        EXPECT_EQ(h.D, d.D);
    }
    // The kernels themselves (queries as wide as the stored rows: L2 only here).
    if (host.metric_type != faiss::METRIC_L2) {
        return;
    }
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        const DeviceResults h = searchWith(host, xq, kK, kL, kernel);
        const DeviceResults d = searchWith(device, xq, kK, kL, kernel);
        EXPECT_EQ(h.I, d.I);
        EXPECT_EQ(h.D, d.D);
        EXPECT_EQ(h.iters, d.iters);
    }
}

/// The vectors' bytes (as stored: transformed and padded for inner product) are in
/// host memory, and not among the device's.
void expectVectorsOnHost(const GpuIndexBang& host, const GpuIndexBang& device) {
    const size_t rows =
            size_t(host.nodeCount()) * GpuIndexBangAccess::deviceState(host).dim() * sizeof(float);
    EXPECT_EQ(host.hostMemoryBytes(), rows);
    EXPECT_EQ(device.hostMemoryBytes(), 0u);
    EXPECT_GE(device.deviceMemoryBytes(), host.deviceMemoryBytes() + rows);
}

} // namespace

TEST(GpuIndexBangPlacement, HostVectorsNeedPqMode) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    GpuIndexBangConfig c = placedConfig(BangVectorPlacement::kHost);
    c.pqSubquantizers = 0;
    try {
        GpuIndexBang index(res, kD, faiss::METRIC_L2, c);
        ADD_FAILURE() << "exact mode with the vectors on the host was accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("vectorPlacement"), std::string::npos) << e.what();
    }
    c = placedConfig(BangVectorPlacement(7));
    EXPECT_THROW(GpuIndexBang(res, kD, faiss::METRIC_L2, c), faiss::FaissException);
}

TEST(GpuIndexBangPlacement, SameResultsAsDeviceVectorsOnEveryPath) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // Under compute-sanitizer a fifth of the vectors (the load's pool peak below is
    // bounded by a quarter of the host rows: kept at 600 of them) and 20 queries.
    const int64_t nb = smallUnderSanitizer(3000, 600), more = smallUnderSanitizer(500, 100);
    datasets::ClusteredSpec spec{nb + more, kD, 30, 0.1f, testSeed() + 71};
    const std::vector<float> all = datasets::clustered(spec, 0);
    spec.n = smallUnderSanitizer(1500, 20);
    std::vector<float> xq = datasets::clustered(spec, 1);
    xq[7 * kD + 3] = std::numeric_limits<float>::quiet_NaN();
    GpuIndexBang host(res, kD, faiss::METRIC_L2, placedConfig(BangVectorPlacement::kHost));
    GpuIndexBang device(res, kD, faiss::METRIC_L2, placedConfig(BangVectorPlacement::kDevice));
    host.add(nb, all.data());
    device.add(nb, all.data());
    {
        SCOPED_TRACE("built");
        expectVectorsOnHost(host, device);
        expectSameIndex(host, device, xq);
        const Results r = searchOf(host, xq, BangEntry::kNearestHub);
        for (int j = 0; j < kK; ++j) {
            EXPECT_EQ(r.I[7 * kK + j], -1); // the query with a NaN
        }
        EXPECT_GE(r.I[8 * kK], 0);
    }
    std::vector<float> row(kD);
    host.reconstruct(17, row.data());
    EXPECT_EQ(row, std::vector<float>(all.begin() + 17 * kD, all.begin() + 18 * kD));

    // Filtered: at this size the index searches the allowed rows exactly (gathered from
    // the host rows)...
    const int64_t lo = 100, hi = lo + nb / 2;
    faiss::IDSelectorRange sel(lo, hi);
    ASSERT_TRUE(planBangFilteredSearch(
                        hi - lo, nb, kL, host.graphDegree(), kK, GpuIndexBang::kMaxSearchL)
                        .exact);
    const Results h = searchOf(host, xq, BangEntry::kNearestHub, &sel);
    const Results d = searchOf(device, xq, BangEntry::kNearestHub, &sel);
    EXPECT_EQ(h.I, d.I);
    EXPECT_EQ(h.D, d.D);
    // ... and the filtered walk (its own list of allowed results, re-ranked the same way)
    // runs when the state is searched with the allowed bits.
    std::vector<uint32_t> words(size_t(kernels::idFilterWords(nb)), 0u);
    for (int64_t v = lo; v < hi; ++v) {
        words[size_t(v >> 5)] |= 1u << (v & 31);
    }
    auto allow = res.alloc<uint32_t>(words.size());
    copyToDevice(allow.data(), words.data(), words.size(), res.stream());
    auto q = res.alloc<float>(xq.size());
    copyToDevice(q.data(), xq.data(), xq.size(), res.stream());
    const int64_t nq = int64_t(xq.size()) / kD;
    std::vector<std::vector<int64_t>> walkI;
    std::vector<std::vector<float>> walkD;
    for (const GpuIndexBang* index : {&host, &device}) {
        auto dD = res.alloc<float>(size_t(nq) * kK);
        auto dI = res.alloc<int64_t>(size_t(nq) * kK);
        GpuIndexBangAccess::deviceState(*index).search(
                q.data(), nq, kK, kL, dD.data(), dI.data(), nullptr, allow.data(),
                BangEntry::kNearestHub);
        walkD.push_back(copyToHostVector(dD.data(), dD.size(), res.stream()));
        walkI.push_back(copyToHostVector(dI.data(), dI.size(), res.stream()));
    }
    EXPECT_EQ(walkI[0], walkI[1]);
    EXPECT_EQ(walkD[0], walkD[1]);
    for (int64_t id : walkI[0]) {
        EXPECT_TRUE(id == -1 || (id >= lo && id < hi)) << id;
    }

    // A later add extends the graph over the uploaded rows; the vectors go back to the host.
    host.add(more, all.data() + nb * kD);
    device.add(more, all.data() + nb * kD);
    {
        SCOPED_TRACE("extended");
        expectVectorsOnHost(host, device);
        expectSameIndex(host, device, xq);
    }

    // After remove_ids the next add rebuilds from the host rows.
    faiss::IDSelectorRange gone(0, 200);
    EXPECT_EQ(host.remove_ids(gone), 200u);
    EXPECT_EQ(device.remove_ids(gone), 200u);
    host.add(more, all.data());
    device.add(more, all.data());
    {
        SCOPED_TRACE("rebuilt");
        expectVectorsOnHost(host, device);
        expectSameIndex(host, device, xq);
    }

    // Saved and loaded: the placement is part of the configuration, and the load never
    // holds the rows on the device.
    const std::vector<uint8_t> bytes = serialize_index(&host);
    const PoolPeak pool(res);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    res.synchronize();
    auto* back = dynamic_cast<GpuIndexBang*>(loaded.get());
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->bangConfig().vectorPlacement, BangVectorPlacement::kHost);
    EXPECT_LT(pool.bytes(), back->deviceMemoryBytes() + back->hostMemoryBytes() / 4);
    {
        SCOPED_TRACE("loaded");
        expectVectorsOnHost(*back, device);
        expectSameIndex(*back, device, xq);
    }

    host.reset();
    EXPECT_EQ(host.hostMemoryBytes(), 0u);
    EXPECT_EQ(host.deviceMemoryBytes(), 0u);
}

TEST(GpuIndexBangPlacement, InnerProductKeepsTheTransformedRowsOnTheHost) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int64_t nb = smallUnderSanitizer(2000, 300);
    datasets::ClusteredSpec spec{nb, kD, 25, 0.1f, testSeed() + 72};
    const std::vector<float> xb = datasets::clustered(spec, 0);
    spec.n = smallUnderSanitizer(80, 10);
    const std::vector<float> xq = datasets::clustered(spec, 1);
    GpuIndexBang host(
            res, kD, faiss::METRIC_INNER_PRODUCT, placedConfig(BangVectorPlacement::kHost));
    GpuIndexBang device(
            res, kD, faiss::METRIC_INNER_PRODUCT, placedConfig(BangVectorPlacement::kDevice));
    host.add(nb, xb.data());
    device.add(nb, xb.data());
    expectVectorsOnHost(host, device);
    expectSameIndex(host, device, xq);
}
