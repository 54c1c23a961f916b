// IVF search planning (chunking, memory, the merge path): host-only arithmetic.
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include <faiss_ext/impl/IvfSearch.h>
#include <kernels/IvfCoarseFused.h>
#include <kernels/IvfMerge.h>
#include <kernels/IvfScan.h>
#include <kernels/Select.h>

#include "TestUtil.h"

using namespace faiss_ext;

namespace {

constexpr size_t kH100Smem = 227 * 1024;

/// The plan reads the lengths in descending order: sorts them so in place.
IvfPlanInput input(std::vector<int64_t>& lengths, int64_t nq, int nprobe, int k) {
    std::sort(lengths.begin(), lengths.end(), std::greater<int64_t>());
    IvfPlanInput in;
    in.nq = nq;
    in.nprobe = nprobe;
    in.k = k;
    in.d = 128;
    in.listLengthsDescending = &lengths;
    in.budgetBytes = size_t(1) << 30;
    in.maxSmemPerBlock = kH100Smem;
    in.smCount = 132;
    return in;
}

void expectValid(const IvfPlanInput& in, const IvfSearchPlan& p) {
    EXPECT_GE(p.chunkLen, 32);
    EXPECT_EQ(p.chunkLen % 32, 0);
    EXPECT_GE(p.chunksPerQuery, 1);
    EXPECT_EQ(p.candidatesPerQuery, p.chunksPerQuery * in.k);
    EXPECT_GE(p.queryTile, 1);
    EXPECT_LE(p.queryTile, in.nq);
    EXPECT_LE(p.queryTile, 65535);
    EXPECT_LE(p.bytes, in.budgetBytes);
    // The scan's grid is sized by it: at least a slot a query.
    EXPECT_GE(p.expectedSlotsPerQuery, 1.0);
    // The slots cover the worst query: the nprobe lists with the most chunks, or on the
    // list-major path the windows of the longest row (the nprobe longest lists).
    std::vector<int64_t> chunks;
    int64_t row = 0;
    for (int64_t len : *in.listLengthsDescending) {
        chunks.push_back((len + p.chunkLen - 1) / p.chunkLen);
    }
    for (int i = 0; i < in.nprobe; ++i) {
        row += (*in.listLengthsDescending)[size_t(i)];
    }
    std::sort(chunks.rbegin(), chunks.rend());
    int64_t worst = 0;
    for (int i = 0; i < in.nprobe; ++i) {
        worst += chunks[i];
    }
    if (p.listMajor) {
        EXPECT_EQ(p.maxRowVectors, row);
        EXPECT_GE(p.chunksPerQuery * p.chunkLen, row);
    } else {
        EXPECT_GE(p.chunksPerQuery, worst);
    }
    EXPECT_EQ(p.fastMergeSmemBytes, kernels::ivfMergeFastSmemBytes(p.candidatesPerQuery));
}

} // namespace

TEST(IvfPlan, FastPathChosenForFewCandidatesThatFit) {
    std::vector<int64_t> lengths(1024, 1000);
    // The per-query scan (a slot per list of 1000 vectors here).
    auto input = [](std::vector<int64_t>& l, int64_t nq, int nprobe, int k) {
        IvfPlanInput in = ::input(l, nq, nprobe, k);
        in.scanPath = IvfScanPath::kPerQuery;
        return in;
    };
    // k=10, nprobe=64: 640 candidates -> 1024 x 8 bytes, fits, but k <= 32 merges a warp
    // a query (heap); k=64, nprobe=8: 512 candidates, fast.
    IvfSearchPlan p = planIvfSearch(input(lengths, 10000, 64, 10));
    EXPECT_FALSE(p.fastMerge);
    EXPECT_EQ(p.fastMergeSmemBytes, size_t(1024) * 8);
    p = planIvfSearch(input(lengths, 10000, 8, 64));
    EXPECT_TRUE(p.fastMerge);
    EXPECT_EQ(p.fastMergeSmemBytes, size_t(512) * 8);
    // k=100, nprobe=64: 6400 -> 8192 x 8 = 64 KiB fits the device's opt-in limit, but
    // the heap merge is faster for that many candidates.
    p = planIvfSearch(input(lengths, 10000, 64, 100));
    EXPECT_FALSE(p.fastMerge);
    EXPECT_EQ(p.fastMergeSmemBytes, size_t(8192) * 8);
    // k=100, nprobe=10: 1000 candidates, fast; on a device whose shared memory per block
    // cannot hold them, heap.
    EXPECT_TRUE(planIvfSearch(input(lengths, 10000, 10, 100)).fastMerge);
    IvfPlanInput small = input(lengths, 10000, 10, 100);
    small.maxSmemPerBlock = 4 * 1024;
    EXPECT_FALSE(planIvfSearch(small).fastMerge);
    // k=2048, nprobe=2048 cannot fit any device.
    std::vector<int64_t> many(4096, 100);
    p = planIvfSearch(input(many, 10, 2048, 2048));
    EXPECT_FALSE(p.fastMerge);
    EXPECT_GT(p.fastMergeSmemBytes, kH100Smem);
}

TEST(IvfPlan, ForcedPaths) {
    std::vector<int64_t> lengths(1024, 1000);
    IvfPlanInput in = input(lengths, 100, 8, 10);
    in.mergePath = IvfMergePath::kHeap;
    EXPECT_FALSE(planIvfSearch(in).fastMerge);
    in.mergePath = IvfMergePath::kFast;
    EXPECT_TRUE(planIvfSearch(in).fastMerge);
    in.k = 2048;
    in.nprobe = 1024;
    try {
        planIvfSearch(in);
        FAIL() << "forced fast path accepted without the shared memory";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("fast merge path needs"), std::string::npos)
                << e.what();
    }
}

TEST(IvfPlan, ForcedQueryScanKernel) {
    using kernels::IvfQueryScanKernel;
    std::vector<int64_t> lengths(1024, 1000);
    IvfPlanInput in = input(lengths, 100, 8, 32);
    EXPECT_EQ(planIvfSearch(in).queryKernel, IvfQueryScanKernel::kAuto);
    for (IvfQueryScanKernel kernel : {IvfQueryScanKernel::kBlock, IvfQueryScanKernel::kWarp}) {
        in.queryKernel = kernel;
        EXPECT_EQ(planIvfSearch(in).queryKernel, kernel);
    }
    // The warp kernel selects in registers (k <= 32) with its warps' queries in shared
    // memory.
    in.k = 33;
    EXPECT_THROW(planIvfSearch(in), faiss::FaissException);
    in.k = 32;
    in.d = 8000;
    EXPECT_THROW(planIvfSearch(in), faiss::FaissException);
    in.queryKernel = IvfQueryScanKernel::kBlock;
    in.k = 2048;
    EXPECT_EQ(planIvfSearch(in).queryKernel, IvfQueryScanKernel::kBlock);
}

// The per-query scan's kernel (kernels::ivfQueryScanKernel): warps for k <= 32, enough
// probes, chunks a warp finishes and queries that fit 48 KiB; blocks otherwise; a forced
// kernel as forced, the warp kernel only where it can select k.
TEST(IvfPlan, QueryScanKernelRule) {
    using kernels::IvfQueryScanKernel;
    kernels::IvfScanArgs a;
    a.nq = 1024;
    a.nprobe = 1;
    a.k = 10;
    a.d = 128;
    a.chunkLen = 256;
    auto kernel = [&]() { return kernels::ivfQueryScanKernel(a); };
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.k = 32;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.k = 33;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kBlock);
    a.k = 1;
    a.nq = kernels::kQueryWarpScanMinProbes / 2 - 1;
    a.nprobe = 2;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kBlock);
    a.nq = kernels::kQueryWarpScanMinProbes / 2;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.chunkLen = kernels::kQueryWarpScanMaxChunk + 32;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kBlock);
    a.chunkLen = kernels::kQueryWarpScanMaxChunk;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    // 8 warps' queries of 1536 floats are 48 KiB.
    a.d = 1536;
    EXPECT_EQ(kernels::ivfQueryWarpScanSmemBytes(a.d), size_t(48 * 1024));
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.d = 1537;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kBlock);

    a.queryKernel = IvfQueryScanKernel::kWarp;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.nq = 1;
    a.nprobe = 1;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kWarp);
    a.queryKernel = IvfQueryScanKernel::kBlock;
    a.nq = 1024;
    a.d = 128;
    a.chunkLen = 256;
    EXPECT_EQ(kernel(), IvfQueryScanKernel::kBlock);
    a.queryKernel = IvfQueryScanKernel::kWarp;
    a.k = 33;
    EXPECT_THROW(kernel(), faiss::FaissException);
}

// The fused coarse search's hook: carried as forced, refused by the plan for an nprobe
// or d it cannot serve; its candidates counted in the temporaries wherever it may run.
TEST(IvfPlan, ForcedCoarsePath) {
    std::vector<int64_t> lengths(4096, 250);
    IvfPlanInput in = input(lengths, 1024, 4, 10);
    const IvfSearchPlan automatic = planIvfSearch(in);
    EXPECT_EQ(automatic.coarsePath, IvfCoarsePath::kAuto);
    in.coarsePath = IvfCoarsePath::kGemm;
    const IvfSearchPlan gemm = planIvfSearch(in);
    EXPECT_EQ(gemm.coarsePath, IvfCoarsePath::kGemm);
    in.coarsePath = IvfCoarsePath::kFused;
    const IvfSearchPlan fused = planIvfSearch(in);
    EXPECT_EQ(fused.coarsePath, IvfCoarsePath::kFused);
    // 16 segments of 256 centroids, 4 candidates each (a key and an id), and a norm.
    const size_t candidates = 16 * 4 * (sizeof(float) + sizeof(int64_t)) + sizeof(float);
    EXPECT_EQ(ivfCoarseFusedBytesPerQuery(4096, 4), candidates);
    EXPECT_EQ(
            ivfCoarseFusedBytesPerQuery(1000, 4),
            4 * 4 * (sizeof(float) + sizeof(int64_t)) + sizeof(float)); // 4 segments
    EXPECT_EQ(fused.bytesPerQuery, gemm.bytesPerQuery + candidates);
    EXPECT_EQ(automatic.bytesPerQuery, fused.bytesPerQuery);
    // Above 8 lists a query kAuto no longer counts them, and kFused is refused.
    in.nprobe = 9;
    EXPECT_THROW(planIvfSearch(in), faiss::FaissException);
    in.coarsePath = IvfCoarsePath::kAuto;
    const IvfSearchPlan nine = planIvfSearch(in);
    in.coarsePath = IvfCoarsePath::kGemm;
    EXPECT_EQ(nine.bytesPerQuery, planIvfSearch(in).bytesPerQuery);
    // d: up to 256 within the device's shared memory.
    in.coarsePath = IvfCoarsePath::kFused;
    in.nprobe = 8;
    in.d = kernels::kCoarseFusedMaxDim;
    EXPECT_EQ(planIvfSearch(in).coarsePath, IvfCoarsePath::kFused);
    in.maxSmemPerBlock = kernels::coarseFusedSmemBytes(in.d) - 1;
    EXPECT_THROW(planIvfSearch(in), faiss::FaissException);
    in.maxSmemPerBlock = kH100Smem;
    in.d = kernels::kCoarseFusedMaxDim + 1;
    EXPECT_THROW(planIvfSearch(in), faiss::FaissException);
}

// Shared memory of a fused coarse block: two buffers of 32 centroids' fragments (8
// bytes a component, d padded to 8), 64 queries in rows padded to 8 plus 4 floats, and
// two buffers of 32 norms: 97 KB at d 128 (two blocks an H100 SM), within the A100's
// 163 KB up to d 208. The fragments: whole chunks of 32 centroids.
TEST(IvfPlan, CoarseFusedSharedMemory) {
    EXPECT_EQ(kernels::coarseFusedSmemBytes(128), size_t(2 * 32 * 128 * 8 + 4 * (64 * 132 + 64)));
    EXPECT_EQ(kernels::coarseFusedSmemBytes(13), size_t(2 * 32 * 16 * 8 + 4 * (64 * 20 + 64)));
    EXPECT_LE(2 * (kernels::coarseFusedSmemBytes(128) + 1024), size_t(228 * 1024));
    EXPECT_EQ(kernels::coarseFusedFragmentBytes(4096, 128), size_t(4096 * 128 * 8));
    EXPECT_EQ(kernels::coarseFusedFragmentBytes(1000, 13), size_t(1024 * 16 * 8));
    EXPECT_EQ(kernels::coarseFusedFragmentTiles(5), 4);
    EXPECT_LE(kernels::coarseFusedSmemBytes(256), kH100Smem);
    const size_t a100 = 163 * 1024;
    EXPECT_LE(kernels::coarseFusedSmemBytes(208), a100);
    EXPECT_GT(kernels::coarseFusedSmemBytes(209), a100);
    EXPECT_EQ(kernels::coarseFusedSegments(4096), 16);
    EXPECT_EQ(kernels::coarseFusedSegments(1000), 4);
    EXPECT_EQ(kernels::coarseFusedSegments(256), 1);
}

TEST(IvfPlan, EveryKAndNprobeFitsTheDefaultBudget) {
    std::mt19937_64 rng(test::testSeed());
    std::vector<int64_t> lengths(2048);
    for (auto& l : lengths) {
        l = int64_t(rng() % 3000);
    }
    lengths[5] = 500000; // one giant list
    for (int k : {1, 2, 10, 100, 1000, 1024, 2047, 2048}) {
        for (int nprobe : {1, 2, 64, 1000, 2048}) {
            for (int64_t nq : {int64_t(1), int64_t(100), int64_t(100000)}) {
                SCOPED_TRACE(
                        testing::Message() << "k=" << k << " nprobe=" << nprobe << " nq=" << nq);
                IvfPlanInput in = input(lengths, nq, nprobe, k);
                IvfSearchPlan p = planIvfSearch(in);
                expectValid(in, p);
                EXPECT_EQ(
                        p.fastMerge,
                        k > kernels::kMaxWarpRowSelectK && p.fastMergeSmemBytes <= kH100Smem &&
                                p.candidatesPerQuery <= kFastMergeMaxCandidates);
            }
        }
    }
}

TEST(IvfPlan, GiantListIsSplitIntoChunks) {
    std::vector<int64_t> lengths(100, 1000);
    lengths[7] = 1000000;
    // The per-query scan: the giant list's chunks plus one for each other list.
    IvfPlanInput perQuery = input(lengths, 10000, 4, 10);
    perQuery.scanPath = IvfScanPath::kPerQuery;
    IvfSearchPlan p = planIvfSearch(perQuery);
    EXPECT_LT(p.chunkLen, 1000000);
    EXPECT_GE(p.chunksPerQuery, (1000000 + p.chunkLen - 1) / p.chunkLen + 3);
    // The list-major scan: windows of the longest row (kAuto's choice here).
    p = planIvfSearch(input(lengths, 10000, 4, 10));
    EXPECT_TRUE(p.listMajor);
    EXPECT_GE(p.chunksPerQuery * p.chunkLen, 1000000 + 3 * 1000);
    expectValid(input(lengths, 10000, 4, 10), p);
    // A forced chunk length is kept.
    IvfPlanInput in = input(lengths, 10, 4, 10);
    in.chunkOverride = 256;
    p = planIvfSearch(in);
    EXPECT_EQ(p.chunkLen, 256);
    expectValid(in, p);
}

TEST(IvfPlan, SmallBudgetLengthensChunksOrRefuses) {
    std::vector<int64_t> lengths(4096, 2000);
    IvfPlanInput in = input(lengths, 1000, 2048, 2048);
    in.budgetBytes = size_t(64) << 20;
    IvfSearchPlan p = planIvfSearch(in);
    expectValid(in, p);
    EXPECT_GE(p.chunkLen, 2000);       // one chunk per list
    in.budgetBytes = size_t(16) << 20; // 2048 x 2048 candidates of 12 bytes do not fit
    try {
        planIvfSearch(in);
        FAIL() << "plan accepted beyond the budget";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("too small for nprobe=2048 k=2048"), std::string::npos)
                << e.what();
    }
}

TEST(IvfPlan, BadShapesThrow) {
    std::vector<int64_t> lengths(10, 5);
    EXPECT_THROW(planIvfSearch(input(lengths, 0, 1, 1)), faiss::FaissException);
    EXPECT_THROW(planIvfSearch(input(lengths, 1, 0, 1)), faiss::FaissException);
    EXPECT_THROW(planIvfSearch(input(lengths, 1, 11, 1)), faiss::FaissException);
    EXPECT_THROW(planIvfSearch(input(lengths, 1, 1, 0)), faiss::FaissException);
    EXPECT_THROW(planIvfSearch(input(lengths, 1, 1, 2049)), faiss::FaissException);
}

TEST(IvfPlan, ListMajorChosenWhenQueriesShareLists) {
    std::vector<int64_t> lengths(4096, 244);
    // 10000 x 32 probes over 4096 lists: ~78 queries per list.
    IvfSearchPlan p = planIvfSearch(input(lengths, 10000, 32, 10));
    EXPECT_TRUE(p.listMajor);
    EXPECT_EQ(p.maxRowVectors, 32 * 244);
    // Half a query per list on average: per-query.
    p = planIvfSearch(input(lengths, 128, 16, 10));
    EXPECT_FALSE(p.listMajor);
    p = planIvfSearch(input(lengths, 1, 1, 10));
    EXPECT_FALSE(p.listMajor);
    // One query probing every list: nothing to share.
    EXPECT_FALSE(planIvfSearch(input(lengths, 1, 2048, 10)).listMajor);
    EXPECT_TRUE(planIvfSearch(input(lengths, 2, 2048, 10)).listMajor);
    // The cut-off lies between 0.5 queries per list (per-query measured faster) and 1
    // (list-major faster).
    EXPECT_FALSE(planIvfSearch(input(lengths, 1024, 2, 10)).listMajor);
    EXPECT_TRUE(planIvfSearch(input(lengths, 1024, 4, 10)).listMajor);
    // At d = 768 from 0.75 sqrt(128 / 768) = 0.31 queries per list.
    IvfPlanInput wide = input(lengths, 128, 8, 10); // 0.25 queries per list
    wide.d = 768;
    EXPECT_FALSE(planIvfSearch(wide).listMajor);
    wide.nprobe = 16; // 0.5
    EXPECT_TRUE(planIvfSearch(wide).listMajor);
    // Forced either way.
    IvfPlanInput in = input(lengths, 1, 1, 10);
    in.scanPath = IvfScanPath::kListMajor;
    p = planIvfSearch(in);
    EXPECT_TRUE(p.listMajor);
    expectValid(in, p);
    in = input(lengths, 10000, 32, 10);
    in.scanPath = IvfScanPath::kPerQuery;
    EXPECT_FALSE(planIvfSearch(in).listMajor);
}

// The key path: kAuto from d = 256 at L2 and k <= 32; forced at any d; never for inner
// product, above k = 32 or when a block's queries do not fit the re-rank's shared memory.
TEST(IvfPlan, ListMajorKeysWhereTheReRankServes) {
    std::vector<int64_t> lengths(2048, 244);
    auto plan = [&](int d, int k, IvfScanPath path, faiss::MetricType metric) {
        IvfPlanInput in = input(lengths, 10000, 16, k);
        in.d = d;
        in.scanPath = path;
        in.metric = metric;
        IvfSearchPlan p = planIvfSearch(in);
        expectValid(in, p);
        return p;
    };
    const auto l2 = faiss::METRIC_L2;
    IvfSearchPlan p = plan(768, 10, IvfScanPath::kAuto, l2);
    EXPECT_TRUE(p.listMajor);
    EXPECT_TRUE(p.listMajorKeys);
    // The row's largest |x|^2: 4 bytes a query more than the exact product.
    EXPECT_EQ(p.bytesPerQuery, plan(768, 10, IvfScanPath::kListMajor, l2).bytesPerQuery + 4);
    EXPECT_TRUE(plan(256, 32, IvfScanPath::kAuto, l2).listMajorKeys);
    EXPECT_FALSE(plan(255, 10, IvfScanPath::kAuto, l2).listMajorKeys);
    EXPECT_FALSE(plan(768, 33, IvfScanPath::kAuto, l2).listMajorKeys);
    EXPECT_FALSE(plan(768, 10, IvfScanPath::kAuto, faiss::METRIC_INNER_PRODUCT).listMajorKeys);
    EXPECT_FALSE(plan(768, 10, IvfScanPath::kListMajor, l2).listMajorKeys);
    EXPECT_FALSE(plan(768, 10, IvfScanPath::kPerQuery, l2).listMajor);
    // kAuto from 1024 queries and 2048 expected keys a query (nprobe x 244 here).
    auto autoPlan = [&](int64_t nq, int nprobe) {
        IvfPlanInput in = input(lengths, nq, nprobe, 10);
        in.d = 768;
        IvfSearchPlan p = planIvfSearch(in);
        expectValid(in, p);
        return p;
    };
    EXPECT_TRUE(autoPlan(1024, 9).listMajorKeys);
    EXPECT_FALSE(autoPlan(10000, 8).listMajorKeys);
    EXPECT_TRUE(autoPlan(10000, 8).listMajor);
    EXPECT_FALSE(autoPlan(1023, 16).listMajorKeys);
    EXPECT_TRUE(autoPlan(1023, 16).listMajor);
    // Forced: at any d and batch, as list-major.
    p = plan(8, 1, IvfScanPath::kListMajorKeys, l2);
    EXPECT_TRUE(p.listMajor);
    EXPECT_TRUE(p.listMajorKeys);
    p = plan(768, 100, IvfScanPath::kListMajorKeys, l2);
    EXPECT_TRUE(p.listMajor);
    EXPECT_FALSE(p.listMajorKeys);
    EXPECT_FALSE(
            plan(768, 10, IvfScanPath::kListMajorKeys, faiss::METRIC_INNER_PRODUCT).listMajorKeys);
    IvfPlanInput in = input(lengths, 1, 1, 10);
    in.scanPath = IvfScanPath::kListMajorKeys;
    EXPECT_TRUE(planIvfSearch(in).listMajorKeys);
    in.d = 4096;
    in.maxSmemPerBlock = 48 * 1024; // the re-rank's four queries of 16 KB do not fit
    EXPECT_FALSE(planIvfSearch(in).listMajorKeys);
}

TEST(IvfPlan, ListMajorWindowsAsLongAsTheBatchAllows) {
    std::vector<int64_t> lengths(4096, 244);
    auto listMajor = [&](int64_t nq, int nprobe, int k) {
        IvfPlanInput in = input(lengths, nq, nprobe, k);
        in.scanPath = IvfScanPath::kListMajor;
        IvfSearchPlan p = planIvfSearch(in);
        expectValid(in, p);
        return p;
    };
    // Above k = 32, 12 windows an SM (1584 on 132 SMs). Batch 10000 and 1024: one window
    // a query.
    IvfSearchPlan p = listMajor(10000, 16, 100);
    EXPECT_EQ(p.chunksPerQuery, 1);
    EXPECT_GE(p.chunkLen, 16 * 244);
    p = listMajor(1024, 16, 33);
    EXPECT_EQ(p.chunksPerQuery, 1);
    // Batch 128: 12 windows a query, none shorter than 2048 columns.
    p = listMajor(128, 256, 100);
    EXPECT_EQ(p.chunkLen, 5216); // 256 x 244 columns over 12, rounded up to 32
    EXPECT_EQ(p.chunksPerQuery, 12);
    p = listMajor(128, 16, 100);
    EXPECT_EQ(p.chunkLen, 2048);
    // No window longer than 65536 columns, however few the rows.
    p = listMajor(10000, 2048, 100);
    EXPECT_EQ(p.chunkLen, 65536);
    EXPECT_EQ(p.chunksPerQuery, (2048 * 244 + 65535) / 65536);
    // Up to k = 32 windows stay at 2048 columns.
    EXPECT_EQ(listMajor(10000, 16, 10).chunkLen, 2048);
    EXPECT_EQ(listMajor(10000, 256, 32).chunkLen, 2048);
    // listChunkVectors still sets it.
    IvfPlanInput in = input(lengths, 10000, 16, 100);
    in.scanPath = IvfScanPath::kListMajor;
    in.chunkOverride = 1024;
    EXPECT_EQ(planIvfSearch(in).chunkLen, 1024);
}

TEST(IvfPlan, ListMajorDistanceBufferStaysInTheBudget) {
    std::vector<int64_t> lengths(2048, 1000);
    lengths[9] = 500000; // one list holding a third of the data
    for (int nprobe : {1, 32, 2048}) {
        for (int k : {1, 100, 2048}) {
            SCOPED_TRACE(testing::Message() << "nprobe=" << nprobe << " k=" << k);
            IvfPlanInput in = input(lengths, 100000, nprobe, k);
            in.scanPath = IvfScanPath::kListMajor;
            IvfSearchPlan p = planIvfSearch(in);
            expectValid(in, p);
            // The buffer holds the nprobe longest lists of every query of a tile.
            EXPECT_GE(p.maxRowVectors, 500000 + int64_t(nprobe - 1) * 1000);
            EXPECT_GE(p.bytes, size_t(p.queryTile) * p.maxRowVectors * sizeof(float));
        }
    }
}
