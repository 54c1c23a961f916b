// Argument checks and tiling plans: host-only logic, run on every machine.
#include <cmath>
#include <limits>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/ArgChecks.h>
#include <faiss_ext/impl/FlatRadixSearch.h>
#include <faiss_ext/impl/FlatRerankSearch.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatThresholdSearch.h>
#include <faiss_ext/utils/MathUtils.h>

using namespace faiss_ext;

TEST(ArgChecks, SearchArgs) {
    float x[4] = {}, D[4] = {};
    int64_t I[4] = {};
    EXPECT_NO_THROW(checkSearchArgs(1, x, 1, D, I));
    EXPECT_NO_THROW(checkSearchArgs(1, x, kMaxSearchK, D, I));
    EXPECT_THROW(checkSearchArgs(0, x, 1, D, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(-3, x, 1, D, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(1, x, 0, D, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(1, x, kMaxSearchK + 1, D, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(1, nullptr, 1, D, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(1, x, 1, nullptr, I), faiss::FaissException);
    EXPECT_THROW(checkSearchArgs(1, x, 1, D, nullptr), faiss::FaissException);
}

TEST(ArgChecks, KLimitIsNamedInMessage) {
    float x[1] = {}, D[1] = {};
    int64_t I[1] = {};
    try {
        checkSearchArgs(1, x, 5000, D, I);
        FAIL() << "k=5000 accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("2048"), std::string::npos) << e.what();
    }
}

TEST(ArgChecks, VectorsArg) {
    float x[2] = {};
    EXPECT_NO_THROW(checkVectorsArg(1, x, "add"));
    EXPECT_THROW(checkVectorsArg(0, x, "add"), faiss::FaissException);
    EXPECT_THROW(checkVectorsArg(1, nullptr, "add"), faiss::FaissException);
}

TEST(ArgChecks, FiniteNamesFirstBadRow) {
    const int d = 8;
    std::vector<float> x(100 * d, 1.f);
    EXPECT_NO_THROW(checkFinite(100, d, x.data(), "add"));
    x[57 * d + 3] = std::nanf("");
    x[90 * d] = std::numeric_limits<float>::infinity();
    try {
        checkFinite(100, d, x.data(), "add");
        FAIL() << "NaN accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("vector 57"), std::string::npos) << e.what();
    }
}

TEST(ArgChecks, FiniteNamesFirstBadRowAcrossChunks) {
    // Above 2^20 components the rows are checked in chunks on several threads.
    const int d = 128;
    const int64_t n = 20000;
    std::vector<float> x(size_t(n) * d, 1.f);
    EXPECT_NO_THROW(checkFinite(n, d, x.data(), "add"));
    for (int64_t bad : {n - 1, int64_t(15003), int64_t(700)}) {
        x[size_t(bad) * d + 5] = std::nanf("");
        try {
            checkFinite(n, d, x.data(), "add");
            FAIL() << "NaN at row " << bad << " accepted";
        } catch (const faiss::FaissException& e) {
            const std::string want = "vector " + std::to_string(bad) + " ";
            EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
        }
    }
}

TEST(FlatTiling, FitsBudgetForHugeSearches) {
    const size_t budget = size_t(1) << 30;
    for (int k : {1, 10, 100, 1024, 2048}) {
        for (int64_t nq : {int64_t(1), int64_t(16), int64_t(10000)}) {
            for (int64_t nb : {int64_t(1), int64_t(5000), int64_t(100000000)}) {
                FlatTiling t = planFlatTiling(nq, nb, k, budget, 528);
                SCOPED_TRACE(testing::Message() << "k=" << k << " nq=" << nq << " nb=" << nb);
                EXPECT_LE(t.bytes, budget);
                EXPECT_GE(t.queryTile, 1);
                EXPECT_LE(t.queryTile, nq);
                EXPECT_GE(t.baseTile, 1);
                EXPECT_LE(t.baseTile, nb);
                EXPECT_GE(t.segLen, 4 * k);
                // Enough selection blocks to fill the device when the shape allows.
                const int64_t blocks = t.queryTile * ((t.baseTile + t.segLen - 1) / t.segLen);
                EXPECT_TRUE(blocks >= 528 || t.segLen == std::max(4096, 4 * k)) << blocks;
            }
        }
    }
}

TEST(FlatTiling, HoldsTheKeptCandidatesOfTheRerankPath) {
    const size_t budget = size_t(1) << 30;
    for (int k : {256, 1024}) {
        const int keepK = 2 * k;
        // 500K x 768 in bf16x3: 4608 split bytes a base column.
        FlatTiling t = planFlatTiling(10000, 500000, k, budget, 528, 4096, 4608, keepK);
        SCOPED_TRACE(k);
        const int64_t segs = (t.baseTile + t.segLen - 1) / t.segLen;
        EXPECT_GE(t.candLd, keepK + segs * k);
        EXPECT_GE(t.candLd, 2 * keepK);
        EXPECT_LE(t.bytes, budget);
        // Segments reduce to k, not keepK: the same segment length as the tiles path's.
        EXPECT_EQ(t.segLen, planFlatTiling(10000, 500000, k, budget, 528, 4096, 4608).segLen);
    }
    // Without keepK, the slots are the running k and k a segment.
    FlatTiling t = planFlatTiling(10000, 1000000, 100, budget, 528);
    EXPECT_EQ(t.candLd, 100 * (1 + (t.baseTile + t.segLen - 1) / t.segLen));
}

TEST(FlatTiling, PrefersWideBaseTilesOverTallQueryTiles) {
    // 1 GiB: 4096 queries would leave 32768 columns; 1024 queries get 131072.
    FlatTiling t = planFlatTiling(10000, 1000000, 100, size_t(1) << 30, 528);
    EXPECT_EQ(t.queryTile, 1024);
    EXPECT_EQ(t.baseTile, 131072);
    // A base that fits whole keeps the tallest query tile.
    t = planFlatTiling(10000, 20000, 100, size_t(1) << 30, 528);
    EXPECT_EQ(t.queryTile, 4096);
    EXPECT_EQ(t.baseTile, 20000);
    // A short base (the coarse search over 4096 centroids) takes a whole batch of 10000.
    t = planFlatTiling(10000, 4096, 4, size_t(1) << 30, 4224);
    EXPECT_EQ(t.queryTile, 10000);
    EXPECT_EQ(t.baseTile, 4096);
    // A budget too small for a wide tile at 1024 queries stops halving there.
    t = planFlatTiling(10000, 1000000, 10, size_t(64) << 20, 528);
    EXPECT_EQ(t.queryTile, 1024);
    EXPECT_LT(t.baseTile, 131072);
}

TEST(FlatThresholdPlan, FitsHalfTheBudgetAndSizesTheSampleByK) {
    for (size_t budget : {size_t(16) << 20, size_t(1) << 30}) {
        for (int k : {1, 10, 100, 1024, 2048}) {
            for (int64_t nq : {int64_t(1), int64_t(300), int64_t(10000)}) {
                for (int64_t nb : {int64_t(1), int64_t(5000), int64_t(100000000)}) {
                    for (int d : {1, 128, 2048}) {
                        for (kernels::GemmProduct product :
                             {kernels::GemmProduct::kFloat32, kernels::GemmProduct::kTF32x3,
                              kernels::GemmProduct::kBF16x3}) {
                            SCOPED_TRACE(
                                    testing::Message()
                                    << "budget=" << budget << " k=" << k << " nq=" << nq
                                    << " nb=" << nb << " d=" << d << " product=" << int(product));
                            const FlatThresholdPlan p =
                                    planFlatThreshold(nq, nb, d, k, product, budget);
                            if (p.queryGroup == 0) {
                                // Only a large base's sample or a small budget.
                                EXPECT_TRUE(
                                        nb == 100000000 || budget < (size_t(1) << 30) || k >= 1024);
                                continue;
                            }
                            EXPECT_LE(p.bytes, budget / 2);
                            // Each listed slot of the group: a 4-byte id and its key.
                            EXPECT_GE(p.bytes, size_t(p.queryGroup) * p.capacity * 8);
                            EXPECT_GE(p.capacity, std::max<int64_t>(1024, std::min(32 * k, 32768)));
                            EXPECT_GE(p.sampleRows, std::min<int64_t>(nb, k));
                            EXPECT_LE(p.sampleRows * p.sampleStride, nb);
                            EXPECT_GE(p.sampleStride, 1);
                            EXPECT_GE(p.queryGroup, 1);
                            EXPECT_LE(p.queryGroup, nq);
                            // Groups of equal size: the last one at most `groups` short.
                            const int64_t groups = divUp(nq, p.queryGroup);
                            EXPECT_GE(nq - (groups - 1) * p.queryGroup, p.queryGroup - groups);
                            EXPECT_LE(p.queryTile, p.queryGroup);
                            EXPECT_GE(p.rerankRows, 1);
                            EXPECT_LE(p.rerankRows, p.queryGroup);
                            EXPECT_LE(p.baseTile, nb);
                        }
                    }
                }
            }
        }
    }
}

TEST(FlatThresholdPlan, FewGroupsAtLargeK) {
    // 1M x 128 at k 1024 (bf16x3, 1 GiB): 8-byte listed slots of 32768 ids a query leave
    // room for ~900 queries; halving the batch gave 16 groups of 625.
    const FlatThresholdPlan p = planFlatThreshold(
            10000, 1000000, 128, 1024, kernels::GemmProduct::kBF16x3, size_t(1) << 30);
    EXPECT_LE(divUp<int64_t>(10000, p.queryGroup), 12);
    // 500K x 768 at k 1024: 32 groups of 313 by halving.
    const FlatThresholdPlan q = planFlatThreshold(
            10000, 500000, 768, 1024, kernels::GemmProduct::kBF16x3, size_t(1) << 30);
    EXPECT_LE(divUp<int64_t>(10000, q.queryGroup), 28);
}

TEST(FlatThresholdPlan, AutomaticChoiceNeedsABatchAndABase) {
    FlatSearchInput in;
    in.nq = 10000;
    in.nb = 1000000;
    in.d = 128;
    const size_t budget = size_t(1) << 30;
    EXPECT_TRUE(flatThresholdPathFits(in, 10, budget, 9));
    EXPECT_TRUE(flatThresholdPathFits(in, 1024, budget, 9));
    in.nq = 16;
    EXPECT_FALSE(flatThresholdPathFits(in, 10, budget, 9)); // bandwidth-bound: the tiles path
    in.nq = 10000;
    in.nb = 10000;
    EXPECT_FALSE(flatThresholdPathFits(in, 10, budget, 9)); // the sample: most of the base
    in.nb = 10000000;
    EXPECT_TRUE(flatThresholdPathFits(in, 10, budget, 9));
    EXPECT_FALSE(flatThresholdPathFits(in, 100, budget, 9)); // its sample's copy: > budget / 2
    in.nb = 1000000;
    const uint32_t words[1] = {1};
    in.allow = words; // filtered search too
    EXPECT_TRUE(flatThresholdPathFits(in, 10, budget, 9));
}

TEST(FlatRadixPath, AutomaticChoiceNeedsFewQueriesALargeBaseAndFp32) {
    FlatSearchInput in;
    in.nq = 1;
    in.nb = 1000000;
    in.d = 128;
    const size_t budget = size_t(1) << 30;
    for (int k : {1, 10, 100, 1024, 2048}) {
        EXPECT_TRUE(flatRadixPathFits(in, k, budget, 9)) << k;
    }
    EXPECT_FALSE(flatRadixPathFits(in, 2049, budget, 9));
    in.nq = kRadixMaxQueries;
    EXPECT_TRUE(flatRadixPathFits(in, kRadixMinKForBatches, budget, 9));
    EXPECT_FALSE(flatRadixPathFits(in, kRadixMinKForBatches - 1, budget, 9)); // warp rows
    in.nq = 1;
    EXPECT_TRUE(flatRadixPathFits(in, 1, budget, 9));
    in.nq = kRadixMaxQueries + 1; // a batch: the tiles or threshold path
    EXPECT_FALSE(flatRadixPathFits(in, 10, budget, 9));
    in.nq = 1;
    in.nb = kRadixMinBase - 1; // a short row: the tiles path's blocks cover it
    EXPECT_FALSE(flatRadixPathFits(in, 10, budget, 9));
    in.nb = 1000000;
    in.precision = GpuFlatPrecision::kTF32x3; // the rows are FP32 products only
    EXPECT_FALSE(flatRadixPathFits(in, 10, budget, 9));
    in.precision = GpuFlatPrecision::kFloat32;
    EXPECT_TRUE(flatRadixPathFits(in, 10, budget, 9));
    // The rows must fit the budget: 8 x 100M distances do not fit 1 GiB.
    in.nq = 8;
    in.nb = 100000000;
    EXPECT_GT(flatRadixBytes(in.nq, in.nb, 10), budget);
    EXPECT_FALSE(flatRadixPathFits(in, 10, budget, 9));
    EXPECT_GE(flatRadixBytes(2, 1000, 10), size_t(2) * 1000 * sizeof(float));
    const uint32_t words[1] = {1};
    in.nb = 1000000;
    in.allow = words; // filtered search too
    EXPECT_TRUE(flatRadixPathFits(in, 10, budget, 9));
}

// One query with a copy kept (float16 or int8), precision kAuto, d up to the fused
// product's limit (8192 floats of query in shared memory), and the FP32 radix path's
// base and budget bounds; else the FP32 paths.
TEST(FlatRadixPath, CopyTakesOneQueryAtAutomaticPrecision) {
    for (kernels::CopyCode code : {kernels::CopyCode::kFloat16, kernels::CopyCode::kInt8}) {
        FlatSearchInput in;
        in.nq = 1;
        in.nb = 1000000;
        in.d = 768;
        const size_t budget = size_t(1) << 30;
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget)); // no copy
        // Device addresses are not read here; 16-byte aligned ones stand in.
        in.copy.code = code;
        in.copy.rows = reinterpret_cast<const void*>(uintptr_t(1) << 20);
        in.copy.scales = reinterpret_cast<const float*>(uintptr_t(2) << 20);
        for (int k : {1, 10, 100, 1024, 2048}) {
            EXPECT_TRUE(flatRadixCopyPathFits(in, k, budget)) << k;
        }
        EXPECT_FALSE(flatRadixCopyPathFits(in, 2049, budget));
        in.nq = 2; // a batch reads the FP32 base
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget));
        in.nq = 1;
        in.precision = GpuFlatPrecision::kFloat32;
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget));
        in.precision = GpuFlatPrecision::kAuto;
        for (int d : {1, 3, 130, 8192}) {
            in.d = d;
            EXPECT_TRUE(flatRadixCopyPathFits(in, 10, budget)) << d;
        }
        in.d = 8193; // the query no longer fits shared memory: the FP32 radix path's GEMM
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget));
        EXPECT_TRUE(flatRadixPathFits(in, 10, budget, 9));
        in.d = 128;
        in.nb = kRadixMinBase - 1;
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget));
        in.nb = 300000000; // 1.2 GB of keys over a 1 GiB budget
        EXPECT_FALSE(flatRadixCopyPathFits(in, 10, budget));
    }
}

TEST(FlatSearchPrecision, ThresholdAndRerankPathsRunBf16x3UnlessAProductIsForced) {
    using kernels::GemmProduct;
    for (int cc : {7, 8, 9}) {
        SCOPED_TRACE(cc);
        // bf16 tensor cores from compute capability 8.0; 3xTF32 before.
        for (FlatSearchPath path : {FlatSearchPath::kThreshold, FlatSearchPath::kRerank}) {
            EXPECT_EQ(
                    flatGemmProduct(GpuFlatPrecision::kAuto, path, cc),
                    cc >= 8 ? GemmProduct::kBF16x3 : GemmProduct::kTF32x3);
            EXPECT_EQ(flatGemmProduct(GpuFlatPrecision::kFloat32, path, cc), GemmProduct::kFloat32);
            EXPECT_EQ(flatGemmProduct(GpuFlatPrecision::kTF32x3, path, cc), GemmProduct::kTF32x3);
        }
        EXPECT_EQ(
                flatGemmProduct(GpuFlatPrecision::kAuto, FlatSearchPath::kTiles, cc),
                GemmProduct::kFloat32);
        EXPECT_EQ(
                flatGemmProduct(GpuFlatPrecision::kTF32x3, FlatSearchPath::kTiles, cc),
                GemmProduct::kTF32x3);
        EXPECT_EQ(
                flatGemmProduct(GpuFlatPrecision::kAuto, FlatSearchPath::kRadix, cc),
                GemmProduct::kFloat32);
        EXPECT_EQ(
                flatGemmProduct(GpuFlatPrecision::kTF32x3, FlatSearchPath::kRadix, cc),
                GemmProduct::kTF32x3);
        EXPECT_THROW(
                flatGemmProduct(GpuFlatPrecision::kAuto, FlatSearchPath::kAuto, cc),
                faiss::FaissException);
    }
}

TEST(FlatSearchPath, RerankPathTakesLargeBatchesAtLargeDAndKOnTensorCores) {
    FlatSearchInput in;
    in.nq = 10000;
    in.nb = 500000;
    in.d = 768;
    EXPECT_TRUE(flatRerankPathFits(in, 1024, 9));
    EXPECT_FALSE(flatRerankPathFits(in, 1024, 7)); // no bf16 tensor cores
    EXPECT_FALSE(flatRerankPathFits(in, 10, 9));   // small k: the other paths
    EXPECT_FALSE(flatRerankPathFits(in, 2048, 9)); // no room for a margin
    EXPECT_FALSE(flatRerankPathFits(in, 1700, 9)); // not for the whole margin
    in.precision = GpuFlatPrecision::kTF32x3;      // an explicit product stays the result
    EXPECT_FALSE(flatRerankPathFits(in, 1024, 9));
    in.precision = GpuFlatPrecision::kAuto;
    in.d = 128;
    EXPECT_FALSE(flatRerankPathFits(in, 1024, 9));
    in.d = 768;
    in.nq = 16;
    EXPECT_FALSE(flatRerankPathFits(in, 1024, 9));
    in.nq = 10000;
    in.nb = flatRerankKeep(1024);
    EXPECT_FALSE(flatRerankPathFits(in, 1024, 9));
    EXPECT_EQ(flatRerankKeep(1024), 2048);
    EXPECT_EQ(flatRerankKeep(256), 512);
    EXPECT_EQ(flatRerankKeep(10), 128);
    EXPECT_EQ(flatRerankKeep(2000), 2048);
}

TEST(FlatSearchPrecision, SplitRowsHalveTheirBytesInBf16) {
    using kernels::GemmProduct;
    EXPECT_EQ(kernels::splitRowBytes(GemmProduct::kFloat32, 128), 0u);
    EXPECT_EQ(kernels::splitRowBytes(GemmProduct::kTF32, 128), 0u);
    EXPECT_EQ(kernels::splitRowBytes(GemmProduct::kTF32x3, 128), 3u * 128 * 4);
    EXPECT_EQ(kernels::splitRowBytes(GemmProduct::kBF16x3, 128), 3u * 128 * 2);
}

TEST(FlatTiling, SmallBudgetStillPlansOneQuery) {
    FlatTiling t = planFlatTiling(10000, 1000000, 2048, size_t(16) << 20, 528);
    EXPECT_LE(t.bytes, size_t(16) << 20);
    EXPECT_GE(t.queryTile, 1);
    EXPECT_THROW(planFlatTiling(10, 10, 2048, 1024, 528), faiss::FaissException);
}

TEST(GpuResources, ClearErrorWithoutDevice) {
    if (GpuResources::deviceCount() > 0) {
        GpuResources res;
        EXPECT_GT(res.multiProcessorCount(), 0);
        EXPECT_GE(res.maxSharedMemoryPerBlock(), size_t(48) * 1024);
        GpuResourcesConfig bad;
        bad.device = GpuResources::deviceCount();
        EXPECT_THROW(GpuResources{bad}, faiss::FaissException);
    } else {
        try {
            GpuResources res;
            FAIL() << "GpuResources built without a device";
        } catch (const faiss::FaissException& e) {
            EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
        }
    }
}
