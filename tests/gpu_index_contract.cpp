// The contract every GpuIndex keeps, one typed test instantiated per index type:
// bad input throws faiss::FaissException and leaves the index as it was (exhausted
// device memory included); add then search finds the stored vectors, searchDevice
// answers as search, empty indexes and NaN queries give missing results; a save / load
// round trip keeps the data, the configuration and the answers. What only one index
// does stays in its own suite (gpu_flat*, gpu_ivf*, gpu_bang*).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/index_io.h>

#include "FlippedBytes.h"
#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// How the contract builds and inspects one index type. Every index is made with a
/// configuration whose fields all differ from the defaults, so that the round trip
/// shows each one kept.
template <typename Index>
struct IndexTraits;

template <>
struct IndexTraits<GpuIndexFlat> {
    /// Whether the index takes ids of its own (else they are sequential).
    static constexpr bool kAddWithIds = false;
    /// The sections of its files (impl/IndexImage.h).
    static std::vector<std::string> sections() {
        return {"fields", "vectors"};
    }
    static std::vector<faiss::MetricType> metrics() {
        return {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT};
    }
    static std::unique_ptr<GpuIndexFlat> make(
            GpuResources& res,
            int d,
            faiss::MetricType m = faiss::METRIC_L2) {
        GpuIndexFlatConfig c;
        c.pageBytes = size_t(3) << 20;
        c.float16Copy = true; // the contract covers the copy's storage too
        return std::make_unique<GpuIndexFlat>(res, d, m, c);
    }
    /// Ready to add (trained).
    static void prepare(GpuIndexFlat&, int64_t, const float*) {}
    static void expectSameSetup(const GpuIndexFlat& a, const GpuIndexFlat& b) {
        EXPECT_EQ(a.flatConfig().pageBytes, b.flatConfig().pageBytes);
        EXPECT_EQ(a.flatConfig().precision, b.flatConfig().precision);
        EXPECT_EQ(a.flatConfig().float16Copy, b.flatConfig().float16Copy);
        EXPECT_EQ(a.flatConfig().int8Copy, b.flatConfig().int8Copy);
    }
    /// b loaded from a version 3 file of a: everything but the copy flags (version 7 on),
    /// which such files load without.
    static void expectSameSetupFromVersion3(const GpuIndexFlat& a, const GpuIndexFlat& b) {
        EXPECT_EQ(a.flatConfig().pageBytes, b.flatConfig().pageBytes);
        EXPECT_EQ(a.flatConfig().precision, b.flatConfig().precision);
        EXPECT_FALSE(b.flatConfig().float16Copy || b.flatConfig().int8Copy);
    }
    /// Device state beyond the vectors, for "left as it was" checks.
    static std::vector<int64_t> state(const GpuIndexFlat&) {
        return {};
    }
};

template <>
struct IndexTraits<GpuIndexIVFFlat> {
    static constexpr bool kAddWithIds = true;
    static constexpr int64_t kNlist = 16;
    static std::vector<std::string> sections() {
        return {"fields", "centroids", "inverted lists"};
    }
    static std::vector<faiss::MetricType> metrics() {
        return {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT};
    }
    static std::unique_ptr<GpuIndexIVFFlat> make(
            GpuResources& res,
            int d,
            faiss::MetricType m = faiss::METRIC_L2) {
        GpuIndexIVFFlatConfig c;
        c.pageBytes = size_t(3) << 20;
        c.mergePath = IvfMergePath::kHeap;
        c.scanPath = IvfScanPath::kPerQuery;
        c.listChunkVectors = 64;
        auto index = std::make_unique<GpuIndexIVFFlat>(res, d, kNlist, m, c);
        index->nprobe = size_t(kNlist); // every list: exact answers
        return index;
    }
    static void prepare(GpuIndexIVFFlat& index, int64_t n, const float* x) {
        index.train(n, x);
    }
    static void expectSameSetup(const GpuIndexIVFFlat& a, const GpuIndexIVFFlat& b) {
        const GpuIndexIVFFlatConfig &x = a.ivfConfig(), &y = b.ivfConfig();
        EXPECT_EQ(x.pageBytes, y.pageBytes);
        EXPECT_EQ(x.mergePath, y.mergePath);
        EXPECT_EQ(x.scanPath, y.scanPath);
        EXPECT_EQ(x.listChunkVectors, y.listChunkVectors);
        EXPECT_EQ(a.nprobe, b.nprobe);
        EXPECT_EQ(a.nlist(), b.nlist());
    }
    /// Version 3 files hold every field these indexes are made with (the later fields
    /// load with their defaults, which make() keeps).
    static void expectSameSetupFromVersion3(const GpuIndexIVFFlat& a, const GpuIndexIVFFlat& b) {
        expectSameSetup(a, b);
    }
    static std::vector<int64_t> state(const GpuIndexIVFFlat& index) {
        std::vector<int64_t> lengths;
        for (int64_t l = 0; l < index.nlist(); ++l) {
            lengths.push_back(index.listLength(l));
        }
        return lengths;
    }
};

template <>
struct IndexTraits<GpuIndexBang> {
    static constexpr bool kAddWithIds = false;
    static std::vector<std::string> sections() {
        return {"fields", "vectors", "graph", "PQ codebooks and codes", "removed vectors"};
    }
    static std::vector<faiss::MetricType> metrics() {
        return {faiss::METRIC_L2};
    }
    static std::unique_ptr<GpuIndexBang> make(
            GpuResources& res,
            int d,
            faiss::MetricType m = faiss::METRIC_L2) {
        GpuIndexBangConfig c;
        c.pageBytes = size_t(3) << 20;
        c.build.graphDegree = 48;
        c.build.alpha = 1.25f;
        c.build.candidates = 48;
        c.build.hubs = 30;
        c.build.passes = 3;
        c.build.searchL = 72;
        auto index = std::make_unique<GpuIndexBang>(res, d, m, c);
        index->search_L = 80;
        return index;
    }
    static void prepare(GpuIndexBang&, int64_t, const float*) {}
    static void expectSameSetup(const GpuIndexBang& a, const GpuIndexBang& b) {
        const GpuIndexBangConfig &x = a.bangConfig(), &y = b.bangConfig();
        EXPECT_EQ(x.pageBytes, y.pageBytes);
        EXPECT_EQ(x.build.graphDegree, y.build.graphDegree);
        EXPECT_EQ(x.build.alpha, y.build.alpha);
        EXPECT_EQ(x.build.candidates, y.build.candidates);
        EXPECT_EQ(x.build.hubs, y.build.hubs);
        EXPECT_EQ(x.build.passes, y.build.passes);
        EXPECT_EQ(x.build.searchL, y.build.searchL);
        EXPECT_EQ(x.build.candidateLists, y.build.candidateLists);
        EXPECT_EQ(x.build.candidateProbes, y.build.candidateProbes);
        EXPECT_EQ(x.pqSubquantizers, y.pqSubquantizers);
        EXPECT_EQ(x.vectorPlacement, y.vectorPlacement);
        EXPECT_EQ(a.search_L, b.search_L);
    }
    static void expectSameSetupFromVersion3(const GpuIndexBang& a, const GpuIndexBang& b) {
        expectSameSetup(a, b);
    }
    static std::vector<int64_t> state(const GpuIndexBang& index) {
        const std::vector<int32_t> g = index.graph();
        std::vector<int64_t> s(g.begin(), g.end());
        s.push_back(index.entryPoint());
        return s;
    }
};

/// Search results, stored vectors and the type's extra state: equal before and after
/// a call that must leave the index as it was.
struct Snapshot {
    SearchSnapshot search;
    std::vector<float> vectors;
    std::vector<int64_t> state;
};

template <typename Index>
Snapshot snapshot(const Index& index, const std::vector<float>& q, int k) {
    Snapshot s{
            snapshotSearch(index, q, k), std::vector<float>(size_t(index.ntotal) * index.d),
            IndexTraits<Index>::state(index)};
    if (index.ntotal > 0) {
        index.reconstruct_n(0, index.ntotal, s.vectors.data());
    }
    return s;
}

void expectSame(const Snapshot& a, const Snapshot& b) {
    expectSameSearch(a.search, b.search);
    EXPECT_EQ(a.vectors, b.vectors);
    EXPECT_EQ(a.state, b.state);
}

std::string tempPath(const char* name) {
    return std::string(::testing::TempDir()) + name;
}

template <typename Index>
class GpuIndexContract : public ::testing::Test {
   protected:
    using Traits = IndexTraits<Index>;

    /// An index holding n uniform vectors (seed), trained on them where it trains.
    std::unique_ptr<Index> filled(
            GpuResources& res,
            int d,
            int64_t n,
            uint64_t seed,
            faiss::MetricType m = faiss::METRIC_L2) {
        auto index = Traits::make(res, d, m);
        const std::vector<float> x = datasets::uniform(n, d, seed);
        Traits::prepare(*index, n, x.data());
        index->add(n, x.data());
        return index;
    }
};

using IndexTypes = ::testing::Types<GpuIndexFlat, GpuIndexIVFFlat, GpuIndexBang>;

class IndexTypeNames {
   public:
    template <typename T>
    static std::string GetName(int) {
        if (std::is_same<T, GpuIndexFlat>::value) {
            return "Flat";
        }
        return std::is_same<T, GpuIndexIVFFlat>::value ? "IVFFlat" : "Bang";
    }
};

} // namespace

TYPED_TEST_SUITE(GpuIndexContract, IndexTypes, IndexTypeNames);

TYPED_TEST(GpuIndexContract, BadInputsThrowAndLeaveIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 4;
    const int64_t n = smallUnderSanitizer(800, 200);
    auto index = this->filled(res, d, n, 1);
    const auto xb = datasets::uniform(n, d, 1);
    const auto q = datasets::uniform(1, d, 2);
    const Snapshot before = snapshot(*index, q, k);
    std::vector<float> D(10 * 3000);
    std::vector<int64_t> I(10 * 3000);

    EXPECT_THROW(index->add(0, xb.data()), faiss::FaissException);
    EXPECT_THROW(index->add(-1, xb.data()), faiss::FaissException);
    EXPECT_THROW(index->add(5, nullptr), faiss::FaissException);
    std::vector<float> bad = xb;
    bad[3 * d + 1] = std::nanf("");
    EXPECT_THROW(index->add(10, bad.data()), faiss::FaissException);
    bad[3 * d + 1] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(index->add(10, bad.data()), faiss::FaissException);
    EXPECT_THROW(index->add_with_ids(10, xb.data(), nullptr), faiss::FaissException);
    if (!TestFixture::Traits::kAddWithIds) {
        // Sequential ids: add_with_ids is refused, and so is a row past ntotal (an index
        // with ids of its own leaves the rows of ids it does not store untouched).
        std::vector<int64_t> ids(10, 7);
        EXPECT_THROW(index->add_with_ids(10, xb.data(), ids.data()), faiss::FaissException);
        EXPECT_THROW(index->reconstruct_n(n - 10, 11, D.data()), faiss::FaissException);
    }

    EXPECT_THROW(index->search(0, q.data(), k, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index->search(1, q.data(), 0, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index->search(1, q.data(), 2049, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index->search(1, nullptr, k, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index->search(1, q.data(), k, nullptr, I.data()), faiss::FaissException);
    EXPECT_THROW(index->search(1, q.data(), k, D.data(), nullptr), faiss::FaissException);

    EXPECT_THROW(index->reconstruct(n, D.data()), faiss::FaissException);
    EXPECT_THROW(index->reconstruct(-1, D.data()), faiss::FaissException);
    EXPECT_THROW(index->reconstruct(0, nullptr), faiss::FaissException);
    EXPECT_THROW(index->reconstruct_n(0, -1, D.data()), faiss::FaissException);

    // A device pointer where host memory is expected (reconstruct), and the reverse.
    float* devPtr = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&devPtr), sizeof(float) * d * 4), cudaSuccess);
    EXPECT_THROW(index->reconstruct(0, devPtr), faiss::FaissException);
    EXPECT_THROW(index->searchDevice(1, devPtr, 0, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index->searchDevice(-1, devPtr, k, D.data(), I.data()), faiss::FaissException);
    cudaFree(devPtr);

    expectSame(before, snapshot(*index, q, k));
}

TYPED_TEST(GpuIndexContract, DeviceMemoryExhaustedLeavesIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 256, k = 3;
    auto index = this->filled(res, d, 2000, 5);
    const auto q = datasets::uniform(1, d, 6);
    const Snapshot before = snapshot(*index, q, k);

    const int64_t n = (int64_t(1) << 30) / (d * sizeof(float)); // 1 GiB of vectors
    std::vector<float> big(size_t(n) * d, 0.5f);
    {
        DeviceMemoryHog hog(res, size_t(256) << 20);
        ASSERT_TRUE(hog.holding());
        EXPECT_THROW(index->add(n, big.data()), faiss::FaissException);
    }

    expectSame(before, snapshot(*index, q, k));
}

TYPED_TEST(GpuIndexContract, AddThenSearchFindsTheStoredVectors) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 10;
    const int64_t n = smallUnderSanitizer(3000, 400), nq = 100, every = n / nq;
    auto index = this->filled(res, d, n, 7);
    ASSERT_EQ(index->ntotal, n);
    // Queries: every (n / nq)-th stored vector.
    std::vector<float> xq(size_t(nq) * d);
    for (int64_t i = 0; i < nq; ++i) {
        index->reconstruct(i * every, xq.data() + i * d);
    }
    std::vector<float> D(nq * k);
    std::vector<int64_t> I(nq * k);
    index->search(nq, xq.data(), k, D.data(), I.data());
    int64_t found = 0;
    for (int64_t i = 0; i < nq; ++i) {
        found += I[i * k] == i * every && std::fabs(D[i * k]) <= 1e-4f;
        EXPECT_TRUE(std::is_sorted(D.begin() + i * k, D.begin() + (i + 1) * k)) << "query " << i;
        for (int j = 0; j < k; ++j) {
            EXPECT_TRUE(I[i * k + j] >= 0 && I[i * k + j] < n) << "query " << i;
        }
    }
    EXPECT_GE(found, nq * 98 / 100);

    // searchDevice with device arrays answers as search (which pages through it).
    auto qDev = res.alloc<float>(xq.size());
    auto dDev = res.alloc<float>(D.size());
    auto iDev = res.alloc<int64_t>(I.size());
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    index->searchDevice(nq, qDev.data(), k, dDev.data(), iDev.data());
    std::vector<float> D2(D.size());
    std::vector<int64_t> I2(I.size());
    copyToHost(D2.data(), dDev.data(), D2.size(), res.stream());
    copyToHost(I2.data(), iDev.data(), I2.size(), res.stream());
    EXPECT_EQ(compareExact(D, I, D2, I2, nq, k), 0);
    // n = 0 does nothing.
    EXPECT_NO_THROW(index->searchDevice(0, qDev.data(), k, dDev.data(), iDev.data()));
}

TYPED_TEST(GpuIndexContract, EmptyIndexAndNanQueriesGiveMissingResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 5;
    const int64_t n = smallUnderSanitizer(1000, 200);
    const auto xb = datasets::uniform(n, d, 3);
    const auto xq = datasets::uniform(2, d, 1);
    for (faiss::MetricType m : TestFixture::Traits::metrics()) {
        SCOPED_TRACE("metric " + std::to_string(int(m)));
        auto index = TestFixture::Traits::make(res, d, m);
        TestFixture::Traits::prepare(*index, n, xb.data());
        const float missing = m == faiss::METRIC_L2 ? std::numeric_limits<float>::infinity()
                                                    : -std::numeric_limits<float>::infinity();
        std::vector<float> D(2 * k, 0.f);
        std::vector<int64_t> I(2 * k, 0);
        index->search(2, xq.data(), k, D.data(), I.data());
        for (int i = 0; i < 2 * k; ++i) {
            EXPECT_EQ(I[i], -1);
            EXPECT_EQ(D[i], missing);
        }
        index->add(n, xb.data());
        expectNanQueryGivesMissing(*index, k, 4);
    }
}

TYPED_TEST(GpuIndexContract, NonFiniteQueriesGetOnlyMissingResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 7;
    const int64_t nq = 8;
    const float inf = std::numeric_limits<float>::infinity();
    for (faiss::MetricType m : TestFixture::Traits::metrics()) {
        SCOPED_TRACE("metric " + std::to_string(int(m)));
        auto index = this->filled(res, d, smallUnderSanitizer(1500, 300), 21, m);
        const float missing = m == faiss::METRIC_L2 ? inf : -inf;
        std::vector<float> xq = datasets::uniform(nq, d, 22);
        // Rows 1, 3, 4, 6 get a NaN, +inf, -inf, and every component +inf.
        xq[1 * d + 5] = std::nanf("");
        xq[3 * d + 0] = inf;
        xq[4 * d + d - 1] = -inf;
        std::fill(xq.begin() + 6 * d, xq.begin() + 7 * d, inf);
        const std::vector<int64_t> bad = {1, 3, 4, 6}, good = {0, 2, 5, 7};
        std::vector<float> goodQ;
        for (int64_t q : good) {
            goodQ.insert(goodQ.end(), xq.begin() + q * d, xq.begin() + (q + 1) * d);
        }
        std::vector<float> refD(good.size() * k);
        std::vector<int64_t> refI(good.size() * k);
        index->search(int64_t(good.size()), goodQ.data(), k, refD.data(), refI.data());

        // Host queries (paged through searchDevice) and device queries alike.
        auto qDev = res.alloc<float>(xq.size());
        auto dDev = res.alloc<float>(nq * k);
        auto iDev = res.alloc<int64_t>(nq * k);
        copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
        for (bool onDevice : {false, true}) {
            SCOPED_TRACE(onDevice ? "searchDevice" : "search");
            std::vector<float> D(nq * k, 0.5f);
            std::vector<int64_t> I(nq * k, 12345);
            if (onDevice) {
                index->searchDevice(nq, qDev.data(), k, dDev.data(), iDev.data());
                copyToHost(D.data(), dDev.data(), D.size(), res.stream());
                copyToHost(I.data(), iDev.data(), I.size(), res.stream());
            } else {
                index->search(nq, xq.data(), k, D.data(), I.data());
            }
            for (int64_t q : bad) {
                for (int j = 0; j < k; ++j) {
                    EXPECT_EQ(I[q * k + j], -1) << "query " << q;
                    EXPECT_EQ(D[q * k + j], missing) << "query " << q;
                }
            }
            std::vector<float> goodD;
            std::vector<int64_t> goodI;
            for (int64_t q : good) {
                goodD.insert(goodD.end(), D.begin() + q * k, D.begin() + (q + 1) * k);
                goodI.insert(goodI.end(), I.begin() + q * k, I.begin() + (q + 1) * k);
            }
            EXPECT_EQ(
                    compareKnn(refD, refI, goodD, goodI, int64_t(good.size()), k, 1e-5f, 1e-5f), 0);
            for (int64_t id : goodI) {
                EXPECT_GE(id, 0);
            }
        }
    }
}

TYPED_TEST(GpuIndexContract, SaveLoadRoundTrip) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 12, k = 10;
    const int64_t n = smallUnderSanitizer(3000, 400), nq = 50;
    for (faiss::MetricType m : TestFixture::Traits::metrics()) {
        SCOPED_TRACE("metric " + std::to_string(int(m)));
        auto index = this->filled(res, d, n, 11, m);
        const std::string path = tempPath("faiss_ext_contract.fx");
        faiss_ext::write_index(index.get(), path.c_str());
        std::unique_ptr<GpuIndex> loaded = faiss_ext::read_index(path.c_str(), res);
        auto back = dynamic_cast<TypeParam*>(loaded.get());
        ASSERT_NE(back, nullptr);
        EXPECT_EQ(back->d, d);
        EXPECT_EQ(back->metric_type, m);
        EXPECT_EQ(back->ntotal, n);
        EXPECT_TRUE(back->is_trained);
        TestFixture::Traits::expectSameSetup(*index, *back);
        const auto q = datasets::uniform(1, d, 13);
        expectSame(snapshot(*index, q, k), snapshot(*back, q, k));
        const auto xq = datasets::uniform(nq, d, 12);
        std::vector<float> D1(nq * k), D2(nq * k);
        std::vector<int64_t> I1(nq * k), I2(nq * k);
        index->search(nq, xq.data(), k, D1.data(), I1.data());
        back->search(nq, xq.data(), k, D2.data(), I2.data());
        EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);

        // The same bytes in memory; every truncation is refused.
        const std::vector<uint8_t> bytes = faiss_ext::serialize_index(index.get());
        {
            std::ifstream f(path, std::ios::binary);
            const std::vector<uint8_t> fileBytes(
                    (std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            EXPECT_EQ(bytes, fileBytes);
        }
        std::remove(path.c_str());
        auto again = faiss_ext::deserialize_index(bytes.data(), bytes.size(), res);
        ASSERT_NE(dynamic_cast<TypeParam*>(again.get()), nullptr);
        EXPECT_EQ(again->ntotal, n);
        // The same index in format version 3 (no checksums) loads and answers the same.
        const std::vector<uint8_t> v3 = version3File(bytes);
        auto old = faiss_ext::deserialize_index(v3.data(), v3.size(), res);
        auto oldBack = dynamic_cast<TypeParam*>(old.get());
        ASSERT_NE(oldBack, nullptr);
        TestFixture::Traits::expectSameSetupFromVersion3(*index, *oldBack);
        expectSame(snapshot(*index, q, k), snapshot(*oldBack, q, k));
        for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 300) {
            EXPECT_THROW(
                    faiss_ext::deserialize_index(bytes.data(), cut, res), faiss::FaissException)
                    << "cut at " << cut;
        }
        EXPECT_THROW(
                faiss_ext::deserialize_index(bytes.data(), bytes.size() - 1, res),
                faiss::FaissException);

        // An index that holds nothing (untrained where it trains) round-trips too.
        auto empty = TestFixture::Traits::make(res, d, m);
        const std::vector<uint8_t> e = faiss_ext::serialize_index(empty.get());
        auto eBack = faiss_ext::deserialize_index(e.data(), e.size(), res);
        auto eb = dynamic_cast<TypeParam*>(eBack.get());
        ASSERT_NE(eb, nullptr);
        EXPECT_EQ(eb->ntotal, 0);
        EXPECT_EQ(eb->metric_type, m);
        EXPECT_EQ(eb->is_trained, empty->is_trained);
        TestFixture::Traits::expectSameSetup(*empty, *eb);
    }
}

TYPED_TEST(GpuIndexContract, EveryFlippedByteOfASavedIndexIsRefused) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    auto index = this->filled(res, 4, 64, 31);
    const std::vector<uint8_t> bytes = faiss_ext::serialize_index(index.get());
    expectEveryFlippedByteRefused(
            bytes, TestFixture::Traits::sections(), testSeed(), [&](const std::vector<uint8_t>& b) {
                faiss_ext::deserialize_index(b.data(), b.size(), res);
            });
    // An index that holds nothing (untrained where it trains) too.
    auto empty = TestFixture::Traits::make(res, 4);
    expectEveryFlippedByteRefused(
            faiss_ext::serialize_index(empty.get()), TestFixture::Traits::sections(),
            testSeed() + 1, [&](const std::vector<uint8_t>& b) {
                faiss_ext::deserialize_index(b.data(), b.size(), res);
            });
}

TYPED_TEST(GpuIndexContract, DeviceArraysWorkAsHostArrays) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    using Traits = typename TestFixture::Traits;
    const int d = 16, k = 10;
    // Under compute-sanitizer 200 vectors (two builds of the graph index) and 16 queries
    // (eight searches).
    const int64_t n = smallUnderSanitizer(2000, 200), nq = smallUnderSanitizer(64, 16);
    const std::vector<float> x = datasets::uniform(n, d, 21);
    const std::vector<float> xq = datasets::uniform(nq, d, 22);
    auto xDev = res.alloc<float>(x.size());
    copyToDevice(xDev.data(), x.data(), x.size(), res.stream());

    // Trained and filled from device memory: it stores what the host-filled one does.
    auto index = Traits::make(res, d);
    Traits::prepare(*index, n, xDev.data());
    index->add(n, xDev.data());
    ASSERT_EQ(index->ntotal, n);
    auto reference = this->filled(res, d, n, 21);
    std::vector<float> stored(x.size()), expected(x.size());
    index->reconstruct_n(0, n, stored.data());
    reference->reconstruct_n(0, n, expected.data());
    EXPECT_EQ(stored, expected);

    // Every placement of queries and results answers as host arrays do.
    std::vector<float> D(nq * k);
    std::vector<int64_t> I(nq * k);
    index->search(nq, xq.data(), k, D.data(), I.data());
    auto qDev = res.alloc<float>(xq.size());
    auto dDev = res.alloc<float>(D.size());
    auto iDev = res.alloc<int64_t>(I.size());
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    for (int placement = 1; placement < 8; ++placement) {
        SCOPED_TRACE("placement " + std::to_string(placement));
        std::vector<float> D2(D.size(), -7.f);
        std::vector<int64_t> I2(I.size(), -7);
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(dDev.data(), 0xff, dDev.bytes(), res.stream()));
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(iDev.data(), 0xff, iDev.bytes(), res.stream()));
        const bool qOn = placement & 1, dOn = placement & 2, iOn = placement & 4;
        index->search(
                nq, qOn ? qDev.data() : xq.data(), k, dOn ? dDev.data() : D2.data(),
                iOn ? iDev.data() : I2.data());
        // search() has waited for its results: read them without synchronising.
        if (dOn) {
            FAISS_EXT_CUDA_CHECK(
                    cudaMemcpy(D2.data(), dDev.data(), dDev.bytes(), cudaMemcpyDeviceToHost));
        }
        if (iOn) {
            FAISS_EXT_CUDA_CHECK(
                    cudaMemcpy(I2.data(), iDev.data(), iDev.bytes(), cudaMemcpyDeviceToHost));
        }
        EXPECT_EQ(compareExact(D, I, D2, I2, nq, k), 0);
    }

    // Device ids where the index takes ids.
    if constexpr (Traits::kAddWithIds) {
        std::vector<int64_t> ids(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            ids[i] = 100000 + 3 * i;
        }
        auto idsDev = res.alloc<int64_t>(ids.size());
        copyToDevice(idsDev.data(), ids.data(), ids.size(), res.stream());
        index->add_with_ids(n, xDev.data(), idsDev.data());
        std::vector<float> row(d);
        index->reconstruct(ids[77], row.data());
        EXPECT_EQ(row, std::vector<float>(x.begin() + 77 * d, x.begin() + 78 * d));
    }

    // A NaN or an infinity in device vectors is refused, naming the row, and the index
    // is left as it was.
    const auto q = datasets::uniform(1, d, 23);
    const Snapshot before = snapshot(*index, q, k);
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        const int64_t row = std::min<int64_t>(1234, n - 1);
        copyToDevice(xDev.data() + row * d + 5, &bad, 1, res.stream());
        try {
            index->add(n, xDev.data());
            ADD_FAILURE() << "add of a non-finite device vector did not throw";
        } catch (const faiss::FaissException& e) {
            EXPECT_NE(
                    std::string(e.what()).find(
                            "vector " + std::to_string(row) + " has a NaN or infinite"),
                    std::string::npos)
                    << e.what();
        }
        copyToDevice(xDev.data() + row * d + 5, x.data() + row * d + 5, 1, res.stream());
    }
    expectSame(before, snapshot(*index, q, k));
}
