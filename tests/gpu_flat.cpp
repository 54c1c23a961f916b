// GpuIndexFlat against faiss::IndexFlat: same ids except ties, distances within 1e-4.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>

#include "FlatTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using faiss_ext::test::compareKnn;
using faiss_ext::test::searchPath;

namespace {

struct FlatCase {
    int64_t nb;
    int64_t nq;
    int d;
    int k;
    faiss::MetricType metric;
    uint64_t seed;
    /// GpuIndexFlat's own choice of path at its default precision only, not every path
    /// and precision forced (which the other cases run).
    bool autoOnly = false;
};

const char* precisionName(GpuFlatPrecision p) {
    switch (p) {
        case GpuFlatPrecision::kAuto:
            return "auto";
        case GpuFlatPrecision::kFloat32:
            return "fp32";
        case GpuFlatPrecision::kTF32x3:
            return "tf32x3";
    }
    return "?";
}

std::string pathName(FlatSearchPath p) {
    return p == FlatSearchPath::kAuto ? "auto (through GpuIndexFlat)" : flatSearchPathName(p);
}

/// The precisions checked on a path at dimension d against FAISS CPU to 1e-4. The
/// threshold and rerank paths re-rank in FP32, so every precision is exact there; the radix path
/// runs FP32 only (it refuses 3xTF32: RadixPathRefusesSplitProducts); elsewhere 3xTF32
/// only up to d = 256: its one-sided accumulation error grows with d (IndexConfig.h)
/// and passes 1e-4 of these uniform sets' distances near d = 2048.
std::vector<GpuFlatPrecision> precisionsFor(int d, FlatSearchPath path) {
    if (path == FlatSearchPath::kRadixCopy) {
        return {GpuFlatPrecision::kAuto}; // its products are the copy's, then FP32
    }
    std::vector<GpuFlatPrecision> out{GpuFlatPrecision::kAuto, GpuFlatPrecision::kFloat32};
    if (path == FlatSearchPath::kRadix) {
        return out;
    }
    if (d <= 256 || path == FlatSearchPath::kThreshold || path == FlatSearchPath::kRerank) {
        out.push_back(GpuFlatPrecision::kTF32x3);
    }
    return out;
}

std::string describe(const FlatCase& c) {
    return "nb=" + std::to_string(c.nb) + " nq=" + std::to_string(c.nq) +
            " d=" + std::to_string(c.d) + " k=" + std::to_string(c.k) +
            " metric=" + (c.metric == faiss::METRIC_L2 ? "L2" : "IP") +
            " seed=" + std::to_string(c.seed);
}

const std::vector<FlatSearchPath> kEveryPath{
        FlatSearchPath::kAuto,  FlatSearchPath::kTiles,  FlatSearchPath::kThreshold,
        FlatSearchPath::kRadix, FlatSearchPath::kRerank, FlatSearchPath::kRadixCopy};

/// Every path of `paths` (GpuIndexFlat's own choice, and each forced through flatSearch)
/// in every precision checked on it, against faiss::IndexFlat.
void runCase(
        GpuResources& res,
        const FlatCase& c,
        const std::vector<FlatSearchPath>& paths = kEveryPath) {
    SCOPED_TRACE(describe(c));
    auto xb = datasets::uniform(c.nb, c.d, c.seed);
    auto xq = datasets::uniform(c.nq, c.d, c.seed + 1);
    faiss::IndexFlat cpu(c.d, c.metric);
    cpu.add(c.nb, xb.data());
    std::vector<float> refD(c.nq * c.k);
    std::vector<int64_t> refI(c.nq * c.k);
    cpu.search(c.nq, xq.data(), c.k, refD.data(), refI.data());
    for (FlatSearchPath path :
         c.autoOnly ? std::vector<FlatSearchPath>{FlatSearchPath::kAuto} : paths) {
        const std::vector<GpuFlatPrecision> precisions = c.autoOnly
                ? std::vector<GpuFlatPrecision>{GpuFlatPrecision::kAuto}
                : precisionsFor(c.d, path);
        for (GpuFlatPrecision p : precisions) {
            SCOPED_TRACE(pathName(path) + ", " + precisionName(p));
            std::vector<float> D(c.nq * c.k, 12345.f);
            std::vector<int64_t> I(c.nq * c.k, 777);
            if (path == FlatSearchPath::kRadixCopy) {
                for (kernels::CopyCode copy :
                     {kernels::CopyCode::kFloat16, kernels::CopyCode::kInt8}) {
                    SCOPED_TRACE(copy == kernels::CopyCode::kInt8 ? "int8 copy" : "float16 copy");
                    searchPath(res, xb, xq, c.d, c.k, c.metric, path, p, D, I, copy);
                    EXPECT_EQ(compareKnn(refD, refI, D, I, c.nq, c.k, 1e-4f, 1e-5f), 0);
                }
                continue;
            }
            if (path != FlatSearchPath::kAuto) {
                searchPath(res, xb, xq, c.d, c.k, c.metric, path, p, D, I);
                EXPECT_EQ(compareKnn(refD, refI, D, I, c.nq, c.k, 1e-4f, 1e-5f), 0);
                continue;
            }
            // With each copy too where the automatic choice may read it (one query).
            for (int copy : {0, 1, 2}) {
                if (copy > 0 && c.nq != 1) {
                    continue;
                }
                SCOPED_TRACE(
                        copy == 1           ? "with the float16 copy"
                                : copy == 2 ? "with the int8 copy"
                                            : "without a copy");
                GpuIndexFlatConfig cfg;
                cfg.precision = p;
                cfg.float16Copy = copy == 1;
                cfg.int8Copy = copy == 2;
                GpuIndexFlat gpu(res, c.d, c.metric, cfg);
                // Two adds, to exercise storage growth.
                gpu.add(c.nb / 2 + 1, xb.data());
                if (c.nb / 2 + 1 < c.nb) {
                    gpu.add(c.nb - (c.nb / 2 + 1), xb.data() + (c.nb / 2 + 1) * c.d);
                }
                ASSERT_EQ(gpu.ntotal, c.nb);
                gpu.search(c.nq, xq.data(), c.k, D.data(), I.data());
                EXPECT_EQ(compareKnn(refD, refI, D, I, c.nq, c.k, 1e-4f, 1e-5f), 0);
            }
        }
    }
}

} // namespace

TEST(GpuIndexFlat, MatchesCpuOnFixedShapes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        if (test::underSanitizer()) {
            // One case of each kind below, smaller: the largest k (L2), an odd d (inner
            // product), several segments (L2), each on every path, so that every path
            // runs in both metrics; a query the automatic choice sends down the radix path
            // (at least kRadixMinBase vectors), the same shape, through GpuIndexFlat alone
            // in inner product. Then the smallest batch and base the automatic choice
            // sends down the threshold path (256 queries, 16 times its capacity of 1024
            // ids), through GpuIndexFlat alone: the forced paths above run the same
            // kernels.
            const bool l2 = m == faiss::METRIC_L2;
            if (l2) {
                runCase(res, {2500, 2, 64, 2048, m, seed + 1});
            } else {
                runCase(res, {500, 5, 7, 10, m, seed + 2});
            }
            runCase(res, {70000, 1, 8, 100, m, seed + 3, !l2});
            runCase(res, {16384, 256, 8, 10, m, seed + 7, true});
            continue;
        }
        for (int k : {1, 10, 100, 1024, 2048}) {
            runCase(res, {5000, 37, 64, k, m, seed + k});
        }
        for (int d : {1, 3, 32, 96, 128, 256, 960, 2048}) {
            runCase(res, {3000, 100, d, 10, m, seed + d});
        }
        // Several base tiles and segments: nb above one segment.
        runCase(res, {70000, 5, 32, 1024, m, seed + 3});
        // A single query, across several selection segments.
        runCase(res, {20000, 1, 128, 100, m, seed + 5});
        // k above nb: -1 padding.
        runCase(res, {50, 7, 16, 100, m, seed + 4});
        // k at the maximum.
        runCase(res, {70000, 5, 32, 2048, m, seed + 6});
        // A batch and base the automatic choice sends down the threshold path, with
        // several base tiles of it.
        runCase(res, {40000, 300, 48, 10, m, seed + 7});
        // Large k: the threshold path re-ranks its group in slices (170 queries each at
        // k 1024).
        runCase(res, {8000, 400, 16, 1024, m, seed + 8});
        // Few queries against a base the automatic choice sends down the radix path
        // (the 70000-vector cases above with 5 queries go there too).
        runCase(res, {100000, 1, 128, 100, m, seed + 9});
        runCase(res, {66000, 8, 24, 10, m, seed + 10});
        runCase(res, {70000, 3, 8, 1, m, seed + 11});
    }
}

// The products on faiss_ext's plain kernel (GpuResourcesConfig::plainProducts, for
// compute-sanitizer runs) give FAISS CPU's results on every path and precision.
TEST(GpuIndexFlat, PlainProductsMatchCpu) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig config;
    config.plainProducts = true;
    GpuResources res(config);
    ASSERT_TRUE(res.plainProducts());
    const uint64_t seed = test::testSeed();
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        runCase(res, {20000, 64, 96, 100, m, seed});
        runCase(res, {3000, 9, 7, 10, m, seed + 1});
    }
}

TEST(GpuIndexFlat, MatchesCpuOnRandomShapes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(test::testSeed());
    const int dims[] = {32, 64, 96, 128, 256, 960};
    const int ks[] = {1, 10, 100, 1024, 2048};
    // Under compute-sanitizer two shapes, of a fifth of the vectors and a tenth of the
    // queries.
    for (int iter = 0; iter < test::shapeCount(12); ++iter) {
        FlatCase c;
        c.d = dims[rng() % 6];
        c.k = ks[rng() % 5];
        c.nb = 1 + int64_t(rng() % test::smallUnderSanitizer(20000, 4000));
        c.nq = 1 + int64_t(rng() % test::smallUnderSanitizer(300, 30));
        c.metric = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        c.seed = rng();
        runCase(res, c);
    }
}

// A budget that splits the base into several tiles: after the first, each segment's
// selection only offers values below the kept k-th (keepK-th on the rerank path) of the
// tiles before, on the warp path (k 10) and the block path (k 100, 1024). The paths that
// select over base tiles, and GpuIndexFlat's own choice (the threshold path's split
// products need more than this budget: planFlatThreshold gives no query group).
TEST(GpuIndexFlat, MatchesCpuOverManyBaseTiles) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(test::smallUnderSanitizer(32, 12)) << 20;
    GpuResources res(rc);
    const uint64_t seed = test::testSeed();
    const int64_t nb = test::smallUnderSanitizer(150000, 60000), nq = 37;
    const int d = 64;
    for (int k : {10, 100, 1024}) {
        FlatSearchInput in;
        in.nq = nq;
        in.nb = nb;
        in.d = d;
        in.precision = GpuFlatPrecision::kFloat32;
        ASSERT_LT(planFlatSearch(res, in, k, rc.tempMemoryBytes).baseTile, nb) << "k=" << k;
        for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
            runCase(res, {nb, nq, d, k, m, seed + uint64_t(k)},
                    {FlatSearchPath::kAuto, FlatSearchPath::kTiles, FlatSearchPath::kRerank});
        }
    }
}

TEST(GpuIndexFlat, TenThousandQueriesInSmallPages) {
    FAISS_EXT_REQUIRE_GPU();
    // A small page and temp budget force many query pages and tiles.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    GpuIndexFlatConfig cfg;
    cfg.pageBytes = size_t(1) << 20;
    const int d = 32, k = 10;
    const int64_t nb = 20000, nq = 10000;
    auto xb = datasets::uniform(nb, d, 11);
    auto xq = datasets::uniform(nq, d, 12);
    faiss::IndexFlatL2 cpu(d);
    cpu.add(nb, xb.data());
    GpuIndexFlat gpu(res, d, faiss::METRIC_L2, cfg);
    gpu.add(nb, xb.data());
    std::vector<float> refD(nq * k), D(nq * k);
    std::vector<int64_t> refI(nq * k), I(nq * k);
    cpu.search(nq, xq.data(), k, refD.data(), refI.data());
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-5f), 0);
}

TEST(GpuIndexFlat, KMeansAssignerMatchesCpuObjective) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32, nlist = 64;
    datasets::ClusteredSpec spec{20000, d, 64, 0.05f, test::testSeed()};
    auto x = datasets::clustered(spec);
    faiss::ClusteringParameters cp;
    cp.niter = 10;
    cp.seed = 5;
    faiss::Clustering cpuClus(d, nlist, cp), gpuClus(d, nlist, cp);
    faiss::IndexFlatL2 cpuAssign(d);
    GpuIndexFlat gpuAssign(res, d, faiss::METRIC_L2);
    cpuClus.train(spec.n, x.data(), cpuAssign);
    gpuClus.train(spec.n, x.data(), gpuAssign);
    ASSERT_EQ(gpuAssign.ntotal, nlist);
    float cpuObj = cpuClus.iteration_stats.back().obj;
    float gpuObj = gpuClus.iteration_stats.back().obj;
    EXPECT_NEAR(gpuObj, cpuObj, 1e-2 * cpuObj);
}

// Vectors packed so tightly around one point that one TF32 rounding (2^-11 relative,
// ~0.05 on products of ~100) cannot order them (their distances are ~0.1), beside a
// spread-out half. FP32 (kAuto) must order both like an exact double-precision
// reference; 3xTF32 the spread half (the tight half is where its truncating
// accumulation is documented to fall short), at the default budget and at one small
// enough to cut the search into several query and base tiles.
TEST(GpuIndexFlat, PrecisionsOnTightlyPackedAndSpreadVectors) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 64, k = 10;
    const int64_t half = 4000, nb = 2 * half, nq = 128;
    std::mt19937_64 rng(test::testSeed());
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> center(d);
    for (auto& c : center) {
        c = 10.f / std::sqrt(float(d)) * (unit(rng) < 0.5f ? -1.f : 1.f);
    }
    auto tight = [&] {
        std::vector<float> v(d);
        for (int j = 0; j < d; ++j) {
            v[j] = center[j] + 0.05f * (2.f * unit(rng) - 1.f);
        }
        return v;
    };
    auto spread = [&] {
        std::vector<float> v(d);
        for (int j = 0; j < d; ++j) {
            v[j] = 3.f * unit(rng);
        }
        return v;
    };
    std::vector<float> xb, xq;
    for (int64_t i = 0; i < nb; ++i) {
        auto v = i < half ? tight() : spread();
        xb.insert(xb.end(), v.begin(), v.end());
    }
    for (int64_t i = 0; i < nq; ++i) {
        auto v = i % 2 ? tight() : spread();
        xq.insert(xq.end(), v.begin(), v.end());
    }
    // Exact reference in double precision.
    std::vector<float> refD(nq * k);
    std::vector<int64_t> refI(nq * k);
    for (int64_t q = 0; q < nq; ++q) {
        std::vector<std::pair<double, int64_t>> all(nb);
        for (int64_t i = 0; i < nb; ++i) {
            double acc = 0;
            for (int j = 0; j < d; ++j) {
                const double t = double(xq[q * d + j]) - double(xb[i * d + j]);
                acc += t * t;
            }
            all[i] = {acc, i};
        }
        std::partial_sort(all.begin(), all.begin() + k, all.end());
        for (int j = 0; j < k; ++j) {
            refD[q * k + j] = float(all[j].first);
            refI[q * k + j] = all[j].second;
        }
    }

    auto rowsOf = [&](const std::vector<float>& v, int64_t first) {
        std::vector<float> out;
        for (int64_t q = first; q < nq; q += 2) {
            out.insert(out.end(), v.begin() + q * k, v.begin() + (q + 1) * k);
        }
        return out;
    };
    auto idsOf = [&](const std::vector<int64_t>& v, int64_t first) {
        std::vector<int64_t> out;
        for (int64_t q = first; q < nq; q += 2) {
            out.insert(out.end(), v.begin() + q * k, v.begin() + (q + 1) * k);
        }
        return out;
    };
    for (size_t budget : {size_t(256) << 20, size_t(16) << 20}) {
        GpuResourcesConfig rc;
        rc.tempMemoryBytes = budget;
        GpuResources small(rc);
        for (GpuFlatPrecision p : {GpuFlatPrecision::kAuto, GpuFlatPrecision::kTF32x3}) {
            SCOPED_TRACE(std::string(precisionName(p)) + " budget " + std::to_string(budget));
            GpuIndexFlatConfig cfg;
            cfg.precision = p;
            GpuIndexFlat gpu(small, d, faiss::METRIC_L2, cfg);
            gpu.add(nb, xb.data());
            std::vector<float> D(nq * k, 12345.f);
            std::vector<int64_t> I(nq * k, 777);
            gpu.search(nq, xq.data(), k, D.data(), I.data());
            // FP32 norms-formula distances carry ~1e-5 absolute error at these magnitudes.
            if (p == GpuFlatPrecision::kAuto) {
                EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-4f), 0);
            } else { // the spread queries: the even rows
                EXPECT_EQ(
                        compareKnn(
                                rowsOf(refD, 0), idsOf(refI, 0), rowsOf(D, 0), idsOf(I, 0), nq / 2,
                                k, 1e-4f, 1e-4f),
                        0);
            }
        }
    }
    // The threshold path re-ranks its candidates in FP32: both halves exact, whatever
    // its main pass runs (kAuto: bf16x3).
    for (GpuFlatPrecision p :
         {GpuFlatPrecision::kAuto, GpuFlatPrecision::kFloat32, GpuFlatPrecision::kTF32x3}) {
        SCOPED_TRACE(std::string("threshold path, ") + precisionName(p));
        std::vector<float> D;
        std::vector<int64_t> I;
        searchPath(res, xb, xq, d, k, faiss::METRIC_L2, FlatSearchPath::kThreshold, p, D, I);
        EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-4f), 0);
    }
}

// Spread data at large d and k: the rerank path's margin holds for every query, so each
// answer is the band re-ranked in FP32 (not the fallback), and equals FAISS CPU's. Under
// compute-sanitizer 3000 vectors (more than the 2048 kept at k 1024; the gap between the
// k-th and the last kept distance only widens with fewer) and 16 queries.
TEST(GpuFlatSearch, RerankPathProvesEveryQueryOnSpreadData) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 768;
    const int64_t nb = test::smallUnderSanitizer(30000, 3000),
                  nq = test::smallUnderSanitizer(300, 16);
    auto xb = datasets::uniform(nb, d, test::testSeed());
    auto xq = datasets::uniform(nq, d, test::testSeed() + 1);
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        faiss::IndexFlat cpu(d, m);
        cpu.add(nb, xb.data());
        for (int k : {256, 1024}) {
            SCOPED_TRACE(testing::Message() << (m == faiss::METRIC_L2 ? "L2" : "IP") << " k=" << k);
            std::vector<float> refD(nq * k);
            std::vector<int64_t> refI(nq * k);
            cpu.search(nq, xq.data(), k, refD.data(), refI.data());
            std::vector<float> D;
            std::vector<int64_t> I;
            EXPECT_EQ(test::searchRerank(res, xb, xq, d, k, m, GpuFlatPrecision::kAuto, D, I), 0);
            EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-5f), 0);
        }
    }
}

TEST(GpuFlatSearch, RadixPathRefusesSplitProductsAndSmallBudgets) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 10;
    const int64_t nb = 1000, nq = 2;
    auto xb = datasets::uniform(nb, d, 1);
    auto xq = datasets::uniform(nq, d, 2);
    std::vector<float> D;
    std::vector<int64_t> I;
    EXPECT_THROW(
            searchPath(
                    res, xb, xq, d, k, faiss::METRIC_L2, FlatSearchPath::kRadix,
                    GpuFlatPrecision::kTF32x3, D, I),
            faiss::FaissException);
    // Two rows of 2.2M distances need more than the 16 MiB budget.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources small(rc);
    const int64_t longRow = 2200000;
    auto xbLong = datasets::uniform(longRow, 1, 3);
    auto xqLong = datasets::uniform(nq, 1, 4);
    EXPECT_THROW(
            searchPath(
                    small, xbLong, xqLong, 1, k, faiss::METRIC_L2, FlatSearchPath::kRadix,
                    GpuFlatPrecision::kFloat32, D, I),
            faiss::FaissException);
}

// A quarter of the base is one vector repeated: the queries next to it see thousands of
// ties at their k-th distance, more than the threshold path lists or the rerank path's
// margin holds, and are re-searched by the tiles path; the others are not. Both must
// match FAISS CPU.
TEST(GpuFlatSearch, ThresholdAndRerankPathsReSearchQueriesWithTooManyTies) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32, k = 10;
    const int64_t nb = 40000, nq = 300;
    auto xb = datasets::uniform(nb, d, test::testSeed());
    auto xq = datasets::uniform(nq, d, test::testSeed() + 1);
    for (int64_t i = 0; i < nb; i += 4) {
        std::copy(xb.begin() + 1 * d, xb.begin() + 2 * d, xb.begin() + i * d);
    }
    for (int64_t q = 0; q < nq; q += 2) {
        for (int j = 0; j < d; ++j) {
            xq[q * d + j] = xb[size_t(d) + j] + 1e-3f * xq[q * d + j];
        }
    }
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        faiss::IndexFlat cpu(d, m);
        cpu.add(nb, xb.data());
        std::vector<float> refD(nq * k);
        std::vector<int64_t> refI(nq * k);
        cpu.search(nq, xq.data(), k, refD.data(), refI.data());
        for (GpuFlatPrecision p :
             {GpuFlatPrecision::kAuto, GpuFlatPrecision::kFloat32, GpuFlatPrecision::kTF32x3}) {
            SCOPED_TRACE(std::string(m == faiss::METRIC_L2 ? "L2 " : "IP ") + precisionName(p));
            std::vector<float> D;
            std::vector<int64_t> I;
            searchPath(res, xb, xq, d, k, m, FlatSearchPath::kThreshold, p, D, I);
            EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-5f), 0);
            // The rerank path proves the spread half (odd rows), all but a few: seed
            // 1893289325 re-searched 151 of 300, results equal to FAISS CPU (likely a
            // spread query whose k-th distance lies within the band of the repeated
            // vector's, so that its 10000 copies overflow the kept candidates). Under L2
            // it searches the tied half again (under inner product the copies' products
            // are not the largest, so their ties fall outside the k best).
            const int64_t again = test::searchRerank(res, xb, xq, d, k, m, p, D, I);
            EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-5f), 0);
            EXPECT_GE(again, m == faiss::METRIC_L2 ? 1 : 0);
            EXPECT_LE(again, nq / 2 + nq / 20);
        }
    }
}
