// GpuIndexFlat's filtered search, range_search and remove_ids against faiss::IndexFlat.
#include <initializer_list>
#include <vector>

#include <faiss/IndexFlat.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/index_io.h>

#include "FilterTestUtil.h"
#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

struct FlatData {
    int d = 24;
    int64_t nb = 3000;
    int64_t nq = 40;
    std::vector<float> xb, xq;
};

FlatData flatData(uint64_t seed, int64_t nb = 3000, int64_t nq = 40) {
    FlatData f;
    f.nb = nb;
    f.nq = nq;
    f.xb = datasets::uniform(f.nb, f.d, seed);
    f.xq = datasets::uniform(f.nq, f.d, seed + 1);
    return f;
}

void expectFilteredMatchesCpu(
        const faiss::Index& gpu,
        const faiss::Index& cpu,
        const FlatData& f,
        int k,
        const NamedSelector& s) {
    SCOPED_TRACE("selector " + s.name + " k=" + std::to_string(k));
    faiss::SearchParameters params;
    params.sel = s.sel.get();
    std::vector<float> rD(size_t(f.nq) * k), D(rD.size(), -7.f);
    std::vector<int64_t> rI(rD.size()), I(rD.size(), -7);
    cpu.search(f.nq, f.xq.data(), k, rD.data(), rI.data(), &params);
    bool anyAllowed = false;
    for (int64_t i = 0; i < f.nb && !anyAllowed; ++i) {
        anyAllowed = s.sel->is_member(i);
    }
    if (!anyAllowed) {
        // FAISS 1.7.3's CPU search answers an empty selection with distance-0 rows; the
        // answer is "nothing": every result missing.
        std::fill(rI.begin(), rI.end(), int64_t(-1));
    }
    infForMissing(rD, rI, cpu.metric_type);
    gpu.search(f.nq, f.xq.data(), k, D.data(), I.data(), &params);
    EXPECT_EQ(compareKnn(rD, rI, D, I, f.nq, k, 1e-4f, 1e-4f), 0);
    for (size_t i = 0; i < I.size(); ++i) {
        if (I[i] >= 0) {
            ASSERT_TRUE(s.sel->is_member(I[i])) << "id " << I[i] << " is not selected";
        }
    }
}

/// GpuIndexFlat (kAuto) against faiss::IndexFlat for every selector, both metrics and
/// each k, on f; with alternate, every selector in one metric only, in turn (each metric
/// still sees half of them).
void expectEverySelectorMatchesCpu(
        GpuResources& res,
        const FlatData& f,
        uint64_t seed,
        std::initializer_list<int> ks,
        bool alternate = false,
        const GpuIndexFlatConfig& config = GpuIndexFlatConfig()) {
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        faiss::IndexFlat cpu(f.d, metric);
        cpu.add(f.nb, f.xb.data());
        GpuIndexFlat gpu(res, &cpu, config);
        const std::vector<NamedSelector> sels = selectorsOver(iota(f.nb), seed);
        for (size_t i = 0; i < sels.size(); ++i) {
            const NamedSelector& s = sels[i];
            if (alternate && int(i % 2) != (metric == faiss::METRIC_L2 ? 0 : 1)) {
                continue;
            }
            for (int k : ks) {
                expectFilteredMatchesCpu(gpu, cpu, f, k, s);
            }
        }
    }
}

// A batch and base large enough for the threshold path (impl/FlatThresholdSearch.h):
// its sample's k-th is taken over the sample's allowed rows and only allowed ids are
// listed; selections of fewer than k ids (or none) pad with -1.
TEST(GpuFlatFilters, ThresholdPathMatchesCpuForEverySelector) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    expectEverySelectorMatchesCpu(res, flatData(seed, 40000, 300), seed, {1, 10});
}

// A few queries against a base large enough for the radix paths
// (impl/FlatRadixSearch.h; 4 queries take it from k 10, one at every k): only allowed columns are
// keyed; fewer than k allowed pad. Under compute-sanitizer (the base cannot shrink below
// kRadixMinBase) each selector in one metric, and k 1000 (4 queries), 1 and 1000 (one):
// the small and the largest of the sorts of the taken keys.
TEST(GpuFlatFilters, RadixPathMatchesCpuForEverySelector) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const bool small = underSanitizer();
    if (small) {
        expectEverySelectorMatchesCpu(res, flatData(seed, 70000, 4), seed, {1000}, true);
    } else {
        expectEverySelectorMatchesCpu(res, flatData(seed, 70000, 4), seed, {10, 1000});
    }
    // One query: its product and first pass in one kernel (radixSelectQuery), over the
    // FP32 base and over each copy (filtered ids keyed +inf, never re-ranked).
    GpuIndexFlatConfig half, int8;
    half.float16Copy = true;
    int8.int8Copy = true;
    for (const GpuIndexFlatConfig& config : {GpuIndexFlatConfig(), half, int8}) {
        SCOPED_TRACE(
                config.float16Copy        ? "float16 copy"
                        : config.int8Copy ? "int8 copy"
                                          : "FP32 base");
        if (small) {
            expectEverySelectorMatchesCpu(
                    res, flatData(seed, 70000, 1), seed, {1, 1000}, true, config);
        } else {
            expectEverySelectorMatchesCpu(
                    res, flatData(seed, 70000, 1), seed, {1, 10, 1000}, false, config);
        }
    }
}

TEST(GpuFlatFilters, EverySelectorMatchesCpu) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const FlatData f = flatData(seed);
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        faiss::IndexFlat cpu(f.d, metric);
        cpu.add(f.nb, f.xb.data());
        {
            const GpuIndexFlatConfig config;
            GpuIndexFlat gpu(res, &cpu, config);
            const std::vector<NamedSelector> sels = selectorsOver(iota(f.nb), seed);
            for (const NamedSelector& s : sels) {
                for (int k : {1, 10, 100}) {
                    expectFilteredMatchesCpu(gpu, cpu, f, k, s);
                }
            }
        }
    }
}

TEST(GpuFlatFilters, CachedSelectorFollowsTheIndex) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    GpuResources res;
    const FlatData f = flatData(seed);
    faiss::IndexFlat cpu(f.d, faiss::METRIC_L2);
    GpuIndexFlat gpu(res, f.d);
    cpu.add(f.nb / 2, f.xb.data());
    gpu.add(f.nb / 2, f.xb.data());
    ThirdIds third;
    NamedSelector s;
    s.name = "subclass";
    s.sel = std::make_unique<ThirdIds>();
    expectFilteredMatchesCpu(gpu, cpu, f, 10, s);
    // The index grows: the cached bitmap must not be reused.
    cpu.add(f.nb / 2, f.xb.data() + size_t(f.nb / 2) * f.d);
    gpu.add(f.nb / 2, f.xb.data() + size_t(f.nb / 2) * f.d);
    expectFilteredMatchesCpu(gpu, cpu, f, 10, s);
}

TEST(GpuFlatFilters, RangeSearchMatchesCpu) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    // A small budget: several query and base tiles.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    const FlatData f = flatData(seed);
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        faiss::IndexFlat cpu(f.d, metric);
        cpu.add(f.nb, f.xb.data());
        GpuIndexFlat gpu(res, &cpu);
        const int k = 200;
        std::vector<float> kD(size_t(f.nq) * k);
        std::vector<int64_t> kI(kD.size());
        cpu.search(f.nq, f.xq.data(), k, kD.data(), kI.data());
        const std::vector<NamedSelector> sels = selectorsOver(iota(f.nb), seed);
        for (float radius : radiiFrom(kD, f.nq, k, metric == faiss::METRIC_INNER_PRODUCT)) {
            for (const faiss::IDSelector* sel :
                 std::vector<const faiss::IDSelector*>{nullptr, sels[2].sel.get()}) {
                SCOPED_TRACE("radius " + std::to_string(radius) + (sel ? " batch" : ""));
                faiss::SearchParameters params;
                params.sel = const_cast<faiss::IDSelector*>(sel);
                faiss::RangeSearchResult ref(size_t(f.nq)), got(size_t(f.nq));
                cpu.range_search(f.nq, f.xq.data(), radius, &ref, &params);
                gpu.range_search(f.nq, f.xq.data(), radius, &got, &params);
                EXPECT_EQ(compareRange(ref, got, f.nq, radius, 1e-4f), 0);
            }
        }
    }
}

TEST(GpuFlatFilters, RangeSearchRefusesNanRadius) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const FlatData f = flatData(testSeed());
    GpuIndexFlat gpu(res, f.d);
    gpu.add(f.nb, f.xb.data());
    faiss::RangeSearchResult r(size_t(f.nq));
    EXPECT_THROW(gpu.range_search(f.nq, f.xq.data(), NAN, &r), faiss::FaissException);
    EXPECT_EQ(gpu.ntotal, f.nb);
}

TEST(GpuFlatFilters, RemoveIdsShiftsAsCpuAndSurvivesSaveLoad) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const FlatData f = flatData(seed);
    faiss::IndexFlat cpu(f.d, faiss::METRIC_L2);
    cpu.add(f.nb, f.xb.data());
    GpuIndexFlat gpu(res, &cpu);
    const std::vector<NamedSelector> sels = selectorsOver(iota(f.nb), seed);
    const faiss::IDSelector& batch = *sels[2].sel;
    const size_t removed = cpu.remove_ids(batch);
    ASSERT_GT(removed, 0u);
    EXPECT_EQ(gpu.remove_ids(batch), removed);
    EXPECT_EQ(gpu.ntotal, cpu.ntotal);
    std::vector<float> got(size_t(gpu.ntotal) * f.d);
    gpu.reconstruct_n(0, gpu.ntotal, got.data());
    EXPECT_EQ(got, std::vector<float>(cpu.get_xb(), cpu.get_xb() + got.size()));
    // Nothing selected: nothing removed.
    EXPECT_EQ(gpu.remove_ids(*sels.back().sel), 0u);

    const std::vector<uint8_t> bytes = serialize_index(&gpu);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    EXPECT_EQ(loaded->ntotal, cpu.ntotal);
    NamedSelector none;
    none.name = "after remove + load";
    none.sel = std::make_unique<faiss::IDSelectorRange>(0, cpu.ntotal);
    expectFilteredMatchesCpu(*loaded, cpu, f, 10, none);
    faiss::IndexFlat back(f.d, faiss::METRIC_L2);
    gpu.copyTo(&back);
    EXPECT_EQ(back.ntotal, cpu.ntotal);
}

} // namespace
