// GpuIndexIVFFlat against faiss::IndexIVFFlat with the same quantizer and lists: same
// ids except ties, distances within 1e-4 relative; and against exact search.
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfSearch.h>
#include <kernels/IvfKeyRerank.h>

#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

struct IvfCase {
    int64_t nb;
    int64_t nq;
    int d;
    int64_t nlist;
    int64_t nprobe;
    int k;
    faiss::MetricType metric;
    uint64_t seed;
    bool viaParams; ///< nprobe through SearchParametersIVF instead of the member
};

std::string describe(const IvfCase& c) {
    return "nb=" + std::to_string(c.nb) + " nq=" + std::to_string(c.nq) +
            " d=" + std::to_string(c.d) + " nlist=" + std::to_string(c.nlist) +
            " nprobe=" + std::to_string(c.nprobe) + " k=" + std::to_string(c.k) +
            " metric=" + (c.metric == faiss::METRIC_L2 ? "L2" : "IP") +
            " seed=" + std::to_string(c.seed) + (c.viaParams ? " (params)" : "");
}

const char* pathName(IvfScanPath p) {
    return p == IvfScanPath::kListMajorKeys ? "list-major keys"
            : p == IvfScanPath::kListMajor  ? "list-major"
            : p == IvfScanPath::kPerQuery   ? "per-query"
                                            : "auto";
}

/// The scan paths a test forces: the key path where it runs (L2, k <= 32; else it is
/// the list-major path again).
std::vector<IvfScanPath> forcedPaths(faiss::MetricType m, int k) {
    std::vector<IvfScanPath> paths{IvfScanPath::kPerQuery, IvfScanPath::kListMajor};
    if (m == faiss::METRIC_L2 && k <= kernels::kKeyRerankMaxK) {
        paths.push_back(IvfScanPath::kListMajorKeys);
    }
    return paths;
}

/// Searches the CPU index and the GPU copy of it, once on each forced scan path, with
/// the given coarse precision.
void runCase(
        GpuResources& res,
        const IvfCase& c,
        GpuIndexIVFFlatConfig cfg = {},
        GpuFlatPrecision coarse = GpuFlatPrecision::kAuto) {
    SCOPED_TRACE(describe(c));
    auto xb = datasets::uniform(c.nb, c.d, c.seed);
    auto xq = datasets::uniform(c.nq, c.d, c.seed + 1);
    auto cent = datasets::uniform(c.nlist, c.d, c.seed + 2);
    auto cpu = cpuIvf(c.d, c.nlist, c.metric, cent.data());
    cpu->add(c.nb, xb.data());
    cpu->nprobe = size_t(c.nprobe);
    std::vector<float> refD(c.nq * c.k);
    std::vector<int64_t> refI(c.nq * c.k);
    cpu->search(c.nq, xq.data(), c.k, refD.data(), refI.data());
    infForMissing(refD, refI, c.metric);
    auto skip = coarseTies(*cpu->quantizer, c.nq, xq.data(), std::min(c.nprobe, c.nlist));
    const int64_t skipped = std::count(skip.begin(), skip.end(), true);
    // The tied queries are not compared; most must be. At d = 8 and nprobe 2048 of 2100
    // a uniform query ties at its nprobe-th list ~7% of the time (simulated), so a guard
    // of nq / 5 + 1 over 3 queries failed ~1.4% of the runs (seen once).
    EXPECT_LE(skipped, c.nq / 2) << "too many coarse ties";

    for (IvfScanPath path : forcedPaths(c.metric, c.k)) {
        SCOPED_TRACE(pathName(path));
        cfg.scanPath = path;
        GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
        gpu.coarsePrecision = coarse;
        ASSERT_EQ(gpu.ntotal, c.nb);
        std::vector<float> D(c.nq * c.k, 12345.f);
        std::vector<int64_t> I(c.nq * c.k, 777);
        auto search = [&](std::vector<float>& dOut, std::vector<int64_t>& iOut) {
            if (c.viaParams) {
                gpu.nprobe = 1;
                faiss::SearchParametersIVF params;
                params.nprobe = size_t(c.nprobe);
                gpu.search(c.nq, xq.data(), c.k, dOut.data(), iOut.data(), &params);
            } else {
                gpu.search(c.nq, xq.data(), c.k, dOut.data(), iOut.data());
            }
        };
        search(D, I);
        EXPECT_EQ(compareKnnRows(refD, refI, D, I, c.nq, c.k, skip, 1e-4f, 1e-4f), 0);
        // Small searches: the second call is captured as a CUDA graph, the third
        // replays it (impl/SearchGraphs.h); both give the first call's results.
        if (c.nq <= 128) {
            std::vector<float> D2(D.size());
            std::vector<int64_t> I2(I.size());
            for (int call = 2; call <= 3; ++call) {
                search(D2, I2);
                EXPECT_EQ(compareExact(D, I, D2, I2, c.nq, c.k), 0) << "call " << call;
            }
        }
    }
}

} // namespace

TEST(GpuIndexIVFFlat, MatchesCpuOnFixedShapes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = testSeed();
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        if (underSanitizer()) {
            // One case of each kind below, smaller: the large batch still above the 1024
            // queries from which the coarse search takes 3xTF32 and no graph is captured.
            runCase(res, {4000, 3, 32, 64, 16, 2048, m, seed + 1, true});
            runCase(res, {1000, 10, 7, 1, 5, 10, m, seed + 7, false});
            runCase(res, {1000, 1, 16, 50, 4, 10, m, seed + 2, false});
            runCase(res, {1000, 1100, 16, 50, 4, 10, m, seed + 3, false});
            continue;
        }
        for (int k : {1, 10, 100, 1000, 2048}) {
            runCase(res, {20000, 40, 32, 64, 16, k, m, seed + k, k == 100});
        }
        // d not a multiple of 4 (padded layout), one list, nprobe above nlist (clamped).
        runCase(res, {3000, 30, 7, 1, 5, 10, m, seed + 7, false});
        runCase(res, {5000, 60, 33, 20, 3, 32, m, seed + 33, true});
        // Batch sizes 1 and 10000.
        runCase(res, {10000, 1, 16, 50, 4, 10, m, seed + 1, false});
        runCase(res, {10000, 10000, 16, 50, 4, 10, m, seed + 2, false});
    }
}

TEST(GpuIndexIVFFlat, MatchesCpuOnRandomShapes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int dims[] = {4, 7, 16, 33, 64, 128};
    const int ks[] = {1, 10, 100, 1000, 2048};
    // Under compute-sanitizer an eighth of the vectors, a twentieth of the large batch
    // and a quarter of the others.
    for (int iter = 0; iter < shapeCount(12); ++iter) {
        IvfCase c;
        c.d = dims[rng() % 6];
        c.k = iter == 0 ? 10 : ks[rng() % 5]; // iteration 0: 10000 queries
        c.nb = 1 + int64_t(rng() % smallUnderSanitizer(30000, 3750));
        c.nq = iter == 0 ? smallUnderSanitizer(10000, 500)
                         : 1 + int64_t(rng() % smallUnderSanitizer(400, 100));
        c.nlist = 1 + int64_t(rng() % 300);
        c.nprobe = 1 + int64_t(rng() % (c.nlist + 3));
        c.metric = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        c.seed = rng();
        c.viaParams = rng() % 2;
        runCase(res, c);
    }
}

TEST(GpuIndexIVFFlat, LargestKAndNprobe) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = testSeed();
    // Under compute-sanitizer 2500 vectors (more than k) in 2048 lists and few queries
    // (each probe of each query is a selection of 2048): one query where all 2048 lists
    // are probed (no query can have a coarse tie there), two at nprobe 1 (runCase's guard
    // allows one of them a coarse tie).
    const int64_t nb = smallUnderSanitizer(30000, 2500), nq = smallUnderSanitizer(16, 2),
                  nqAll = smallUnderSanitizer(16, 1), nlist = smallUnderSanitizer(2100, 2048);
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        runCase(res, {nb, nqAll, 8, nlist, 2048, 2048, m, seed + 1, true});
        runCase(res, {nb, nqAll, 8, nlist, 2048, 1, m, seed + 2, false});
        runCase(res, {nb, nq, 8, nlist, 1, 2048, m, seed + 3, false});
    }
}

TEST(GpuIndexIVFFlat, AllListsProbedEqualsExactSearch) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 24, k = 100;
    const int64_t nb = 20000, nq = 200, nlist = 40;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        datasets::ClusteredSpec spec{nb, d, 40, 0.1f, testSeed()};
        auto xb = datasets::clustered(spec, 0);
        spec.n = nq;
        auto xq = datasets::clustered(spec, 1);
        GpuIndexIVFFlat ivf(res, d, nlist, m);
        ivf.train(nb, xb.data());
        ivf.add(nb / 3, xb.data());
        ivf.add(nb - nb / 3, xb.data() + nb / 3 * d);
        ivf.nprobe = size_t(nlist);
        GpuIndexFlat flat(res, d, m);
        flat.add(nb, xb.data());
        std::vector<float> refD(nq * k), D(nq * k);
        std::vector<int64_t> refI(nq * k), I(nq * k);
        flat.search(nq, xq.data(), k, refD.data(), refI.data());
        ivf.search(nq, xq.data(), k, D.data(), I.data());
        EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-3f), 0);
    }
}

TEST(GpuIndexIVFFlat, FastAndHeapMergePathsAgree) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int ks[] = {1, 7, 10, 64, 100, 250, 1000, 2048};
    for (int iter = 0; iter < shapeCount(10); ++iter) {
        const int d = 8 + int(rng() % 60);
        const int64_t nb = 1000 + int64_t(rng() % 40000), nlist = 1 + int64_t(rng() % 200);
        const int64_t nq = 1 + int64_t(rng() % 300);
        const int k = ks[rng() % 8];
        int64_t nprobe = 1 + int64_t(rng() % nlist);
        const auto m = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        const uint64_t seed = rng();
        GpuIndexIVFFlatConfig fastCfg, heapCfg;
        fastCfg.mergePath = IvfMergePath::kFast;
        heapCfg.mergePath = IvfMergePath::kHeap;
        if (iter % 3 == 0) { // many small chunks: many candidate slots per query
            fastCfg.listChunkVectors = heapCfg.listChunkVectors = 64;
        }
        auto xb = datasets::uniform(nb, d, seed);
        auto xq = datasets::uniform(nq, d, seed + 1);
        auto cent = datasets::uniform(nlist, d, seed + 2);
        auto cpu = cpuIvf(d, nlist, m, cent.data());
        cpu->add(nb, xb.data());
        GpuIndexIVFFlat fast(res, cpu.get(), fastCfg), heap(res, cpu.get(), heapCfg);
        // The largest nprobe whose candidates fit the fast path on this device.
        // (heap.plan: planning the forced fast path would refuse what does not fit.)
        while (nprobe > 1 &&
               GpuIndexIVFFlatAccess::plan(heap, nq, k, nprobe).fastMergeSmemBytes >
                       res.maxSharedMemoryPerBlock()) {
            nprobe = (nprobe + 1) / 2;
        }
        SCOPED_TRACE(
                testing::Message() << "d=" << d << " nb=" << nb << " nlist=" << nlist << " nq="
                                   << nq << " k=" << k << " nprobe=" << nprobe << " seed=" << seed);
        if (GpuIndexIVFFlatAccess::plan(heap, nq, k, nprobe).fastMergeSmemBytes >
            res.maxSharedMemoryPerBlock()) {
            continue; // k=2048 with small chunks: the fast path never fits
        }
        ASSERT_TRUE(GpuIndexIVFFlatAccess::plan(fast, nq, k, nprobe).fastMerge);
        ASSERT_FALSE(GpuIndexIVFFlatAccess::plan(heap, nq, k, nprobe).fastMerge);
        fast.nprobe = heap.nprobe = size_t(nprobe);
        std::vector<float> D1(nq * k), D2(nq * k);
        std::vector<int64_t> I1(nq * k), I2(nq * k);
        fast.search(nq, xq.data(), k, D1.data(), I1.data());
        heap.search(nq, xq.data(), k, D2.data(), I2.data());
        // Same coarse GEMM shapes on both: no coarse ties to skip.
        EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
    }
}

TEST(GpuIndexIVFFlat, UnevenAndEmptyLists) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16;
    // Under compute-sanitizer 2000 vectors (a list of 1000: 4 chunks of 256), 10 queries,
    // and each nprobe at one k: 1 and 25 (every non-empty list, and 5 empty ones) at 500
    // (more than most probed lists hold), 4 at 10.
    const int64_t nlist = 32, nb = smallUnderSanitizer(40000, 2000),
                  nq = smallUnderSanitizer(100, 10);
    std::mt19937_64 rng(testSeed());
    std::normal_distribution<float> noise(0.f, 0.01f);
    auto cent = datasets::uniform(nlist, d, rng());
    // Lists 20..31 stay empty: their centroids are far from every vector.
    for (int64_t l = 20; l < nlist; ++l) {
        for (int j = 0; j < d; ++j) {
            cent[l * d + j] += 100.f;
        }
    }
    // Half of the data sits on centroid 3: one list holds half the vectors.
    auto xb = datasets::uniform(nb, d, rng());
    for (int64_t i = 0; i < nb / 2; ++i) {
        for (int j = 0; j < d; ++j) {
            xb[i * d + j] = cent[3 * d + j] + noise(rng);
        }
    }
    auto xq = datasets::uniform(nq, d, rng());
    for (int64_t i = 0; i < nq / 2; ++i) {
        for (int j = 0; j < d; ++j) {
            xq[i * d + j] = cent[3 * d + j] + noise(rng);
        }
    }
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto cpu = cpuIvf(d, nlist, m, cent.data());
        cpu->add(nb, xb.data());
        if (m == faiss::METRIC_L2) {
            ASSERT_GE(cpu->invlists->list_size(3), size_t(nb / 2));
            ASSERT_EQ(cpu->invlists->list_size(25), 0u);
        }
        for (int64_t chunk : {int64_t(0), int64_t(256)}) {
            for (IvfScanPath path : forcedPaths(m, 10)) {
                SCOPED_TRACE(pathName(path));
                GpuIndexIVFFlatConfig cfg;
                cfg.listChunkVectors = chunk;
                cfg.scanPath = path;
                GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
                for (int64_t nprobe : {int64_t(1), int64_t(4), int64_t(25)}) {
                    for (int k : {10, 500}) {
                        if (underSanitizer() && (k == 10) != (nprobe == 4)) {
                            continue;
                        }
                        if (path == IvfScanPath::kListMajorKeys && k > kernels::kKeyRerankMaxK) {
                            continue; // the list-major path again
                        }
                        SCOPED_TRACE(
                                testing::Message() << "metric=" << int(m) << " chunk=" << chunk
                                                   << " nprobe=" << nprobe << " k=" << k);
                        cpu->nprobe = gpu.nprobe = size_t(nprobe);
                        std::vector<float> refD(nq * k), D(nq * k);
                        std::vector<int64_t> refI(nq * k), I(nq * k);
                        cpu->search(nq, xq.data(), k, refD.data(), refI.data());
                        infForMissing(refD, refI, m);
                        gpu.search(nq, xq.data(), k, D.data(), I.data());
                        auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), nprobe);
                        EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
                    }
                }
            }
        }
    }
}

namespace {

/// One shape of the scan-path tests below: uniform vectors, queries and centroids drawn
/// from `seed`; `chunk`: GpuIndexIVFFlatConfig::listChunkVectors (0: the planner's).
struct ScanPathsShape {
    int d;
    int64_t nb, nlist, nq;
    int k;
    int64_t nprobe;
    faiss::MetricType metric;
    uint64_t seed;
    int64_t chunk = 0;
};

/// Searches one shape with each scan path forced; the results must be equal bit for bit
/// (the list-major output starts as sentinels, so a slot it never writes shows), the key
/// path's too where it runs.
void expectScanPathsIdentical(GpuResources& res, const ScanPathsShape& s) {
    SCOPED_TRACE(
            testing::Message() << "d=" << s.d << " nb=" << s.nb << " nlist=" << s.nlist
                               << " nq=" << s.nq << " k=" << s.k << " nprobe=" << s.nprobe
                               << " chunk=" << s.chunk << " seed=" << s.seed);
    auto xb = datasets::uniform(s.nb, s.d, s.seed);
    auto xq = datasets::uniform(s.nq, s.d, s.seed + 1);
    auto cent = datasets::uniform(s.nlist, s.d, s.seed + 2);
    auto cpu = cpuIvf(s.d, s.nlist, s.metric, cent.data());
    cpu->add(s.nb, xb.data());
    GpuIndexIVFFlatConfig perQueryCfg, listMajorCfg, keysCfg;
    perQueryCfg.scanPath = IvfScanPath::kPerQuery;
    listMajorCfg.scanPath = IvfScanPath::kListMajor;
    keysCfg.scanPath = IvfScanPath::kListMajorKeys;
    perQueryCfg.listChunkVectors = listMajorCfg.listChunkVectors = keysCfg.listChunkVectors =
            s.chunk;
    GpuIndexIVFFlat perQuery(res, cpu.get(), perQueryCfg);
    GpuIndexIVFFlat listMajor(res, cpu.get(), listMajorCfg);
    GpuIndexIVFFlat keys(res, cpu.get(), keysCfg);
    ASSERT_FALSE(GpuIndexIVFFlatAccess::plan(perQuery, s.nq, s.k, s.nprobe).listMajor);
    ASSERT_TRUE(GpuIndexIVFFlatAccess::plan(listMajor, s.nq, s.k, s.nprobe).listMajor);
    ASSERT_FALSE(GpuIndexIVFFlatAccess::plan(listMajor, s.nq, s.k, s.nprobe).listMajorKeys);
    const bool keyPath = s.metric == faiss::METRIC_L2 && s.k <= kernels::kKeyRerankMaxK;
    ASSERT_EQ(GpuIndexIVFFlatAccess::plan(keys, s.nq, s.k, s.nprobe).listMajorKeys, keyPath);
    perQuery.nprobe = listMajor.nprobe = keys.nprobe = size_t(s.nprobe);
    std::vector<float> D1(s.nq * s.k), D2(s.nq * s.k, 12345.f), D3(s.nq * s.k, 12345.f);
    std::vector<int64_t> I1(s.nq * s.k), I2(s.nq * s.k, 777), I3(s.nq * s.k, 777);
    perQuery.search(s.nq, xq.data(), s.k, D1.data(), I1.data());
    listMajor.search(s.nq, xq.data(), s.k, D2.data(), I2.data());
    EXPECT_EQ(compareExact(D1, I1, D2, I2, s.nq, s.k), 0);
    if (keyPath) {
        keys.search(s.nq, xq.data(), s.k, D3.data(), I3.data());
        EXPECT_EQ(compareExact(D1, I1, D3, I3, s.nq, s.k), 0) << "list-major keys";
    }
}

} // namespace

// The two scan paths run the same FP32 operations in the same order and feed the same
// merge: their results are identical, bit for bit, over k, nprobe and d up to 2048. The
// key path re-ranks with the per-query scan's operations: the same distances too.
TEST(GpuIndexIVFFlat, ScanPathsGiveIdenticalResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int dims[] = {1, 5, 32, 128, 768, 2048};
    const int ks[] = {1, 10, 100, 256, 257, 1000, 2048};
    for (int iter = 0; iter < shapeCount(14); ++iter) {
        const int d = dims[iter % 6];
        const int k = ks[rng() % 7];
        const int64_t nlist = 1 + int64_t(rng() % 300);
        const int64_t nbDrawn =
                (d >= 768 ? 2000 : 1000) + int64_t(rng() % 20000) / (d >= 768 ? 8 : 1);
        const int64_t nqDrawn = iter == 0 ? 5000 : 1 + int64_t(rng() % 600);
        // Under compute-sanitizer a tenth of them.
        const int64_t nb = smallUnderSanitizer(nbDrawn, nbDrawn / 10);
        const int64_t nq = smallUnderSanitizer(nqDrawn, nqDrawn / 10 + 1);
        const int64_t nprobe = iter == 1 ? 2048 : 1 + int64_t(rng() % (nlist + 2));
        const auto m = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        const uint64_t seed = rng();
        expectScanPathsIdentical(res, {d, nb, nlist, nq, k, nprobe, m, seed});
    }
}

// The list-major path's warp selection at every capacity: registers for nextPow2(k) in
// {1, ..., 32}, shared memory for 64 to 256 (both sides of each power of two), against
// the per-query path's block selection on the same distances, bit for bit.
TEST(GpuIndexIVFFlat, ListMajorWarpSelectionAtEveryCapacity) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    // Under compute-sanitizer one k of each capacity, each side of a power of two in
    // turn, and fewer vectors and queries.
    const std::vector<int> ks = underSanitizer()
            ? std::vector<int>{1, 2, 3, 8, 9, 32, 33, 128, 129}
            : std::vector<int>{1, 2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, 65, 128, 129, 256};
    // Chunks of 32 and 64 vectors (one or two values a lane) and the planner's own
    // (at least 256: several steps a warp).
    const int64_t chunks[] = {32, 64, 0};
    for (size_t i = 0; i < ks.size(); ++i) {
        const int k = ks[i];
        const int d = 4 + int(rng() % 30);
        const int64_t nlist = 1 + int64_t(rng() % 60);
        const int64_t nb = 500 + int64_t(rng() % smallUnderSanitizer(8000, 4000));
        const int64_t nq = 1 + int64_t(rng() % smallUnderSanitizer(200, 25));
        const int64_t nprobe = 1 + int64_t(rng() % (nlist + 2));
        const auto m = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        const uint64_t seed = rng();
        expectScanPathsIdentical(res, {d, nb, nlist, nq, k, nprobe, m, seed, chunks[i % 3]});
    }
}

// The list-major product looks each work item up in the per-list work and query starts
// (a search over nlist + 1 entries): thousands of lists, bit for bit against the
// per-query path.
TEST(GpuIndexIVFFlat, ListMajorOverThousandsOfLists) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    for (int64_t nlist : {int64_t(6143), int64_t(6144), int64_t(9000)}) {
        const int d = 8 + int(rng() % 40);
        const int64_t nb = smallUnderSanitizer(40000, 12000);
        const int64_t nq = smallUnderSanitizer(600, 60);
        const int k = 1 + int(rng() % 40);
        const int64_t nprobe = 1 + int64_t(rng() % 24);
        const auto m = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        const uint64_t seed = rng();
        expectScanPathsIdentical(res, {d, nb, nlist, nq, k, nprobe, m, seed});
    }
}

// Sets where the keys' band holds many vectors: a thousand copies of one vector beside
// the query, and vectors far from the origin (|x|^2 - 2 q.x cancels to a small distance),
// at d 128 and 768. The key path re-ranks them all and gives the per-query path's results.
TEST(GpuIndexIVFFlat, KeyPathOnCrowdedBands) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    std::normal_distribution<float> noise(0.f, 1.f);
    for (int d : {128, 768}) {
        for (float offset : {0.f, 50.f}) {
            SCOPED_TRACE(testing::Message() << "d=" << d << " offset=" << offset);
            const int64_t nb = smallUnderSanitizer(6000, 1500), nq = smallUnderSanitizer(300, 20),
                          nlist = 16;
            auto xb = datasets::uniform(nb, d, rng());
            auto xq = datasets::uniform(nq, d, rng());
            for (float& v : xb) {
                v = offset + 0.01f * v;
            }
            for (float& v : xq) {
                v = offset + 0.01f * v;
            }
            // Vectors 0..999 are copies of vector 0, query 0 sits on it.
            for (int64_t i = 1; i < 1000; ++i) {
                std::copy(xb.begin(), xb.begin() + d, xb.begin() + i * d);
            }
            std::copy(xb.begin(), xb.begin() + d, xq.begin());
            auto cent = datasets::uniform(nlist, d, rng());
            for (float& v : cent) {
                v = offset + 0.01f * v;
            }
            auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, cent.data());
            cpu->add(nb, xb.data());
            GpuIndexIVFFlat perQuery(res, cpu.get(), forcedScan(IvfScanPath::kPerQuery));
            GpuIndexIVFFlat keys(res, cpu.get(), forcedScan(IvfScanPath::kListMajorKeys));
            for (int k : {1, 10, 32}) {
                for (int64_t nprobe : {int64_t(1), int64_t(4)}) {
                    SCOPED_TRACE(testing::Message() << "k=" << k << " nprobe=" << nprobe);
                    ASSERT_TRUE(GpuIndexIVFFlatAccess::plan(keys, nq, k, nprobe).listMajorKeys);
                    perQuery.nprobe = keys.nprobe = size_t(nprobe);
                    std::vector<float> D1(nq * k), D2(nq * k, 12345.f);
                    std::vector<int64_t> I1(nq * k), I2(nq * k, 777);
                    perQuery.search(nq, xq.data(), k, D1.data(), I1.data());
                    keys.search(nq, xq.data(), k, D2.data(), I2.data());
                    EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
                    // Query 0's k nearest are copies of vector 0 (distance 0), when it
                    // probes vector 0's list: far from the origin the centroids are too
                    // close for the GPU's coarse search to pick the CPU's assignment.
                    if (offset == 0.f) {
                        EXPECT_EQ(D2[0], 0.f);
                        EXPECT_LT(I2[0], 1000);
                    }
                }
            }
        }
    }
}

// The key path's two products on one index: lists probed by 3 queries (groups of 4: the
// CUDA-core keys) and by 8 to 70 (the tensor cores' 3xTF32 keys on devices of compute
// capability 8.0 and up, groups of up to 32 as one or two tiles of 16 queries). Every
// batch gives the per-query path's results, at d 1 to 768.
TEST(GpuIndexIVFFlat, KeyPathOnEveryGroupSize) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    for (int d : {1, 8, 100, 768}) {
        const int64_t nb = 3000, nlist = 2;
        auto xb = datasets::uniform(nb, d, rng());
        auto xq = datasets::uniform(70, d, rng());
        auto cent = datasets::uniform(nlist, d, rng());
        auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, cent.data());
        cpu->add(nb, xb.data());
        GpuIndexIVFFlat perQuery(res, cpu.get(), forcedScan(IvfScanPath::kPerQuery));
        GpuIndexIVFFlat keys(res, cpu.get(), forcedScan(IvfScanPath::kListMajorKeys));
        perQuery.nprobe = keys.nprobe = size_t(nlist); // every query probes every list
        // One tile of 16 queries on the tensor cores (8, 16), two (20, 32), several groups
        // with a one-tile remainder (37 = 32 + 5, 70 = 32 + 32 + 6).
        for (int64_t nq : {3, 8, 16, 20, 32, 37, 70}) {
            const int k = 10;
            SCOPED_TRACE(testing::Message() << "d=" << d << " nq=" << nq);
            ASSERT_TRUE(GpuIndexIVFFlatAccess::plan(keys, nq, k, int(nlist)).listMajorKeys);
            std::vector<float> D1(nq * k), D2(nq * k, 12345.f);
            std::vector<int64_t> I1(nq * k), I2(nq * k, 777);
            perQuery.search(nq, xq.data(), k, D1.data(), I1.data());
            keys.search(nq, xq.data(), k, D2.data(), I2.data());
            EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
        }
    }
}

TEST(GpuIndexIVFFlat, KAboveReachableVectorsPadsWithMissing) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 12, k = 100;
    const int64_t nb = 300, nlist = 30, nq = 20;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto xb = datasets::uniform(nb, d, 5);
        auto xq = datasets::uniform(nq, d, 6);
        auto cpu = cpuIvf(d, nlist, m, xb.data());
        cpu->add(nb, xb.data());
        cpu->nprobe = 2;
        GpuIndexIVFFlat gpu(res, cpu.get());
        std::vector<float> refD(nq * k), D(nq * k);
        std::vector<int64_t> refI(nq * k), I(nq * k);
        cpu->search(nq, xq.data(), k, refD.data(), refI.data());
        infForMissing(refD, refI, m);
        gpu.search(nq, xq.data(), k, D.data(), I.data());
        auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), 2);
        EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
        const float missing = m == faiss::METRIC_L2 ? std::numeric_limits<float>::infinity()
                                                    : -std::numeric_limits<float>::infinity();
        int64_t padded = 0;
        for (int64_t q = 0; q < nq; ++q) {
            int64_t mine = 0, ref = 0;
            for (int j = 0; j < k; ++j) {
                if (I[q * k + j] == -1) {
                    EXPECT_EQ(D[q * k + j], missing);
                    ++mine;
                }
                ref += refI[q * k + j] == -1;
            }
            if (!skip[q]) {
                EXPECT_EQ(mine, ref) << "query " << q; // as many as the probed lists lack
            }
            padded += mine;
        }
        EXPECT_GT(padded, 0);
    }
}

TEST(GpuIndexIVFFlat, IncrementalAddsWithArbitraryIds) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 20, k = 50;
    const int64_t nlist = 16, nq = 64;
    std::mt19937_64 rng(testSeed());
    auto cent = datasets::uniform(nlist, d, rng());
    faiss::IndexFlatL2 q(d);
    q.add(nlist, cent.data());
    GpuIndexIVFFlat gpu(res, d, nlist, faiss::METRIC_L2);
    EXPECT_FALSE(gpu.is_trained);
    gpu.setQuantizer(&q);
    EXPECT_TRUE(gpu.is_trained);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, cent.data());

    std::set<int64_t> used;
    std::vector<float> all;
    std::vector<int64_t> allIds;
    for (int64_t batch : {int64_t(1), int64_t(777), int64_t(5000), int64_t(33)}) {
        auto x = datasets::uniform(batch, d, rng());
        std::vector<int64_t> ids;
        while (int64_t(ids.size()) < batch) {
            int64_t id = int64_t(rng()); // any 64-bit value but -1, distinct
            if (id != -1 && used.insert(id).second) {
                ids.push_back(id);
            }
        }
        if (allIds.empty()) { // a value far beyond any sequential id
            used.erase(ids[0]);
            ids[0] = int64_t(1) << 62;
            ASSERT_TRUE(used.insert(ids[0]).second);
        }
        gpu.add_with_ids(batch, x.data(), ids.data());
        cpu->add_with_ids(batch, x.data(), ids.data());
        all.insert(all.end(), x.begin(), x.end());
        allIds.insert(allIds.end(), ids.begin(), ids.end());
    }
    ASSERT_EQ(gpu.ntotal, int64_t(allIds.size()));

    // Every vector comes back by its id.
    std::vector<float> row(d);
    for (size_t i = 0; i < allIds.size(); i += 97) {
        gpu.reconstruct(allIds[i], row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), all.data() + i * d, d * sizeof(float)));
    }
    // All lists probed: the same neighbours as the CPU index, whatever the assignment.
    auto xq = datasets::uniform(nq, d, rng());
    std::vector<float> refD(nq * k), D(nq * k);
    std::vector<int64_t> refI(nq * k), I(nq * k);
    cpu->nprobe = gpu.nprobe = size_t(nlist);
    cpu->search(nq, xq.data(), k, refD.data(), refI.data());
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-4f), 0);

    // Few lists probed: the GPU lists, copied to the CPU, give the GPU's answers.
    faiss::IndexIVFFlat back;
    gpu.copyTo(&back);
    back.nprobe = gpu.nprobe = 3;
    back.search(nq, xq.data(), k, refD.data(), refI.data());
    infForMissing(refD, refI, faiss::METRIC_L2);
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    auto skip = coarseTies(q, nq, xq.data(), 3);
    EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
}

TEST(GpuIndexIVFFlat, GpuKMeansTrainsAGoodQuantizer) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 32, k = 10;
    const int64_t nlist = 64, nb = 30000, nq = 500;
    datasets::ClusteredSpec spec{nb, d, 64, 0.05f, testSeed()};
    auto xb = datasets::clustered(spec, 0);
    spec.n = nq;
    auto xq = datasets::clustered(spec, 1);
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        SCOPED_TRACE(int(m));
        GpuIndexIVFFlat gpu(res, d, nlist, m);
        gpu.train(nb, xb.data());
        ASSERT_TRUE(gpu.is_trained);
        ASSERT_EQ(gpu.quantizer().ntotal, nlist);
        gpu.add(nb, xb.data());
        int64_t nonEmpty = 0;
        for (int64_t l = 0; l < nlist; ++l) {
            nonEmpty += gpu.listLength(l) > 0;
        }
        EXPECT_GT(nonEmpty, nlist / 2);

        // The CPU trains its own quantizer the same way: recall of both at nprobe=4
        // against exact search should be close.
        faiss::IndexFlat* cq = new faiss::IndexFlat(d, m);
        faiss::IndexIVFFlat cpu(cq, d, size_t(nlist), m);
        cpu.own_fields = true;
        cpu.train(nb, xb.data());
        cpu.add(nb, xb.data());
        faiss::IndexFlat exact(d, m);
        exact.add(nb, xb.data());
        std::vector<float> gtD(nq * k), D(nq * k);
        std::vector<int64_t> gtI(nq * k), I(nq * k), cI(nq * k);
        exact.search(nq, xq.data(), k, gtD.data(), gtI.data());
        cpu.nprobe = gpu.nprobe = 4;
        gpu.search(nq, xq.data(), k, D.data(), I.data());
        cpu.search(nq, xq.data(), k, D.data(), cI.data());
        auto recall = [&](const std::vector<int64_t>& r) {
            int64_t hit = 0;
            for (int64_t q = 0; q < nq; ++q) {
                std::set<int64_t> t(gtI.begin() + q * k, gtI.begin() + (q + 1) * k);
                for (int j = 0; j < k; ++j) {
                    hit += t.count(r[q * k + j]);
                }
            }
            return double(hit) / double(nq * k);
        };
        EXPECT_GE(recall(I), recall(cI) - 0.05);
        if (m == faiss::METRIC_L2) {
            EXPECT_GE(recall(I), 0.8);
        }
    }
}

TEST(GpuIndexIVFFlat, SearchParametersOverrideNprobe) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 20;
    const int64_t nb = 5000, nlist = 50, nq = 30;
    auto xb = datasets::uniform(nb, d, 1);
    auto xq = datasets::uniform(nq, d, 2);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(nb, xb.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    std::vector<float> D1(nq * k), D2(nq * k);
    std::vector<int64_t> I1(nq * k), I2(nq * k);
    gpu.nprobe = 7;
    gpu.search(nq, xq.data(), k, D1.data(), I1.data());
    gpu.nprobe = 1;
    faiss::SearchParametersIVF params;
    params.nprobe = 7;
    gpu.search(nq, xq.data(), k, D2.data(), I2.data(), &params);
    EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
    // Plain SearchParameters: the member nprobe.
    faiss::SearchParameters plain;
    gpu.search(nq, xq.data(), k, D2.data(), I2.data(), &plain);
    gpu.search(nq, xq.data(), k, D1.data(), I1.data());
    EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
}

TEST(GpuIndexIVFFlat, SmallBudgetsGiveTheSameResults) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources small(rc);
    const int d = 32, k = 100;
    const int64_t nb = 20000, nlist = 100, nq = 10000;
    auto xb = datasets::uniform(nb, d, 3);
    auto xq = datasets::uniform(nq, d, 4);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(nb, xb.data());
    GpuIndexIVFFlatConfig cfg;
    cfg.pageBytes = size_t(1) << 20;
    GpuIndexIVFFlat a(res, cpu.get()), b(small, cpu.get(), cfg);
    a.nprobe = b.nprobe = 20;
    EXPECT_LT(GpuIndexIVFFlatAccess::plan(b, nq, k, 20).queryTile, nq);
    std::vector<float> D1(nq * k), D2(nq * k);
    std::vector<int64_t> I1(nq * k), I2(nq * k);
    a.search(nq, xq.data(), k, D1.data(), I1.data());
    b.search(nq, xq.data(), k, D2.data(), I2.data());
    // Other GEMM tile shapes may round coarse distances differently: skip coarse ties.
    EXPECT_EQ(
            compareExact(D1, I1, D2, I2, nq, k, coarseTies(*cpu->quantizer, nq, xq.data(), 20)), 0);
}

// The coarse search on each product: kAuto takes 3xTF32 from 1024 queries on devices
// with TF32 (8.0 and newer), FP32 below; each forced one gives FAISS CPU's results
// (queries whose nprobe-th centroid ties the next to 1e-4 are skipped, as everywhere).
TEST(GpuIndexIVFFlat, CoarsePrecisionsMatchCpu) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = testSeed();
    FlatSearchInput coarse;
    coarse.nb = 256;
    coarse.d = 64;
    for (int64_t nq : {int64_t(100), int64_t(2048)}) {
        coarse.nq = nq;
        const bool tf32 = nq >= 1024 && res.computeCapabilityMajor() >= 8;
        EXPECT_EQ(
                ivfCoarsePrecision(res, coarse, 8),
                tf32 ? GpuFlatPrecision::kTF32x3 : GpuFlatPrecision::kFloat32)
                << "nq=" << nq;
    }
    // Under compute-sanitizer the fewest queries kAuto takes 3xTF32 for, over a tenth of
    // the vectors.
    const int64_t nb = smallUnderSanitizer(30000, 3000), nq = smallUnderSanitizer(2048, 1024);
    for (GpuFlatPrecision p :
         {GpuFlatPrecision::kAuto, GpuFlatPrecision::kFloat32, GpuFlatPrecision::kTF32x3}) {
        SCOPED_TRACE("coarse precision " + std::to_string(int(p)));
        for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
            runCase(res, {nb, nq, 64, 256, 8, 10, m, seed + 11, false}, {}, p);
        }
    }
}

// A budget too small for 3xTF32's operand splits: kAuto searches in FP32, a forced
// 3xTF32 is refused with a clear error and the index answers as before afterwards.
TEST(GpuIndexIVFFlat, CoarseSplitsRespectSmallBudgets) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources small(rc);
    const int d = 1024, k = 10;
    const int64_t nb = 4000, nlist = 64, nq = 2048;
    auto xb = datasets::uniform(nb, d, 21);
    auto xq = datasets::uniform(nq, d, 22);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(nb, xb.data());
    cpu->nprobe = 4;
    std::vector<float> refD(nq * k), D(nq * k);
    std::vector<int64_t> refI(nq * k), I(nq * k);
    cpu->search(nq, xq.data(), k, refD.data(), refI.data());
    const auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), 4);

    GpuIndexIVFFlat gpu(small, cpu.get());
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
    gpu.coarsePrecision = GpuFlatPrecision::kTF32x3;
    try {
        gpu.search(nq, xq.data(), k, D.data(), I.data());
        FAIL() << "3xTF32 splits accepted in a 16 MiB budget";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
    }
    gpu.coarsePrecision = GpuFlatPrecision::kAuto;
    std::fill(D.begin(), D.end(), 0.f);
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
}

TEST(GpuIndexIVFFlat, ReconstructLikeFaiss) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 9;
    const int64_t nlist = 8, nb = 500;
    auto xb = datasets::uniform(nb, d, 8);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    gpu.add(nb, xb.data()); // sequential ids 0..499
    std::vector<float> row(d);
    gpu.reconstruct(123, row.data());
    EXPECT_EQ(0, std::memcmp(row.data(), xb.data() + 123 * d, d * sizeof(float)));
    EXPECT_THROW(gpu.reconstruct(nb, row.data()), faiss::FaissException);
    EXPECT_THROW(gpu.reconstruct(-5, row.data()), faiss::FaissException);

    // reconstruct_n over [490, 510): rows 10..19 (ids not stored) stay untouched.
    std::vector<float> out(20 * d, -7.f);
    gpu.reconstruct_n(490, 20, out.data());
    EXPECT_EQ(0, std::memcmp(out.data(), xb.data() + 490 * d, 10 * d * sizeof(float)));
    for (int64_t i = 10 * d; i < 20 * d; ++i) {
        EXPECT_EQ(out[i], -7.f);
    }
    // An id stored twice names no single vector.
    std::vector<int64_t> dup = {42};
    gpu.add_with_ids(1, xb.data(), dup.data());
    EXPECT_THROW(gpu.reconstruct(42, row.data()), faiss::FaissException);
    gpu.reconstruct(43, row.data());
    EXPECT_EQ(0, std::memcmp(row.data(), xb.data() + 43 * d, d * sizeof(float)));
}

namespace {

const char* kernelName(kernels::IvfQueryScanKernel kernel) {
    return kernel == kernels::IvfQueryScanKernel::kWarp ? "warp kernel" : "block kernel";
}

/// The per-query scan's two kernels, each forced on one index of lists of very different
/// lengths (a list holds half the vectors; ten lists are empty, and the L2 queries put
/// on their centroids probe nothing else): the same results bit for bit, and the
/// CPU's within 1e-4.
void expectQueryScanKernelsIdentical(GpuResources& res, int d, faiss::MetricType m, uint64_t seed) {
    SCOPED_TRACE(
            testing::Message() << "d=" << d << " metric=" << (m == faiss::METRIC_L2 ? "L2" : "IP")
                               << " seed=" << seed);
    const int64_t nlist = 40, nb = smallUnderSanitizer(d >= 128 ? 8000 : 20000, 2000),
                  nq = smallUnderSanitizer(400, 40);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> noise(0.f, 0.01f);
    auto cent = datasets::uniform(nlist, d, rng());
    // Lists 30..39 stay empty: their centroids are far from every vector (for inner
    // product, below every vector's products with the other centroids).
    const float away = m == faiss::METRIC_L2 ? 100.f : -100.f;
    for (int64_t l = 30; l < nlist; ++l) {
        for (int j = 0; j < d; ++j) {
            cent[l * d + j] += away;
        }
    }
    auto xb = datasets::uniform(nb, d, rng());
    for (int64_t i = 0; i < nb / 2; ++i) {
        for (int j = 0; j < d; ++j) {
            xb[i * d + j] = cent[3 * d + j] + noise(rng);
        }
    }
    // A quarter of the queries near the long list, 8 on an empty list's centroid.
    auto xq = datasets::uniform(nq, d, rng());
    for (int64_t i = 0; i < nq / 4; ++i) {
        for (int j = 0; j < d; ++j) {
            xq[i * d + j] = cent[3 * d + j] + noise(rng);
        }
    }
    for (int64_t i = nq / 4; i < nq / 4 + 8; ++i) {
        std::copy(cent.begin() + 35 * d, cent.begin() + 36 * d, xq.begin() + i * d);
    }
    auto cpu = cpuIvf(d, nlist, m, cent.data());
    cpu->add(nb, xb.data());
    if (m == faiss::METRIC_L2) {
        ASSERT_GE(cpu->invlists->list_size(3), size_t(nb / 2));
        ASSERT_EQ(cpu->invlists->list_size(35), 0u);
    }
    GpuIndexIVFFlatConfig cfg;
    cfg.scanPath = IvfScanPath::kPerQuery;
    GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
    for (int64_t nprobe : {int64_t(1), int64_t(3)}) {
        cpu->nprobe = gpu.nprobe = size_t(nprobe);
        const auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), nprobe);
        for (int k : {1, 4, 10, 32}) {
            SCOPED_TRACE(testing::Message() << "nprobe=" << nprobe << " k=" << k);
            std::vector<float> refD(nq * k);
            std::vector<int64_t> refI(nq * k);
            cpu->search(nq, xq.data(), k, refD.data(), refI.data());
            infForMissing(refD, refI, m);
            std::vector<float> D[2];
            std::vector<int64_t> I[2];
            const kernels::IvfQueryScanKernel forced[2] = {
                    kernels::IvfQueryScanKernel::kBlock, kernels::IvfQueryScanKernel::kWarp};
            for (int i = 0; i < 2; ++i) {
                SCOPED_TRACE(kernelName(forced[i]));
                GpuIndexIVFFlatAccess::setQueryScanKernel(gpu, forced[i]);
                const IvfSearchPlan plan = GpuIndexIVFFlatAccess::plan(gpu, nq, k, nprobe);
                ASSERT_FALSE(plan.listMajor);
                ASSERT_EQ(plan.queryKernel, forced[i]);
                // Several candidate slots a query: the scan's slots go through the merge.
                ASSERT_GT(plan.chunksPerQuery, 1);
                D[i].assign(nq * k, 12345.f);
                I[i].assign(nq * k, 777);
                gpu.search(nq, xq.data(), k, D[i].data(), I[i].data());
                EXPECT_EQ(compareKnnRows(refD, refI, D[i], I[i], nq, k, skip, 1e-4f, 1e-4f), 0);
            }
            EXPECT_EQ(compareExact(D[0], I[0], D[1], I[1], nq, k), 0);
            if (m == faiss::METRIC_L2) {
                // The queries on the empty list's centroid: every result missing.
                for (int64_t q = nq / 4; q < nq / 4 + 8; ++q) {
                    for (int j = 0; j < k; ++j) {
                        EXPECT_EQ(I[1][q * k + j], -1) << "query " << q;
                        EXPECT_EQ(D[1][q * k + j], std::numeric_limits<float>::infinity());
                    }
                }
            }
        }
    }
}

} // namespace

// The per-query scan's warp kernel (a warp per (query, chunk), the best k in registers)
// computes the block kernel's distances with the same code and selects the same keys:
// forced on the same index, both give the same results bit for bit.
TEST(GpuIndexIVFFlat, QueryScanWarpKernelMatchesBlockKernel) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = testSeed();
    for (int d : {13, 128}) {
        for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
            expectQueryScanKernelsIdentical(res, d, m, seed + uint64_t(d));
        }
    }
}

// The id filter on both per-query kernels: a filtered vector is never a candidate, and
// the two kernels agree bit for bit.
TEST(GpuIndexIVFFlat, QueryScanWarpKernelFiltersLikeBlockKernel) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    const int d = 13;
    const int64_t nb = smallUnderSanitizer(20000, 2000), nq = smallUnderSanitizer(300, 30),
                  nlist = 30, nprobe = 3;
    auto xb = datasets::uniform(nb, d, seed);
    auto xq = datasets::uniform(nq, d, seed + 1);
    auto cent = datasets::uniform(nlist, d, seed + 2);
    // The even ids of the middle half (a selector class faiss does not know).
    struct EvenMiddle : faiss::IDSelector {
        int64_t lo = 0, hi = 0;
        bool is_member(int64_t id) const override {
            return id % 2 == 0 && id >= lo && id < hi;
        }
    } sel;
    sel.lo = nb / 4;
    sel.hi = 3 * nb / 4;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto cpu = cpuIvf(d, nlist, m, cent.data());
        cpu->add(nb, xb.data());
        GpuIndexIVFFlatConfig cfg;
        cfg.scanPath = IvfScanPath::kPerQuery;
        GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
        const auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), nprobe);
        for (int k : {4, 32}) {
            SCOPED_TRACE(testing::Message() << "metric=" << int(m) << " k=" << k);
            faiss::SearchParametersIVF params;
            params.nprobe = size_t(nprobe);
            params.sel = &sel;
            std::vector<float> refD(nq * k);
            std::vector<int64_t> refI(nq * k);
            cpu->search(nq, xq.data(), k, refD.data(), refI.data(), &params);
            infForMissing(refD, refI, m);
            std::vector<float> D[2];
            std::vector<int64_t> I[2];
            const kernels::IvfQueryScanKernel forced[2] = {
                    kernels::IvfQueryScanKernel::kBlock, kernels::IvfQueryScanKernel::kWarp};
            for (int i = 0; i < 2; ++i) {
                SCOPED_TRACE(kernelName(forced[i]));
                GpuIndexIVFFlatAccess::setQueryScanKernel(gpu, forced[i]);
                D[i].assign(nq * k, 12345.f);
                I[i].assign(nq * k, 777);
                gpu.search(nq, xq.data(), k, D[i].data(), I[i].data(), &params);
                EXPECT_EQ(compareKnnRows(refD, refI, D[i], I[i], nq, k, skip, 1e-4f, 1e-4f), 0);
                for (int64_t id : I[i]) {
                    ASSERT_TRUE(id == -1 || sel.is_member(id)) << id;
                }
            }
            EXPECT_EQ(compareExact(D[0], I[0], D[1], I[1], nq, k), 0);
        }
    }
}
