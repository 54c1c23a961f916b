// GpuIndexBang's filtered search (graph walk and exact fallback, the device list of a
// bitmap's slots it takes), remove_ids as tombstones (search, save / load, the
// compacting add), and its range_search refusal.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/index_io.h>
#include <kernels/IdFilter.h>

#include "FilterTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 32;
constexpr int kK = 10;

/// Under compute-sanitizer 1000 vectors (1% of them still k) and 100 queries.
struct BangData {
    int64_t nb = smallUnderSanitizer(20000, 1000), nq = smallUnderSanitizer(300, 100);
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
    // Under compute-sanitizer 50 queries and a graph of degree 32 (its build is the time
    // there; every selection here is searched exactly at that size, as at 20000).
    BangData b = bangData();
    b.nq = smallUnderSanitizer(b.nq, 50);
    b.xq.resize(size_t(b.nq) * kD);
    faiss::IndexFlat exact(kD, faiss::METRIC_L2);
    exact.add(b.nb, b.xb.data());
    GpuIndexBangConfig cfg;
    cfg.build.graphDegree = int(smallUnderSanitizer(cfg.build.graphDegree, 32));
    GpuIndexBang index(res, kD, faiss::METRIC_L2, cfg);
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
    b.nb = smallUnderSanitizer(3000, 500);
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

/// The slots s < nslots whose bit is set, walked on the host.
std::vector<int64_t> setSlots(const std::vector<uint32_t>& words, int64_t nslots) {
    std::vector<int64_t> out;
    for (int64_t s = 0; s < nslots; ++s) {
        if ((words[size_t(s >> 5)] >> (s & 31)) & 1u) {
            out.push_back(s);
        }
    }
    return out;
}

TEST(GpuIdFilter, ListSlotsMatchesHostWalk) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    cudaStream_t stream = res.stream();
    std::mt19937_64 rng(seed);
    constexpr int64_t kGuard = 64; // entries past the list that must stay untouched
    constexpr int64_t kUntouched = -7;
    for (int64_t nslots : {int64_t(1), int64_t(31), int64_t(32), int64_t(33), int64_t(1000003)}) {
        for (const std::string fill : {"empty", "full", "half", "sparse"}) {
            SCOPED_TRACE(std::to_string(nslots) + " slots, " + fill);
            const int64_t nwords = kernels::idFilterWords(nslots);
            std::vector<uint32_t> words(size_t(nwords), fill == "full" ? ~0u : 0u);
            if (fill == "half" || fill == "sparse") {
                std::bernoulli_distribution take(fill == "half" ? 0.5 : 0.001);
                for (int64_t s = 0; s < nslots; ++s) {
                    if (take(rng)) {
                        words[size_t(s >> 5)] |= 1u << (s & 31);
                    }
                }
            }
            // Bits past nslots in the last word: neither listed nor counted.
            if (nslots % 32 != 0) {
                words.back() |= ~((1u << (nslots % 32)) - 1u);
            }
            const std::vector<int64_t> expected = setSlots(words, nslots);
            const int64_t c = int64_t(expected.size());
            auto dWords = res.alloc<uint32_t>(words.size());
            copyToDevice(dWords.data(), words.data(), words.size(), stream);
            std::vector<int64_t> init(size_t(c + kGuard), kUntouched);
            auto out = res.alloc<int64_t>(init.size());
            copyToDevice(out.data(), init.data(), init.size(), stream);
            auto count = res.alloc<int64_t>(1);
            const size_t tempBytes = kernels::idFilterListSlotsTempBytes(nslots);
            auto temp = res.alloc<uint8_t>(tempBytes);
            kernels::idFilterListSlots(
                    dWords.data(), nslots, out.data(), count.data(), temp.data(), tempBytes,
                    stream);
            int64_t listed = -1;
            copyToHost(&listed, count.data(), 1, stream);
            EXPECT_EQ(listed, c);
            const std::vector<int64_t> got = copyToHostVector(out.data(), init.size(), stream);
            for (int64_t i = 0; i < c; ++i) {
                ASSERT_EQ(got[size_t(i)], expected[size_t(i)]) << "entry " << i;
            }
            for (int64_t i = c; i < c + kGuard; ++i) {
                ASSERT_EQ(got[size_t(i)], kUntouched) << "written past the list at " << i;
            }
            int64_t counted = -1;
            kernels::idFilterCount(dWords.data(), nslots, count.data(), stream);
            copyToHost(&counted, count.data(), 1, stream);
            EXPECT_EQ(counted, c);
        }
    }
}

TEST(GpuBangFilters, ExactFallbackMatchesCpuAcrossChunks) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    // 16 MiB of temporaries: chunks of about 8000 vectors at d = 256, so the larger
    // selections are gathered, searched and merged in two or three chunks.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    cudaStream_t stream = res.stream();
    const int d = 256, k = 10;
    // Under compute-sanitizer 8 queries (the chunks are the same: they depend on d alone).
    const int64_t nb = 20011, nq = smallUnderSanitizer(40, 8);
    const std::vector<float> xb = datasets::uniform(nb, d, seed);
    const std::vector<float> xq = datasets::uniform(nq, d, seed + 1);
    BangGraph g(res, d, 16, 0);
    g.setVectors(nb, xb.data());
    faiss::IndexFlat cpu(d, faiss::METRIC_L2);
    cpu.add(nb, xb.data());
    auto qDev = res.alloc<float>(xq.size());
    copyToDevice(qDev.data(), xq.data(), xq.size(), stream);
    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    std::mt19937_64 rng(seed);
    for (const std::string pick : {"all", "60%", "1%", "first", "last", "5 nodes"}) {
        SCOPED_TRACE(pick);
        std::vector<uint8_t> bytes(size_t((nb + 7) / 8), 0);
        std::vector<uint32_t> words(size_t(kernels::idFilterWords(nb)), 0);
        std::bernoulli_distribution take(pick == "60%" ? 0.6 : 0.01);
        int64_t allowed = 0;
        for (int64_t i = 0; i < nb; ++i) {
            const bool on = pick == "all" ? true
                    : pick == "first"     ? i == 0
                    : pick == "last"      ? i == nb - 1
                    : pick == "5 nodes"   ? i % 4001 == 7
                                          : take(rng);
            if (on) {
                bytes[size_t(i / 8)] |= uint8_t(1u << (i % 8));
                words[size_t(i >> 5)] |= 1u << (i & 31);
                ++allowed;
            }
        }
        ASSERT_GT(allowed, 0);
        auto allow = res.alloc<uint32_t>(words.size());
        copyToDevice(allow.data(), words.data(), words.size(), stream);
        faiss::IDSelectorBitmap sel(bytes.size(), bytes.data());
        faiss::SearchParameters params;
        params.sel = &sel;
        std::vector<float> rD(size_t(nq) * k);
        std::vector<int64_t> rI(rD.size());
        cpu.search(nq, xq.data(), k, rD.data(), rI.data(), &params);
        bangExactAllowed(res, g, qDev.data(), nq, k, allow.data(), allowed, dD.data(), dI.data());
        const std::vector<float> D = copyToHostVector(dD.data(), dD.size(), stream);
        const std::vector<int64_t> I = copyToHostVector(dI.data(), dI.size(), stream);
        EXPECT_EQ(compareKnn(rD, rI, D, I, nq, k, 1e-4f, 1e-4f), 0);
        for (size_t i = 0; i < I.size(); ++i) {
            if (I[i] == -1) {
                EXPECT_TRUE(std::isinf(D[i]) && D[i] > 0) << "missing result " << i;
            } else {
                ASSERT_TRUE(sel.is_member(I[i])) << I[i];
            }
        }
        // A count that is not the bitmap's is refused, the results left as they were.
        EXPECT_THROW(
                bangExactAllowed(
                        res, g, qDev.data(), nq, k, allow.data(), allowed + (allowed < nb ? 1 : -1),
                        dD.data(), dI.data()),
                faiss::FaissException);
        EXPECT_EQ(copyToHostVector(dI.data(), dI.size(), stream), I);
    }
}

TEST(GpuBangFilters, TombstonesSkippedKeptThroughSaveLoadClearedByAdd) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    BangData b = bangData();
    b.nb = smallUnderSanitizer(4000, 500);
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
