// GpuIndexBang's filtered search (graph walk and exact fallback), remove_ids as
// tombstones (search, save / load, the compacting add), and its range_search refusal.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/index_io.h>

#include "FilterTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 32;
constexpr int kK = 10;

struct BangData {
    int64_t nb = 20000, nq = 300;
    std::vector<float> xb, xq;
};

BangData bangData() {
    BangData b;
    datasets::ClusteredSpec spec{b.nb, kD, 100, 0.1f, 7};
    b.xb = datasets::clustered(spec, 0);
    spec.n = b.nq;
    b.xq = datasets::clustered(spec, 1);
    return b;
}

/// Recall@k of I against the exact results under the same selector (faiss CPU).
double recall(
        const faiss::IndexFlat& exact,
        const BangData& b,
        const faiss::SearchParameters* p,
        const std::vector<int64_t>& I) {
    std::vector<float> gD(size_t(b.nq) * kK);
    std::vector<int64_t> gI(gD.size());
    exact.search(b.nq, b.xq.data(), kK, gD.data(), gI.data(), p);
    int64_t hit = 0, total = 0;
    for (int64_t q = 0; q < b.nq; ++q) {
        for (int j = 0; j < kK; ++j) {
            const int64_t id = gI[size_t(q) * kK + j];
            if (id < 0) {
                continue;
            }
            ++total;
            hit += std::count(I.begin() + q * kK, I.begin() + (q + 1) * kK, id);
        }
    }
    return total == 0 ? 1.0 : double(hit) / double(total);
}

TEST(GpuBangFilters, RecallUnderSelectivity) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const BangData b = bangData();
    faiss::IndexFlat exact(kD, faiss::METRIC_L2);
    exact.add(b.nb, b.xb.data());
    GpuIndexBang index(res, kD);
    index.add(b.nb, b.xb.data());
    SearchParametersBang params;
    params.search_L = 64;
    std::vector<float> D(size_t(b.nq) * kK);
    std::vector<int64_t> I(D.size());
    index.search(b.nq, b.xq.data(), kK, D.data(), I.data(), &params);
    const double unfiltered = recall(exact, b, nullptr, I);
    std::mt19937_64 rng(seed);
    for (double frac : {0.5, 0.1, 0.01}) {
        for (bool contiguous : {false, true}) {
            std::vector<int64_t> ids;
            std::bernoulli_distribution take(frac);
            for (int64_t i = 0; i < b.nb; ++i) {
                if (contiguous ? i < int64_t(frac * b.nb) : take(rng)) {
                    ids.push_back(i);
                }
            }
            faiss::IDSelectorBatch sel(ids.size(), ids.data());
            params.sel = &sel;
            index.search(b.nq, b.xq.data(), kK, D.data(), I.data(), &params);
            for (int64_t id : I) {
                ASSERT_TRUE(id == -1 || sel.is_member(id));
            }
            const double r = recall(exact, b, &params, I);
            const BangFilterPlan plan = planBangFilteredSearch(
                    int64_t(ids.size()), b.nb, 64, index.graphDegree(), kK,
                    GpuIndexBang::kMaxSearchL);
            std::printf(
                    "Bang filtered %.0f%% %s: recall@10 %.4f (unfiltered %.4f), %s\n", 100 * frac,
                    contiguous ? "contiguous" : "random", r, unfiltered,
                    plan.exact ? "exact" : "graph");
            EXPECT_GE(r, unfiltered - 0.02) << frac << (contiguous ? " contiguous" : " random");
        }
    }
}

TEST(GpuBangFilters, SmallAndEmptySelections) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    GpuResources res;
    BangData b = bangData();
    b.nb = 3000;
    b.xb.resize(size_t(b.nb) * kD);
    GpuIndexBang index(res, kD);
    index.add(b.nb, b.xb.data());
    faiss::IndexFlat exact(kD, faiss::METRIC_L2);
    exact.add(b.nb, b.xb.data());
    for (const NamedSelector& s : selectorsOver(iota(b.nb), seed)) {
        SCOPED_TRACE(s.name);
        SearchParametersBang params;
        params.sel = s.sel.get();
        std::vector<float> D(size_t(b.nq) * kK);
        std::vector<int64_t> I(D.size());
        index.search(b.nq, b.xq.data(), kK, D.data(), I.data(), &params);
        int64_t allowed = 0;
        for (int64_t i = 0; i < b.nb; ++i) {
            allowed += s.sel->is_member(i);
        }
        for (int64_t q = 0; q < b.nq; ++q) {
            for (int j = 0; j < kK; ++j) {
                const int64_t id = I[size_t(q) * kK + j];
                // k results whenever k are allowed; then -1 / +inf.
                EXPECT_EQ(id == -1, j >= allowed) << "query " << q << " rank " << j;
                if (id >= 0) {
                    ASSERT_TRUE(s.sel->is_member(id));
                }
            }
        }
        if (allowed > 0) { // the rank loop above checked the all-missing answer
            EXPECT_GE(recall(exact, b, &params, I), 0.9);
        }
    }
}

TEST(GpuBangFilters, TombstonesSkippedKeptThroughSaveLoadClearedByAdd) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    BangData b = bangData();
    b.nb = 4000;
    b.xb.resize(size_t(b.nb) * kD);
    GpuIndexBang index(res, kD);
    index.add(b.nb - 100, b.xb.data());
    std::vector<int64_t> gone;
    for (int64_t i = 0; i < b.nb - 100; i += 3) {
        gone.push_back(i);
    }
    faiss::IDSelectorBatch sel(gone.size(), gone.data());
    EXPECT_EQ(index.remove_ids(sel), gone.size());
    EXPECT_EQ(index.remove_ids(sel), 0u);
    EXPECT_EQ(index.ntotal, b.nb - 100 - int64_t(gone.size()));
    float v[kD];
    EXPECT_THROW(index.reconstruct(0, v), faiss::FaissException);
    faiss::RangeSearchResult r(size_t(b.nq));
    EXPECT_THROW(index.range_search(b.nq, b.xq.data(), 1.f, &r), faiss::FaissException);

    std::vector<float> D(size_t(b.nq) * kK);
    std::vector<int64_t> I(D.size()), I2(D.size());
    index.search(b.nq, b.xq.data(), kK, D.data(), I.data());
    for (int64_t id : I) {
        ASSERT_TRUE(id >= 0 && !sel.is_member(id)) << id;
    }
    const std::vector<uint8_t> bytes = serialize_index(&index);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    EXPECT_EQ(loaded->ntotal, index.ntotal);
    loaded->search(b.nq, b.xq.data(), kK, D.data(), I2.data());
    EXPECT_EQ(I, I2);

    // add() rebuilds over the remaining vectors plus the new ones: sequential ids.
    index.add(100, b.xb.data() + size_t(b.nb - 100) * kD);
    EXPECT_EQ(index.nodeCount(), index.ntotal);
    std::vector<float> row(kD);
    index.reconstruct(0, row.data());
    EXPECT_EQ(row, std::vector<float>(b.xb.begin() + kD, b.xb.begin() + 2 * kD));
}

} // namespace
