// GpuIndexBang with METRIC_INNER_PRODUCT (the MIPS-to-L2 transform): recall against
// exact inner-product search on unit vectors (cosine) and on vectors of varied norms,
// distances equal to the exact inner products, missing results, save / load and
// reconstruct, an add of longer vectors (a rebuild with the new M2), the filtered paths,
// PQ mode.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/index_io.h>

#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;

namespace {

/// Clustered rows, each scaled to norm 1 (scale 0) or to a random norm in [1 - scale,
/// 1 + scale].
std::vector<float> rows(int64_t n, int d, int64_t seed, int set, float scale) {
    datasets::ClusteredSpec spec{n, d, 100, 0.1f, uint64_t(seed)};
    std::vector<float> x = datasets::clustered(spec, set);
    std::mt19937 rng(uint32_t(seed * 7 + set));
    std::uniform_real_distribution<float> norm(1.f - scale, 1.f + scale);
    for (int64_t v = 0; v < n; ++v) {
        double s = 0;
        for (int j = 0; j < d; ++j) {
            s += double(x[v * d + j]) * x[v * d + j];
        }
        const float f = norm(rng) / float(std::sqrt(s));
        for (int j = 0; j < d; ++j) {
            x[v * d + j] *= f;
        }
    }
    return x;
}

double dot(const float* a, const float* b, int d) {
    double s = 0;
    for (int j = 0; j < d; ++j) {
        s += double(a[j]) * b[j];
    }
    return s;
}

struct Results {
    std::vector<float> D;
    std::vector<int64_t> I;
};

Results searchOf(const faiss::Index& index, const std::vector<float>& xq, int k, int L = 64) {
    const int64_t nq = int64_t(xq.size()) / index.d;
    Results r{std::vector<float>(nq * k), std::vector<int64_t>(nq * k)};
    SearchParametersBang params;
    params.search_L = L;
    const bool bang = dynamic_cast<const GpuIndexBang*>(&index) != nullptr;
    index.search(nq, xq.data(), k, r.D.data(), r.I.data(), bang ? &params : nullptr);
    return r;
}

double recallAt10(const Results& gt, const Results& r, int k) {
    const int64_t nq = int64_t(gt.I.size()) / k;
    int64_t hit = 0;
    for (int64_t q = 0; q < nq; ++q) {
        for (int j = 0; j < 10; ++j) {
            hit += std::count(gt.I.begin() + q * k, gt.I.begin() + q * k + 10, r.I[q * k + j]);
        }
    }
    return double(hit) / double(nq * 10);
}

/// Every result is a stored id whose exact inner product with its query is the
/// distance returned (1e-4 relative to the norms), in descending order.
void expectExactInnerProducts(
        const Results& r,
        const std::vector<float>& xq,
        const std::vector<float>& xb,
        int d,
        int k) {
    const int64_t nq = int64_t(xq.size()) / d, nb = int64_t(xb.size()) / d;
    int64_t bad = 0;
    for (int64_t q = 0; q < nq; ++q) {
        for (int j = 0; j < k; ++j) {
            const int64_t id = r.I[q * k + j];
            ASSERT_TRUE(id >= 0 && id < nb) << "query " << q << " rank " << j;
            const double want = dot(&xq[q * d], &xb[id * d], d);
            const double scale =
                    std::sqrt(dot(&xq[q * d], &xq[q * d], d) * dot(&xb[id * d], &xb[id * d], d));
            bad += std::fabs(r.D[q * k + j] - want) > 1e-4 * std::max(1.0, scale);
            if (j > 0) {
                EXPECT_GE(r.D[q * k + j - 1], r.D[q * k + j]) << "query " << q;
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

} // namespace

TEST(GpuIndexBangInnerProduct, RecallAndDistancesOnUnitAndVariedNorms) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32, k = 10;
    // Under compute-sanitizer 200 vectors, 50 queries, L 10 and 100.
    const int64_t nb = test::smallUnderSanitizer(50000, 200),
                  nq = test::smallUnderSanitizer(500, 50);
    const std::vector<int> Ls =
            test::underSanitizer() ? std::vector<int>{10, 100} : std::vector<int>{10, 40, 100, 200};
    // scale 0: unit vectors (cosine); 0.5: norms spread over [0.5, 1.5].
    for (float scale : {0.f, 0.5f}) {
        const std::vector<float> xb = rows(nb, d, 3, 0, scale), xq = rows(nq, d, 3, 1, scale);
        GpuIndexFlat flat(res, d, faiss::METRIC_INNER_PRODUCT);
        flat.add(nb, xb.data());
        const Results gt = searchOf(flat, xq, k);
        GpuIndexBang bang(res, d, faiss::METRIC_INNER_PRODUCT);
        bang.add(nb, xb.data());
        double best = 0;
        for (int L : Ls) {
            const Results r = searchOf(bang, xq, k, L);
            const double recall = recallAt10(gt, r, k);
            std::printf(
                    "norms in [%.1f, %.1f]: L=%d recall@10 %.4f\n", 1 - scale, 1 + scale, L,
                    recall);
            best = std::max(best, recall);
            expectExactInnerProducts(r, xq, xb, d, k);
        }
        // Unit vectors: the L2 graph of the vectors themselves. Varied norms: the
        // transform's extra component steers the walk less well (class comment).
        EXPECT_GE(best, scale == 0 ? 0.99 : 0.9);
    }
}

TEST(GpuIndexBangInnerProduct, MissingResultsSaveLoadAndReconstruct) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 8;
    const int64_t nb = test::smallUnderSanitizer(2000, 400), row = std::min<int64_t>(1234, nb - 1);
    const std::vector<float> xb = rows(nb, d, 5, 0, 0.3f), xq = rows(20, d, 5, 1, 0.3f);
    GpuIndexBang empty(res, d, faiss::METRIC_INNER_PRODUCT);
    const Results none = searchOf(empty, xq, k);
    for (size_t i = 0; i < none.I.size(); ++i) {
        EXPECT_EQ(none.I[i], -1);
        EXPECT_EQ(none.D[i], -std::numeric_limits<float>::infinity());
    }
    GpuIndexBang five(res, d, faiss::METRIC_INNER_PRODUCT);
    five.add(5, xb.data());
    const Results few = searchOf(five, xq, k);
    for (int64_t q = 0; q < 20; ++q) {
        for (int j = 0; j < k; ++j) {
            EXPECT_EQ(few.I[q * k + j] < 0, j >= 5);
            if (j >= 5) {
                EXPECT_EQ(few.D[q * k + j], -std::numeric_limits<float>::infinity());
            }
        }
    }

    GpuIndexBang index(res, d, faiss::METRIC_INNER_PRODUCT);
    index.add(nb, xb.data());
    std::vector<float> back(d);
    index.reconstruct(row, back.data());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), xb.begin() + row * d));
    EXPECT_EQ(
            index.deviceMemoryBytes(),
            size_t(nb) * (d + 2) * 4 + size_t(nb) * 64 * 4 + test::entryHubBytes(nb, d + 1));
    const std::vector<uint8_t> bytes = serialize_index(&index);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    auto* again = dynamic_cast<GpuIndexBang*>(loaded.get());
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->metric_type, faiss::METRIC_INNER_PRODUCT);
    EXPECT_EQ(again->graph(), index.graph());
    const Results a = searchOf(index, xq, k), b = searchOf(*again, xq, k);
    EXPECT_EQ(a.I, b.I);
    EXPECT_EQ(a.D, b.D);
    expectExactInnerProducts(a, xq, xb, d, k);
}

// An add within the stored norms extends the graph; longer vectors need a new M2, so
// that add rebuilds: either way every distance is the exact inner product (a longer
// vector kept with the old transform would come back with a wrong one).
TEST(GpuIndexBangInnerProduct, LongerVectorsRebuildAndEveryDistanceStaysExact) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 10;
    // Under compute-sanitizer 150 vectors in all, 30 queries.
    const int64_t nb = test::smallUnderSanitizer(6000, 150), half = nb / 2, longer = nb / 6;
    std::vector<float> xb = rows(nb, d, 8, 0, 0.2f);
    const std::vector<float> xq = rows(test::smallUnderSanitizer(100, 30), d, 8, 1, 0.2f);
    for (int64_t v = nb - longer; v < nb; ++v) { // the last sixth twice as long
        for (int j = 0; j < d; ++j) {
            xb[v * d + j] *= 2.f;
        }
    }
    GpuIndexBang index(res, d, faiss::METRIC_INNER_PRODUCT);
    index.add(half, xb.data());
    const int64_t entry = index.entryPoint();
    index.add(nb - half - longer, xb.data() + half * d); // within the norms: an extension
    EXPECT_EQ(index.entryPoint(), entry);
    index.add(longer, xb.data() + (nb - longer) * d); // longer: a rebuild
    ASSERT_EQ(index.ntotal, nb);
    GpuIndexFlat flat(res, d, faiss::METRIC_INNER_PRODUCT);
    flat.add(nb, xb.data());
    const Results gt = searchOf(flat, xq, k), r = searchOf(index, xq, k, 100);
    expectExactInnerProducts(r, xq, xb, d, k);
    std::printf("after the rebuild: recall@10 %.4f at L=100\n", recallAt10(gt, r, k));
    EXPECT_GE(recallAt10(gt, r, k), 0.9);
}

TEST(GpuIndexBangInnerProduct, FilteredSearchOnBothPaths) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 10;
    // Under compute-sanitizer 1000 vectors: 1% of them is still k.
    const int64_t nb = test::smallUnderSanitizer(20000, 1000);
    const std::vector<float> xb = rows(nb, d, 9, 0, 0.f), xq = rows(50, d, 9, 1, 0.f);
    GpuIndexBang bang(res, d, faiss::METRIC_INNER_PRODUCT);
    bang.add(nb, xb.data());
    GpuIndexFlat flat(res, d, faiss::METRIC_INNER_PRODUCT);
    flat.add(nb, xb.data());
    // 1% allowed (the exact search over the allowed ids) and 50% (the walk).
    for (int64_t allowed : {nb / 100, nb / 2}) {
        faiss::IDSelectorRange sel(0, allowed);
        SearchParametersBang bp;
        bp.sel = &sel;
        bp.search_L = 100;
        faiss::SearchParameters fp;
        fp.sel = &sel;
        Results gt{std::vector<float>(50 * k), std::vector<int64_t>(50 * k)};
        Results r = gt;
        flat.search(50, xq.data(), k, gt.D.data(), gt.I.data(), &fp);
        bang.search(50, xq.data(), k, r.D.data(), r.I.data(), &bp);
        for (int64_t id : r.I) {
            EXPECT_TRUE(id >= 0 && id < allowed);
        }
        expectExactInnerProducts(r, xq, xb, d, k);
        const double recall = recallAt10(gt, r, k);
        std::printf("filtered to %lld ids: recall@10 %.4f\n", (long long)allowed, recall);
        EXPECT_GE(recall, allowed == nb / 100 ? 0.99 : 0.95);
    }
}

// PQ mode codes the transformed rows: d + d / M wide, M + 1 sub-quantizers (the last one
// holds the transform's component); the final worklist is re-ranked exactly. Under
// compute-sanitizer M = 1 (2 codebooks to train instead of 9: each is 25 k-means
// iterations), 300 vectors (the first add still 256 or more) and 20 queries.
TEST(GpuIndexBangInnerProduct, PqModeCodesTheTransformedRows) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32, k = 10, M = int(test::smallUnderSanitizer(8, 1));
    const int64_t nb = test::smallUnderSanitizer(20000, 300), extra = nb / 10;
    const std::vector<float> xb = rows(nb, d, 11, 0, 0.f),
                             xq = rows(test::smallUnderSanitizer(200, 20), d, 11, 1, 0.f);
    GpuIndexBangConfig cfg;
    cfg.pqSubquantizers = M;
    GpuIndexBang index(res, d, faiss::METRIC_INNER_PRODUCT, cfg);
    index.add(nb - extra, xb.data());
    index.add(extra, xb.data() + (nb - extra) * d); // an extension: codes of the codebooks
    EXPECT_EQ(index.pqCentroids().size(), size_t(256) * (d + d / M));
    EXPECT_EQ(index.pqCodes().size(), size_t(nb) * (M + 1));
    EXPECT_EQ(index.traversalBytesPerVector(), size_t(M + 1));
    GpuIndexFlat flat(res, d, faiss::METRIC_INNER_PRODUCT);
    flat.add(nb, xb.data());
    const Results gt = searchOf(flat, xq, k), r = searchOf(index, xq, k, 100);
    expectExactInnerProducts(r, xq, xb, d, k);
    const double recall = recallAt10(gt, r, k);
    std::printf("PQ mode, M=%d: recall@10 %.4f at L=100\n", M, recall);
    EXPECT_GE(recall, 0.9);
    const std::vector<uint8_t> bytes = serialize_index(&index);
    auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
    const Results again = searchOf(*loaded, xq, k, 100);
    EXPECT_EQ(again.I, r.I);
    EXPECT_EQ(again.D, r.D);
}
