// GpuIndexIVFFlat's filtered search, range_search and remove_ids against
// faiss::IndexIVFFlat (same centroids, same lists, ids that are not row numbers).
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/index_io.h>

#include "FilterTestUtil.h"
#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

struct IvfData {
    int d = 20;
    int64_t nlist = 24;
    int64_t nb = 4000;
    int64_t nq = 30;
    std::vector<float> xb, xq;
    std::vector<int64_t> ids; ///< 1000 + 3 i: not row numbers
};

IvfData ivfData(uint64_t seed) {
    IvfData v;
    v.xb = datasets::uniform(v.nb, v.d, seed);
    v.xq = datasets::uniform(v.nq, v.d, seed + 1);
    for (int64_t i = 0; i < v.nb; ++i) {
        v.ids.push_back(1000 + 3 * i);
    }
    return v;
}

std::unique_ptr<faiss::IndexIVFFlat> cpuIndex(const IvfData& v, faiss::MetricType metric) {
    auto cpu = cpuIvf(v.d, v.nlist, metric, v.xb.data());
    cpu->add_with_ids(v.nb, v.xb.data(), v.ids.data());
    return cpu;
}

TEST(GpuIvfFilters, EverySelectorMatchesCpu) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const IvfData v = ivfData(seed);
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto cpu = cpuIndex(v, metric);
        for (IvfScanPath path : {IvfScanPath::kPerQuery, IvfScanPath::kListMajor}) {
            GpuIndexIVFFlatConfig config;
            config.scanPath = path;
            GpuIndexIVFFlat gpu(res, cpu.get(), config);
            const std::vector<bool> ties = coarseTies(*cpu->quantizer, v.nq, v.xq.data(), 4);
            for (const NamedSelector& s : selectorsOver(v.ids, seed)) {
                for (int k : {1, 10, 300}) {
                    SCOPED_TRACE("selector " + s.name + " k=" + std::to_string(k));
                    faiss::SearchParametersIVF params;
                    params.nprobe = 4;
                    params.sel = s.sel.get();
                    std::vector<float> rD(size_t(v.nq) * k), D(rD.size(), -7.f);
                    std::vector<int64_t> rI(rD.size()), I(rD.size(), -7);
                    cpu->search(v.nq, v.xq.data(), k, rD.data(), rI.data(), &params);
                    infForMissing(rD, rI, metric);
                    gpu.search(v.nq, v.xq.data(), k, D.data(), I.data(), &params);
                    EXPECT_EQ(compareKnnRows(rD, rI, D, I, v.nq, k, ties, 1e-4f, 1e-4f), 0);
                    for (int64_t id : I) {
                        ASSERT_TRUE(id == -1 || s.sel->is_member(id));
                    }
                }
            }
        }
    }
}

TEST(GpuIvfFilters, RangeSearchMatchesCpu) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    const IvfData v = ivfData(seed);
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto cpu = cpuIndex(v, metric);
        GpuIndexIVFFlat gpu(res, cpu.get());
        const std::vector<bool> ties = coarseTies(*cpu->quantizer, v.nq, v.xq.data(), 3);
        faiss::SearchParametersIVF params;
        params.nprobe = 3;
        const int k = 100;
        std::vector<float> kD(size_t(v.nq) * k);
        std::vector<int64_t> kI(kD.size());
        cpu->search(v.nq, v.xq.data(), k, kD.data(), kI.data(), &params);
        infForMissing(kD, kI, metric);
        const std::vector<NamedSelector> sels = selectorsOver(v.ids, seed);
        for (float radius : radiiFrom(kD, v.nq, k, metric == faiss::METRIC_INNER_PRODUCT)) {
            for (const faiss::IDSelector* sel :
                 std::vector<const faiss::IDSelector*>{nullptr, sels[5].sel.get()}) {
                SCOPED_TRACE("radius " + std::to_string(radius) + (sel ? " subclass" : ""));
                params.sel = const_cast<faiss::IDSelector*>(sel);
                faiss::RangeSearchResult ref(size_t(v.nq)), got(size_t(v.nq));
                cpu->range_search(v.nq, v.xq.data(), radius, &ref, &params);
                gpu.range_search(v.nq, v.xq.data(), radius, &got, &params);
                // Queries with a coarse tie may probe another list: compared are the others.
                EXPECT_EQ(compareRange(ref, got, v.nq, radius, 1e-4f, ties), 0);
            }
        }
    }
}

TEST(GpuIvfFilters, RemoveIdsKeepsIdsThroughSaveLoadAndCopy) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const IvfData v = ivfData(seed);
    auto cpu = cpuIndex(v, faiss::METRIC_L2);
    GpuIndexIVFFlat gpu(res, cpu.get());
    const std::vector<NamedSelector> sels = selectorsOver(v.ids, seed);
    const faiss::IDSelector& batch = *sels[2].sel;
    const size_t removed = cpu->remove_ids(batch);
    ASSERT_GT(removed, 0u);
    EXPECT_EQ(gpu.remove_ids(batch), removed);
    EXPECT_EQ(gpu.ntotal, cpu->ntotal);
    EXPECT_EQ(gpu.remove_ids(batch), 0u);

    const std::vector<uint8_t> bytes = serialize_index(&gpu);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    faiss::IndexIVFFlat back;
    gpu.copyTo(&back);
    EXPECT_EQ(back.ntotal, cpu->ntotal);
    const int k = 20;
    faiss::SearchParametersIVF params;
    params.nprobe = 5;
    std::vector<float> rD(size_t(v.nq) * k), D(rD.size());
    std::vector<int64_t> rI(rD.size()), I(rD.size());
    cpu->search(v.nq, v.xq.data(), k, rD.data(), rI.data(), &params);
    infForMissing(rD, rI, faiss::METRIC_L2);
    const std::vector<bool> ties = coarseTies(*cpu->quantizer, v.nq, v.xq.data(), 5);
    for (const faiss::Index* index : std::vector<const faiss::Index*>{&gpu, loaded.get()}) {
        index->search(v.nq, v.xq.data(), k, D.data(), I.data(), &params);
        EXPECT_EQ(compareKnnRows(rD, rI, D, I, v.nq, k, ties, 1e-4f, 1e-4f), 0);
        for (int64_t id : I) {
            ASSERT_FALSE(id >= 0 && batch.is_member(id)) << "removed id " << id << " found";
        }
    }
    back.search(v.nq, v.xq.data(), k, D.data(), I.data(), &params);
    infForMissing(D, I, faiss::METRIC_L2);
    EXPECT_EQ(compareKnnRows(rD, rI, D, I, v.nq, k, ties, 1e-4f, 1e-4f), 0);
}

} // namespace
