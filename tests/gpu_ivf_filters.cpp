// GpuIndexIVFFlat's filtered search, range_search and remove_ids against
// faiss::IndexIVFFlat (same centroids, same lists, ids that are not row numbers).
#include <algorithm>
#include <string>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/IDSelector.h>

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
    int64_t nq = 0;
    std::vector<float> xb, xq;
    std::vector<int64_t> ids; ///< 1000 + 3 i: not row numbers
};

IvfData ivfData(uint64_t seed, int64_t nq = 30) {
    IvfData v;
    v.nq = nq;
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
    // 100 queries probing 4 of 24 lists: ~17 a list, so the tensor-core keys run groups of
    // one and two tiles of 16 under every filter. Under compute-sanitizer 8 queries, and k
    // on the warp selection once (not twice) beside the block selection's.
    const IvfData v = ivfData(seed, smallUnderSanitizer(100, 8));
    const std::vector<int> ks =
            underSanitizer() ? std::vector<int>{1, 300} : std::vector<int>{1, 10, 300};
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto cpu = cpuIndex(v, metric);
        for (IvfScanPath path :
             {IvfScanPath::kPerQuery, IvfScanPath::kListMajor, IvfScanPath::kListMajorKeys}) {
            GpuIndexIVFFlatConfig config;
            config.scanPath = path;
            GpuIndexIVFFlat gpu(res, cpu.get(), config);
            const std::vector<bool> ties = coarseTies(*cpu->quantizer, v.nq, v.xq.data(), 4);
            for (const NamedSelector& s : selectorsOver(v.ids, seed)) {
                for (int k : ks) {
                    if (path == IvfScanPath::kListMajorKeys &&
                        (metric != faiss::METRIC_L2 || k > 32)) {
                        continue; // the list-major path again
                    }
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

TEST(GpuIvfFilters, FilteredSearchFollowsEveryChangeOfTheLists) {
    // The index keeps the id of every slot on the device for its filtered searches
    // (IvfLists::slotIds): each change of the lists must show in the next filtered
    // search, under the selectors built on the device from that table (Range, Bitmap)
    // and under one evaluated on the host (Batch).
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const IvfData v = ivfData(seed);
    const int64_t half = v.nb / 2;
    auto cpu = cpuIvf(v.d, v.nlist, faiss::METRIC_L2, v.xb.data());
    cpu->add_with_ids(half, v.xb.data(), v.ids.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    const std::vector<NamedSelector> sels = selectorsOver(v.ids, seed);
    const int k = 20;
    faiss::SearchParametersIVF params;
    params.nprobe = size_t(v.nlist); // every list: the answer does not depend on the lists
    const std::vector<bool> noTies(size_t(v.nq), false);
    auto check = [&](const faiss::Index& index, const char* step) {
        SCOPED_TRACE(step);
        ASSERT_EQ(index.ntotal, cpu->ntotal);
        for (const NamedSelector& s : sels) {
            if (s.name != "range" && s.name != "bitmap" && s.name != "batch") {
                continue;
            }
            SCOPED_TRACE(s.name);
            params.sel = s.sel.get();
            std::vector<float> rD(size_t(v.nq) * k), D(rD.size(), -7.f);
            std::vector<int64_t> rI(rD.size()), I(rD.size(), -7);
            cpu->search(v.nq, v.xq.data(), k, rD.data(), rI.data(), &params);
            infForMissing(rD, rI, faiss::METRIC_L2);
            index.search(v.nq, v.xq.data(), k, D.data(), I.data(), &params);
            EXPECT_EQ(compareKnnRows(rD, rI, D, I, v.nq, k, noTies, 1e-4f, 1e-4f), 0);
            for (int64_t id : I) {
                ASSERT_TRUE(id == -1 || s.sel->is_member(id)) << id;
            }
        }
    };
    check(gpu, "copyFrom");
    cpu->add_with_ids(v.nb - half, v.xb.data() + half * v.d, v.ids.data() + half);
    gpu.add_with_ids(v.nb - half, v.xb.data() + half * v.d, v.ids.data() + half);
    check(gpu, "add_with_ids");

    // Removes vectors half / 2 .. half + half / 2 - 1 (ids ascend with the rows): some of
    // each half, inside and outside the selectors' ranges.
    const int64_t b0 = half / 2, nBack = half;
    const faiss::IDSelectorRange gone(v.ids[size_t(b0)], v.ids[size_t(b0 + nBack)]);
    ASSERT_EQ(cpu->remove_ids(gone), size_t(nBack));
    EXPECT_EQ(gpu.remove_ids(gone), size_t(nBack));
    check(gpu, "remove_ids");

    // The removed vectors back under their ids, into the lists the CPU quantizer picks
    // (addPreassigned: what read_index uses).
    std::vector<int64_t> listNos(static_cast<size_t>(nBack));
    {
        std::vector<float> unused(listNos.size());
        cpu->quantizer->search(nBack, v.xb.data() + b0 * v.d, 1, unused.data(), listNos.data());
    }
    cpu->add_core(nBack, v.xb.data() + b0 * v.d, v.ids.data() + b0, listNos.data());
    gpu.addPreassigned(nBack, v.xb.data() + b0 * v.d, listNos.data(), v.ids.data() + b0);
    check(gpu, "addPreassigned");

    const std::vector<uint8_t> bytes = serialize_index(&gpu);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    check(*loaded, "save / load");

    cpu->reset();
    gpu.reset();
    check(gpu, "reset");
    cpu->add_with_ids(half, v.xb.data() + half * v.d, v.ids.data() + half);
    gpu.add_with_ids(half, v.xb.data() + half * v.d, v.ids.data() + half);
    check(gpu, "reset, add_with_ids");

    auto other = cpuIvf(v.d, v.nlist, faiss::METRIC_L2, v.xb.data());
    other->add_with_ids(half, v.xb.data(), v.ids.data());
    gpu.copyFrom(other.get());
    cpu = std::move(other);
    check(gpu, "copyFrom another index");
}

TEST(GpuIvfFilters, VectorsAddedBackAfterRemoveIdsKeepTheirIds) {
    // One list of 40 vectors (room for 64) loses 7 and gets them back through
    // addPreassigned without growing: the 7 ids go past the 33 kept, within the list's
    // capacity, so its id array must have room for the capacity, not for what was kept.
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 8;
    const int64_t n = 40, b0 = 3, nBack = 7;
    const std::vector<float> xb = datasets::uniform(n, d, 11);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i) {
        ids.push_back(1000 + 3 * i);
    }
    auto cpu = cpuIvf(d, 1, faiss::METRIC_L2, xb.data());
    cpu->add_with_ids(n, xb.data(), ids.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    const faiss::IDSelectorRange gone(ids[size_t(b0)], ids[size_t(b0 + nBack)]);
    ASSERT_EQ(cpu->remove_ids(gone), size_t(nBack));
    ASSERT_EQ(gpu.remove_ids(gone), size_t(nBack));
    const std::vector<int64_t> listNos(size_t(nBack), 0);
    cpu->add_core(nBack, xb.data() + b0 * d, ids.data() + b0, listNos.data());
    gpu.addPreassigned(nBack, xb.data() + b0 * d, listNos.data(), ids.data() + b0);

    // faiss's remove_ids moves the last entries into the holes: compared as sets.
    std::vector<int64_t> got = gpu.listIds(0), want = ids;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
    const std::vector<uint8_t> bytes = serialize_index(&gpu);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    const std::vector<int64_t> batchIds(ids.begin(), ids.begin() + 20);
    faiss::IDSelectorBatch batch(batchIds.size(), batchIds.data());
    faiss::SearchParametersIVF params;
    params.nprobe = 1;
    params.sel = &batch;
    const int k = 10;
    std::vector<float> rD(size_t(n) * k), D(rD.size());
    std::vector<int64_t> rI(rD.size()), I(rD.size());
    cpu->search(n, xb.data(), k, rD.data(), rI.data(), &params);
    infForMissing(rD, rI, faiss::METRIC_L2);
    const std::vector<bool> noTies(size_t(n), false);
    for (const faiss::Index* index : std::vector<const faiss::Index*>{&gpu, loaded.get()}) {
        index->search(n, xb.data(), k, D.data(), I.data(), &params);
        EXPECT_EQ(compareKnnRows(rD, rI, D, I, n, k, noTies, 1e-4f, 1e-4f), 0);
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
