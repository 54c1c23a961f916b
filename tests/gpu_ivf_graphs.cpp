// GpuIndexIVFFlat's small searches replayed from CUDA graphs (impl/SearchGraphs.h):
// the first search of a shape runs kernel by kernel, the second is captured, later ones
// replay it. Every call must give FAISS CPU's answers for the queries of that call and
// the index contents of that moment.
#include <algorithm>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexIVFFlat.h>

#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// Searches gpu and a CPU index holding the same lists with the same nprobe; returns
/// the GPU's results after checking them.
void expectMatchesCpu(
        GpuIndexIVFFlat& gpu,
        const faiss::IndexIVFFlat& cpu,
        int64_t nq,
        const std::vector<float>& xq,
        int k,
        std::vector<float>* outD = nullptr,
        std::vector<int64_t>* outI = nullptr) {
    std::vector<float> refD(nq * k), D(nq * k, 12345.f);
    std::vector<int64_t> refI(nq * k), I(nq * k, 777);
    faiss::SearchParametersIVF params;
    params.nprobe = gpu.nprobe;
    cpu.search(nq, xq.data(), k, refD.data(), refI.data(), &params);
    infForMissing(refD, refI, cpu.metric_type);
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    const auto skip = coarseTies(*cpu.quantizer, nq, xq.data(), int64_t(gpu.nprobe));
    EXPECT_EQ(compareKnnRows(refD, refI, D, I, nq, k, skip, 1e-4f, 1e-4f), 0);
    if (outD) {
        *outD = D;
        *outI = I;
    }
}

/// A CPU IVF index over nb uniform vectors, with nlist uniform centroids (L2).
std::unique_ptr<faiss::IndexIVFFlat> uniformIvf(
        int d,
        int64_t nb,
        int64_t nlist,
        std::mt19937_64& rng) {
    auto xb = datasets::uniform(nb, d, rng());
    auto cent = datasets::uniform(nlist, d, rng());
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, cent.data());
    cpu->add(nb, xb.data());
    return cpu;
}

} // namespace

TEST(GpuIvfSearchGraphs, EveryCallMatchesCpuOnEveryPath) {
    FAISS_EXT_REQUIRE_GPU();
    // A graph may hold 1/16 of the temp budget: 4 GiB lets every shape here (up to 1024
    // queries at k 100) be captured, so that each one's replay is checked.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(4) << 30;
    GpuResources res(rc);
    std::mt19937_64 rng(testSeed());
    // Under compute-sanitizer a tenth of the vectors and three shapes, each k once: one
    // query at k 1 and at k 100, a batch of 256 (above 128) at k 10.
    const int d = 24;
    const int64_t nb = smallUnderSanitizer(20000, 2000), nlist = 64;
    std::vector<std::pair<int64_t, int>> shapes;
    if (underSanitizer()) {
        shapes = {{1, 1}, {1, 100}, {256, 10}};
    } else {
        for (int64_t nq : {int64_t(1), int64_t(16), int64_t(128), int64_t(1024)}) {
            for (int k : {1, 10, 100}) {
                shapes.emplace_back(nq, k);
            }
        }
    }
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        auto xb = datasets::uniform(nb, d, rng());
        auto cent = datasets::uniform(nlist, d, rng());
        auto cpu = cpuIvf(d, nlist, m, cent.data());
        cpu->add(nb, xb.data());
        GpuIndexIVFFlatConfig list, heap;
        list.scanPath = IvfScanPath::kListMajor;
        heap.mergePath = IvfMergePath::kHeap;
        for (const GpuIndexIVFFlatConfig& cfg : {GpuIndexIVFFlatConfig(), list, heap}) {
            GpuIndexIVFFlat gpu(res, cpu.get(), cfg);
            for (const auto& [nq, k] : shapes) {
                SCOPED_TRACE(
                        "metric " + std::to_string(int(m)) + " nq " + std::to_string(nq) + " k " +
                        std::to_string(k) + " scan " + std::to_string(int(cfg.scanPath)) +
                        " merge " + std::to_string(int(cfg.mergePath)));
                gpu.nprobe = size_t(1 + rng() % 12);
                // Direct, captured, replayed; each with queries of its own, so a
                // replay that read stale queries shows.
                std::vector<float> D1, D3;
                std::vector<int64_t> I1, I3;
                auto xq = datasets::uniform(nq, d, rng());
                expectMatchesCpu(gpu, *cpu, nq, xq, k, &D1, &I1);
                expectMatchesCpu(gpu, *cpu, nq, datasets::uniform(nq, d, rng()), k);
                expectMatchesCpu(gpu, *cpu, nq, xq, k, &D3, &I3);
                EXPECT_EQ(compareExact(D1, I1, D3, I3, nq, k), 0);
            }
            // Every shape seen three times: every one of them held as a graph.
            EXPECT_EQ(gpu.searchGraphCount(), shapes.size());
        }
    }
}

TEST(GpuIvfSearchGraphs, ChangesOfTheIndexAreSeenBySmallSearches) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int d = 16, k = 20;
    const int64_t nlist = 32, nq = 4;
    auto cent = datasets::uniform(nlist, d, rng());
    faiss::IndexFlatL2 quantizer(d);
    quantizer.add(nlist, cent.data());
    GpuIndexIVFFlat gpu(res, d, nlist, faiss::METRIC_L2);
    gpu.setQuantizer(&quantizer);
    gpu.nprobe = 4;
    auto xq = datasets::uniform(nq, d, rng());
    // Each round adds vectors, then searches the same shape three times against the
    // lists as they are now (copied back to the CPU).
    for (int64_t batch : {int64_t(3000), int64_t(50), int64_t(7000)}) {
        auto x = datasets::uniform(batch, d, rng());
        gpu.add(batch, x.data());
        faiss::IndexIVFFlat now;
        gpu.copyTo(&now);
        for (int call = 0; call < 3; ++call) {
            SCOPED_TRACE("ntotal " + std::to_string(gpu.ntotal) + " call " + std::to_string(call));
            expectMatchesCpu(gpu, now, nq, xq, k);
        }
    }
    EXPECT_GE(gpu.searchGraphCount(), 1u);
    // Removing ids, then a reset: the next searches see it.
    faiss::IDSelectorRange evens(0, gpu.ntotal / 2);
    gpu.remove_ids(evens);
    faiss::IndexIVFFlat after;
    gpu.copyTo(&after);
    for (int call = 0; call < 3; ++call) {
        expectMatchesCpu(gpu, after, nq, xq, k);
    }
    gpu.reset();
    std::vector<float> D(nq * k);
    std::vector<int64_t> I(nq * k);
    for (int call = 0; call < 3; ++call) {
        gpu.search(nq, xq.data(), k, D.data(), I.data());
        EXPECT_TRUE(std::all_of(I.begin(), I.end(), [](int64_t i) { return i == -1; }));
    }
}

TEST(GpuIvfSearchGraphs, HoldsAtMostSixteenShapesAndCanBeTurnedOff) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int d = 8, k = 5;
    auto cpu = uniformIvf(d, 5000, 16, rng);
    GpuIndexIVFFlat gpu(res, cpu.get());
    gpu.nprobe = 3;
    for (int64_t nq = 1; nq <= 20; ++nq) {
        auto xq = datasets::uniform(nq, d, rng());
        expectMatchesCpu(gpu, *cpu, nq, xq, k);
        expectMatchesCpu(gpu, *cpu, nq, xq, k);
        EXPECT_EQ(gpu.searchGraphCount(), size_t(std::min<int64_t>(nq, 16)));
    }
    // Searches above 1024 queries are not captured, nor are any once turned off.
    auto big = datasets::uniform(1025, d, rng());
    expectMatchesCpu(gpu, *cpu, 1025, big, k);
    expectMatchesCpu(gpu, *cpu, 1025, big, k);
    gpu.useSearchGraphs = false;
    auto xq = datasets::uniform(30, d, rng());
    expectMatchesCpu(gpu, *cpu, 30, xq, k);
    expectMatchesCpu(gpu, *cpu, 30, xq, k);
    EXPECT_EQ(gpu.searchGraphCount(), 16u);
}

// The graphs held keep their temporaries within the temp budget together: shapes of a
// quarter of it at most are captured, and the least recently used make room.
TEST(GpuIvfSearchGraphs, HeldGraphsStayWithinTheTempBudget) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    std::mt19937_64 rng(testSeed());
    const int d = 8, k = 5;
    auto cpu = uniformIvf(d, 20000, 1024, rng);
    GpuIndexIVFFlat gpu(res, cpu.get());
    gpu.nprobe = 3;
    // 300-480 queries: each search's coarse rows alone are 2.4-3.9 MB (nq x nlist x 8),
    // under a quarter of the budget; four of them fill it.
    for (int64_t nq = 300; nq <= 480; nq += 20) {
        auto xq = datasets::uniform(nq, d, rng());
        expectMatchesCpu(gpu, *cpu, nq, xq, k);
        expectMatchesCpu(gpu, *cpu, nq, xq, k);
        EXPECT_LE(gpu.searchGraphBytes(), rc.tempMemoryBytes);
        EXPECT_GE(gpu.searchGraphCount(), 1u);
    }
    EXPECT_LE(gpu.searchGraphCount(), 6u);
    // A shape above a quarter of the budget is not held.
    const size_t before = gpu.searchGraphCount();
    auto big = datasets::uniform(1000, d, rng());
    expectMatchesCpu(gpu, *cpu, 1000, big, k);
    expectMatchesCpu(gpu, *cpu, 1000, big, k);
    EXPECT_LE(gpu.searchGraphCount(), before);
}
