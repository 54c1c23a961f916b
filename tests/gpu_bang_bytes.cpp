// GpuIndexBang with its vectors stored as bytes (BangVectorStorage): on byte-valued data
// the same graph, entry point and search results (distances bit for bit, both search
// kernels) as the same index storing floats, in a quarter of the rows' memory; through a
// build from either candidate source, an extension, a fall back to floats, save and load,
// filtered searches; and kBytes's refusals.
#include <cstdint>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/index_io.h>

#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

GpuIndexBangConfig storing(BangVectorStorage storage, int64_t lists) {
    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = 24;
    cfg.build.candidates = 32;
    cfg.build.candidateLists = lists;
    cfg.vectorStorage = storage;
    return cfg;
}

/// The same graph, entry point, stored vectors and search results (bit for bit, both
/// kernels, a few L) of the two indexes.
void expectSameIndex(const GpuIndexBang& a, const GpuIndexBang& b, const std::vector<float>& xq) {
    EXPECT_EQ(a.ntotal, b.ntotal);
    EXPECT_EQ(a.graph(), b.graph());
    EXPECT_EQ(a.entryPoint(), b.entryPoint());
    std::vector<float> ra(size_t(a.ntotal) * a.d), rb(ra.size());
    a.reconstruct_n(0, a.ntotal, ra.data());
    b.reconstruct_n(0, b.ntotal, rb.data());
    EXPECT_EQ(ra, rb);
    for (BangKernel kernel : {BangKernel::kPersistent, BangKernel::kStepwise}) {
        for (int L : {10, 64}) {
            const DeviceResults x = searchWith(a, xq, 10, L, kernel);
            const DeviceResults y = searchWith(b, xq, 10, L, kernel);
            EXPECT_EQ(x.I, y.I) << "L=" << L;
            EXPECT_EQ(x.D, y.D) << "L=" << L;
            EXPECT_EQ(x.iters, y.iters) << "L=" << L;
        }
    }
    // Filtered searches: a few allowed nodes (searched exactly, their rows gathered) and
    // half of them (the walk keeps the allowed ones).
    const int64_t nq = int64_t(xq.size()) / a.d, k = 10;
    for (int64_t allowed : {int64_t(40), a.ntotal / 2}) {
        faiss::IDSelectorRange sel(0, allowed);
        SearchParametersBang params;
        params.sel = &sel;
        std::vector<float> da(size_t(nq) * k), db(da.size());
        std::vector<int64_t> ia(da.size()), ib(da.size());
        a.search(nq, xq.data(), k, da.data(), ia.data(), &params);
        b.search(nq, xq.data(), k, db.data(), ib.data(), &params);
        EXPECT_EQ(ia, ib) << allowed << " allowed";
        EXPECT_EQ(da, db) << allowed << " allowed";
    }
}

} // namespace

TEST(GpuIndexBangBytes, ByteDataGivesTheIndexOfFloatsInAQuarterOfTheRows) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int64_t n = smallUnderSanitizer(4000, 600), m = smallUnderSanitizer(1000, 150);
    // d 13: the kernels' component loads one at a time; d 32: four at a time. Candidates
    // from the exact k-NN and from IVF lists.
    for (int d : {13, 32}) {
        for (int64_t lists : {int64_t(0), int64_t(40)}) {
            SCOPED_TRACE("d=" + std::to_string(d) + " lists=" + std::to_string(lists));
            datasets::ClusteredSpec spec{n + 2 * m, d, 25, 0.1f, testSeed() + 70 + uint64_t(d)};
            const std::vector<float> all = byteValued(datasets::clustered(spec, 0));
            spec.n = 50;
            const std::vector<float> xq = datasets::clustered(spec, 1); // not bytes
            GpuIndexBang bytes(res, d, faiss::METRIC_L2, storing(BangVectorStorage::kAuto, lists));
            GpuIndexBang floats(
                    res, d, faiss::METRIC_L2, storing(BangVectorStorage::kFloat, lists));
            bytes.add(n, all.data());
            floats.add(n, all.data());
            EXPECT_TRUE(bytes.storesBytes());
            EXPECT_FALSE(floats.storesBytes());
            EXPECT_EQ(floats.deviceMemoryBytes() - bytes.deviceMemoryBytes(), size_t(n) * d * 3);
            expectSameIndex(bytes, floats, xq);
            // An extension by more bytes stays bytes.
            const float* more = all.data() + size_t(n) * d;
            bytes.add(m, more);
            floats.add(m, more);
            EXPECT_TRUE(bytes.storesBytes());
            expectSameIndex(bytes, floats, xq);
            // Vectors that are not bytes: kAuto stores every row as floats from then on.
            std::vector<float> halves(all.begin() + size_t(n + m) * d, all.end());
            for (float& v : halves) {
                v += 0.5f;
            }
            bytes.add(m, halves.data());
            floats.add(m, halves.data());
            EXPECT_FALSE(bytes.storesBytes());
            expectSameIndex(bytes, floats, xq);
        }
    }
}

TEST(GpuIndexBangBytes, KBytesRefusesOtherValuesAndModes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16;
    const int64_t n = 2000;
    const std::vector<float> xb = byteValued(datasets::uniform(n, d, testSeed() + 80));
    std::vector<float> off = xb;
    off[size_t(n / 2) * d + 3] = 256.f; // one value above a byte
    const GpuIndexBangConfig cfg = storing(BangVectorStorage::kBytes, 0);
    GpuIndexBang index(res, d, faiss::METRIC_L2, cfg);
    EXPECT_THROW(index.add(n, off.data()), faiss::FaissException);
    EXPECT_EQ(index.ntotal, 0);
    EXPECT_EQ(index.deviceMemoryBytes(), 0u);
    index.add(n, xb.data());
    EXPECT_TRUE(index.storesBytes());
    const std::vector<float> query(xb.begin(), xb.begin() + d);
    const SearchSnapshot before = snapshotSearch(index, query, 10);
    off[3] = -1.f; // and one below
    off[size_t(n / 2) * d + 3] = xb[size_t(n / 2) * d + 3];
    EXPECT_THROW(index.add(n, off.data()), faiss::FaissException);
    expectSameSearch(before, snapshotSearch(index, query, 10));
    // Where bytes do not apply.
    GpuIndexBangConfig pq = cfg;
    pq.pqSubquantizers = 4;
    EXPECT_THROW(GpuIndexBang(res, d, faiss::METRIC_L2, pq), faiss::FaissException);
    EXPECT_THROW(GpuIndexBang(res, d, faiss::METRIC_INNER_PRODUCT, cfg), faiss::FaissException);
    GpuIndexBangConfig bad = cfg;
    bad.vectorStorage = BangVectorStorage(9);
    EXPECT_THROW(GpuIndexBang(res, d, faiss::METRIC_L2, bad), faiss::FaissException);
    // kAuto in PQ mode and for inner product stores floats.
    GpuIndexBangConfig autoPq = storing(BangVectorStorage::kAuto, 0);
    autoPq.pqSubquantizers = 4;
    GpuIndexBang pqIndex(res, d, faiss::METRIC_L2, autoPq);
    pqIndex.add(n, xb.data());
    EXPECT_FALSE(pqIndex.storesBytes());
    GpuIndexBang ip(res, d, faiss::METRIC_INNER_PRODUCT, storing(BangVectorStorage::kAuto, 0));
    ip.add(n, xb.data());
    EXPECT_FALSE(ip.storesBytes());
}

TEST(GpuIndexBangBytes, SaveAndLoadKeepTheBytesAndTheResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32;
    const int64_t n = smallUnderSanitizer(3000, 400);
    datasets::ClusteredSpec spec{n, d, 20, 0.1f, testSeed() + 81};
    const std::vector<float> xb = byteValued(datasets::clustered(spec, 0));
    spec.n = 40;
    const std::vector<float> xq = datasets::clustered(spec, 1);
    for (BangVectorStorage storage : {BangVectorStorage::kAuto, BangVectorStorage::kBytes}) {
        GpuIndexBang index(res, d, faiss::METRIC_L2, storing(storage, 0));
        index.add(n, xb.data());
        const std::string path = std::string(::testing::TempDir()) + "bang_bytes.fxidx";
        faiss_ext::write_index(&index, path.c_str());
        auto loaded = faiss_ext::read_index(path.c_str(), res);
        auto* back = dynamic_cast<GpuIndexBang*>(loaded.get());
        ASSERT_NE(back, nullptr);
        EXPECT_EQ(back->bangConfig().vectorStorage, storage);
        EXPECT_TRUE(back->storesBytes());
        EXPECT_EQ(back->deviceMemoryBytes(), index.deviceMemoryBytes());
        expectSameIndex(*back, index, xq);
    }
}
