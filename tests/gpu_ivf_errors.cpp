// GpuIndexIVFFlat's own bad inputs (training, ids, lists, nprobe, quantizers), copies
// to and from FAISS, and saving / loading of its lists: errors are
// faiss::FaissException and leave the index as it was. What every index does alike is
// gpu_index_contract.cpp.
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexLSH.h>
#include <faiss/impl/FaissAssert.h>
#include <faiss/index_io.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/index_io.h>

#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// Same d, nlist, metric, nprobe, centroids and lists (ids and vectors, in order).
void expectSameIndex(const GpuIndexIVFFlat& a, const faiss::IndexIVFFlat& b) {
    ASSERT_EQ(a.d, b.d);
    ASSERT_EQ(a.nlist(), int64_t(b.nlist));
    EXPECT_EQ(a.metric_type, b.metric_type);
    EXPECT_EQ(a.nprobe, b.nprobe);
    EXPECT_EQ(a.ntotal, b.ntotal);
    EXPECT_EQ(a.is_trained, b.is_trained);
    auto bq = dynamic_cast<const faiss::IndexFlat*>(b.quantizer);
    ASSERT_NE(bq, nullptr);
    EXPECT_EQ(a.quantizer().metric_type, bq->metric_type);
    ASSERT_EQ(a.quantizer().ntotal, bq->ntotal);
    std::vector<float> c(size_t(bq->ntotal) * a.d);
    if (bq->ntotal > 0) {
        a.quantizer().reconstruct_n(0, bq->ntotal, c.data());
        EXPECT_EQ(0, std::memcmp(c.data(), bq->get_xb(), c.size() * sizeof(float)));
    }
    for (int64_t l = 0; l < a.nlist(); ++l) {
        const size_t len = b.invlists->list_size(l);
        ASSERT_EQ(a.listLength(l), int64_t(len)) << "list " << l;
        if (len == 0) {
            continue;
        }
        std::vector<float> v = a.listVectors(l);
        std::vector<int64_t> ids = a.listIds(l);
        EXPECT_EQ(0, std::memcmp(v.data(), b.invlists->get_codes(l), len * a.d * sizeof(float)))
                << "list " << l;
        EXPECT_EQ(0, std::memcmp(ids.data(), b.invlists->get_ids(l), len * sizeof(int64_t)))
                << "list " << l;
    }
}

std::unique_ptr<faiss::IndexIVFFlat> sampleCpu(
        int d,
        int64_t nlist,
        faiss::MetricType m,
        int64_t nb) {
    auto xb = datasets::uniform(nb, d, 21);
    auto cent = datasets::uniform(nlist, d, 22);
    auto cpu = cpuIvf(d, nlist, m, cent.data());
    std::vector<int64_t> ids(nb);
    for (int64_t i = 0; i < nb; ++i) {
        ids[i] = (int64_t(1) << 40) + 3 * i;
    }
    cpu->add_with_ids(nb, xb.data(), ids.data());
    cpu->nprobe = 5;
    return cpu;
}

std::string tempPath(const char* name) {
    return std::string(::testing::TempDir()) + name;
}

} // namespace

TEST(GpuIndexIVFFlatErrors, BadInputsThrowAndLeaveIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 4;
    const int64_t nlist = 10;
    GpuIndexIVFFlat gpu(res, d, nlist);
    auto xb = datasets::uniform(500, d, 1);
    auto q = datasets::uniform(1, d, 2);
    std::vector<float> D(10 * 3000);
    std::vector<int64_t> I(10 * 3000);

    // Not trained yet.
    EXPECT_THROW(gpu.add(10, xb.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.train(nlist - 1, xb.data()), faiss::FaissException); // n < nlist
    EXPECT_FALSE(gpu.is_trained);

    gpu.train(500, xb.data());
    gpu.add(500, xb.data());
    gpu.nprobe = 3;
    auto before = snapshotSearch(gpu, q, k);

    EXPECT_THROW(gpu.train(500, xb.data()), faiss::FaissException); // not empty
    std::vector<int64_t> ids(10, 7);
    ids[4] = -1;
    EXPECT_THROW(gpu.add_with_ids(10, xb.data(), ids.data()), faiss::FaissException);
    std::vector<int64_t> listNos(10, 0);
    listNos[9] = nlist;
    EXPECT_THROW(gpu.addPreassigned(10, xb.data(), listNos.data(), nullptr), faiss::FaissException);
    listNos[9] = -1;
    EXPECT_THROW(gpu.addPreassigned(10, xb.data(), listNos.data(), nullptr), faiss::FaissException);
    EXPECT_THROW(gpu.addPreassigned(10, xb.data(), nullptr, nullptr), faiss::FaissException);

    gpu.nprobe = 0;
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), I.data()), faiss::FaissException);
    gpu.nprobe = 3;
    faiss::SearchParametersIVF params;
    params.nprobe = 0;
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), I.data(), &params), faiss::FaissException);
    params.nprobe = 2;
    params.max_codes = 100;
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), I.data(), &params), faiss::FaissException);
    params.max_codes = 0;
    faiss::SearchParametersIVF inner;
    params.quantizer_params = &inner;
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), I.data(), &params), faiss::FaissException);

    EXPECT_THROW(
            gpu.reconstruct_n(std::numeric_limits<int64_t>::max(), 2, D.data()),
            faiss::FaissException);
    EXPECT_THROW(gpu.listLength(nlist), faiss::FaissException);
    EXPECT_THROW(gpu.listVectors(-1), faiss::FaissException);

    faiss::IndexFlatL2 wrongD(d + 1), wrongN(d);
    wrongN.add(3, xb.data());
    EXPECT_THROW(gpu.setQuantizer(nullptr), faiss::FaissException);
    EXPECT_THROW(gpu.setQuantizer(&wrongD), faiss::FaissException);
    EXPECT_THROW(gpu.setQuantizer(&wrongN), faiss::FaissException);
    faiss::IndexFlatL2 good(d);
    good.add(nlist, xb.data());
    EXPECT_THROW(gpu.setQuantizer(&good), faiss::FaissException); // index not empty

    expectSameSearch(before, snapshotSearch(gpu, q, k));
}

TEST(GpuIndexIVFFlatErrors, AddPreassignedWithDeviceMemoryExhaustedLeavesIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 256, k = 3;
    const int64_t nlist = 16;
    auto xb = datasets::uniform(2000, d, 5);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(2000, xb.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    gpu.nprobe = 4;
    auto q = datasets::uniform(1, d, 6);
    auto before = snapshotSearch(gpu, q, k);

    const int64_t n = (int64_t(2) << 30) / (d * sizeof(float)); // 2 GiB of vectors
    std::vector<float> big(size_t(n) * d, 0.5f);
    std::vector<int64_t> listNos(size_t(n), 3);
    {
        DeviceMemoryHog hog(res, size_t(512) << 20);
        ASSERT_TRUE(hog.holding());
        EXPECT_THROW(
                gpu.addPreassigned(n, big.data(), listNos.data(), nullptr), faiss::FaissException);
    }

    expectSameSearch(before, snapshotSearch(gpu, q, k));
    cpu->nprobe = gpu.nprobe;
    expectSameIndex(gpu, *cpu);
}

TEST(GpuIndexIVFFlatErrors, NprobeAboveTheLimit) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 4;
    const int64_t nlist = 3000;
    auto xb = datasets::uniform(nlist, d, 3);
    faiss::IndexFlatL2 q(d);
    q.add(nlist, xb.data());
    GpuIndexIVFFlat gpu(res, d, nlist);
    gpu.setQuantizer(&q);
    gpu.add(nlist, xb.data());
    std::vector<float> D(5);
    std::vector<int64_t> I(5);
    gpu.nprobe = 2049;
    try {
        gpu.search(1, xb.data(), 5, D.data(), I.data());
        FAIL() << "nprobe=2049 accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("2049"), std::string::npos) << e.what();
    }
    gpu.nprobe = 2048;
    EXPECT_NO_THROW(gpu.search(1, xb.data(), 5, D.data(), I.data()));
    EXPECT_EQ(I[0], 0);
}

TEST(GpuIndexIVFFlatErrors, BadConstruction) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    EXPECT_THROW(GpuIndexIVFFlat(res, 0, 10), faiss::FaissException);
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 0), faiss::FaissException);
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, -4), faiss::FaissException);
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L1), faiss::FaissException);
    EXPECT_THROW(GpuIndexIVFFlat(res, 1 << 20, 10), faiss::FaissException); // scan smem
    GpuIndexIVFFlatConfig cfg;
    cfg.listChunkVectors = 100;
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg), faiss::FaissException);
    cfg.listChunkVectors = -32;
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg), faiss::FaissException);
    cfg.listChunkVectors = 0;
    cfg.scanPath = IvfScanPath::kListMajor;
    EXPECT_NO_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg));
    cfg.scanPath = IvfScanPath::kPerQuery;
    EXPECT_NO_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg));
    cfg.scanPath = static_cast<IvfScanPath>(7);
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg), faiss::FaissException);
    cfg.scanPath = IvfScanPath::kAuto;
    cfg.mergePath = static_cast<IvfMergePath>(9);
    EXPECT_THROW(GpuIndexIVFFlat(res, 8, 10, faiss::METRIC_L2, cfg), faiss::FaissException);
    cfg.mergePath = IvfMergePath::kAuto;
    cfg.scanPath = IvfScanPath::kAuto;
    EXPECT_THROW(GpuIndexIVFFlat(res, nullptr), faiss::FaissException);

    // The fast path forced where it does not fit: refused at search with the sizes.
    cfg.listChunkVectors = 0;
    cfg.mergePath = IvfMergePath::kFast;
    auto cpu = sampleCpu(8, 2100, faiss::METRIC_L2, 5000);
    GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
    std::vector<float> q(8, 0.5f), D(2048);
    std::vector<int64_t> I(2048);
    gpu.nprobe = 2048;
    EXPECT_THROW(gpu.search(1, q.data(), 2048, D.data(), I.data()), faiss::FaissException);
    gpu.nprobe = 2;
    EXPECT_NO_THROW(gpu.search(1, q.data(), 10, D.data(), I.data()));
}

TEST(GpuIndexIVFFlatErrors, CopyFromRefusesWhatItCannotRepresent) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 8;
    auto cpu = sampleCpu(d, 10, faiss::METRIC_L2, 300);
    GpuIndexIVFFlat gpu(res, cpu.get());
    auto q = datasets::uniform(1, d, 4);
    auto before = snapshotSearch(gpu, q, 5);

    EXPECT_THROW(gpu.copyFrom(nullptr), faiss::FaissException);
    // A quantizer that is not an IndexFlat.
    faiss::IndexLSH lsh(d, 16);
    faiss::IndexIVFFlat lshIvf(&lsh, d, 10, faiss::METRIC_L2);
    EXPECT_THROW(gpu.copyFrom(&lshIvf), faiss::FaissException);
    // A trained index whose quantizer does not hold nlist centroids.
    auto broken = sampleCpu(d, 10, faiss::METRIC_L2, 50);
    static_cast<faiss::IndexFlat*>(broken->quantizer)->reset();
    EXPECT_THROW(gpu.copyFrom(broken.get()), faiss::FaissException);
    // An id of -1 in a list.
    auto minusOne = sampleCpu(d, 10, faiss::METRIC_L2, 50);
    std::vector<float> v(d, 0.25f);
    int64_t bad = -1;
    minusOne->invlists->add_entries(2, 1, &bad, reinterpret_cast<const uint8_t*>(v.data()));
    EXPECT_THROW(gpu.copyFrom(minusOne.get()), faiss::FaissException);

    expectSameSearch(before, snapshotSearch(gpu, q, 5));
}

TEST(GpuIndexIVFFlatErrors, CopyRoundTripIntoGarbageTargets) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        const int d = 13;
        auto cpu = sampleCpu(d, 37, m, 3000);
        cpu->nprobe = 9;

        // GPU target of another d, nlist and metric, trained and filled.
        auto other = sampleCpu(
                5, 4, m == faiss::METRIC_L2 ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2, 100);
        GpuIndexIVFFlat gpu(res, other.get());
        gpu.copyFrom(cpu.get());
        expectSameIndex(gpu, *cpu);

        // CPU target of another d, nlist and metric, with its own data, quantizer and
        // an array direct map.
        auto back = sampleCpu(6, 3, faiss::METRIC_L2, 40);
        back->make_direct_map(false);
        auto seqIvf = cpuIvf(6, 3, faiss::METRIC_L2, datasets::uniform(3, 6, 1).data());
        auto x6 = datasets::uniform(30, 6, 2);
        seqIvf->add(30, x6.data());
        seqIvf->make_direct_map(true);
        gpu.copyTo(seqIvf.get());
        expectSameIndex(gpu, *seqIvf);
        EXPECT_EQ(seqIvf->direct_map.type, faiss::DirectMap::NoMap);
        gpu.copyTo(back.get());
        expectSameIndex(gpu, *back);

        // The copied CPU index searches like the original.
        auto xq = datasets::uniform(20, d, 30);
        std::vector<float> D1(20 * 10), D2(20 * 10);
        std::vector<int64_t> I1(20 * 10), I2(20 * 10);
        cpu->search(20, xq.data(), 10, D1.data(), I1.data());
        back->search(20, xq.data(), 10, D2.data(), I2.data());
        EXPECT_EQ(I1, I2);
        EXPECT_EQ(D1, D2);

        // An untrained index round-trips too.
        faiss::IndexFlat* uq = new faiss::IndexFlat(d, m);
        faiss::IndexIVFFlat untrained(uq, d, 7, m);
        untrained.own_fields = true;
        gpu.copyFrom(&untrained);
        EXPECT_FALSE(gpu.is_trained);
        EXPECT_EQ(gpu.ntotal, 0);
        gpu.copyTo(back.get());
        EXPECT_FALSE(back->is_trained);
        EXPECT_EQ(back->nlist, 7u);

        gpu.copyFrom(cpu.get());
        gpu.reset();
        EXPECT_EQ(gpu.ntotal, 0);
        EXPECT_TRUE(gpu.is_trained);
        for (int64_t l = 0; l < gpu.nlist(); ++l) {
            EXPECT_EQ(gpu.listLength(l), 0);
        }
    }
}

TEST(GpuIndexIVFFlatErrors, SaveLoadRoundTrip) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        const int d = 11;
        auto cpu = sampleCpu(d, 23, m, 2000);
        GpuIndexIVFFlat gpu(res, cpu.get());
        gpu.nprobe = 6;
        const std::string path = tempPath("faiss_ext_ivf.fx");
        faiss_ext::write_index(&gpu, path.c_str());
        std::unique_ptr<GpuIndex> loaded = faiss_ext::read_index(path.c_str(), res);
        auto ivf = dynamic_cast<GpuIndexIVFFlat*>(loaded.get());
        ASSERT_NE(ivf, nullptr);
        // Lists, ids (not sequential here) and centroids as they were, in order.
        faiss::IndexIVFFlat viaCpu;
        gpu.copyTo(&viaCpu);
        expectSameIndex(*ivf, viaCpu);

        // A file cut short on disk.
        const std::vector<uint8_t> bytes = faiss_ext::serialize_index(&gpu);
        {
            std::FILE* t = std::fopen(path.c_str(), "wb");
            ASSERT_NE(t, nullptr);
            std::fwrite(bytes.data(), 1, bytes.size() / 2, t);
            std::fclose(t);
        }
        EXPECT_THROW(faiss_ext::read_index(path.c_str(), res), faiss::FaissException);
        std::remove(path.c_str());
    }
}

TEST(GpuIndexIVFFlatErrors, ForeignFilesAndIndexesAreRefused) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    auto cpu = sampleCpu(8, 10, faiss::METRIC_L2, 100);
    // write_index of a CPU index: refused with a pointer to faiss::write_index.
    EXPECT_THROW(
            faiss_ext::write_index(cpu.get(), tempPath("x.fx").c_str()), faiss::FaissException);
    EXPECT_THROW(faiss_ext::write_index(nullptr, tempPath("x.fx").c_str()), faiss::FaissException);
    // A FAISS file is not a faiss_ext file.
    const std::string path = tempPath("faiss_cpu.index");
    faiss::write_index(cpu.get(), path.c_str());
    EXPECT_THROW(faiss_ext::read_index(path.c_str(), res), faiss::FaissException);
    std::remove(path.c_str());
    EXPECT_THROW(
            faiss_ext::read_index(tempPath("does_not_exist.fx").c_str(), res),
            faiss::FaissException);
    std::vector<uint8_t> junk(1000, 0xab);
    EXPECT_THROW(
            faiss_ext::deserialize_index(junk.data(), junk.size(), res), faiss::FaissException);
    EXPECT_THROW(faiss_ext::deserialize_index(nullptr, 0, res), faiss::FaissException);
}
