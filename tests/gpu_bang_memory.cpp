// GpuIndexBang::estimateMemory on the device: the built index's figures exactly, the
// build's peak (the stream-ordered pool's high-water mark) bounded from above and not by
// much, and an add whose estimate exceeds what the device has refused before any work.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>

#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

TEST(GpuIndexBangMemory, EstimateMatchesTheIndexAndBoundsTheBuildPeak) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    struct Case {
        const char* name;
        int64_t n;
        int d;
        faiss::MetricType metric;
        int M;
        BangVectorPlacement placement;
        int64_t lists;
        int passes;
        BangVectorStorage storage = BangVectorStorage::kAuto;
    };
    // Under compute-sanitizer a fortieth of the vectors, in pages of 1 MiB (the least): the
    // estimate still exceeds the temporaries and a page, which the lower bound takes off
    // (not below ~850 vectors). There one refinement pass where there are two (any number
    // above 0 gives the same estimate), and PQ with M = 1: two codebooks to train for
    // inner product (25 k-means iterations each) instead of nine.
    const int64_t n = smallUnderSanitizer(40000, 1000), nIvf = smallUnderSanitizer(60000, 1500);
    const int passes = int(smallUnderSanitizer(2, 1)), M = int(smallUnderSanitizer(8, 1));
    const Case cases[] = {
            {"exact candidates", n, 32, faiss::METRIC_L2, 0, BangVectorPlacement::kDevice, 0,
             passes},
            {"IVF candidates", nIvf, 32, faiss::METRIC_L2, 0, BangVectorPlacement::kDevice, 200,
             passes},
            {"PQ, host rows, inner product", n, 32, faiss::METRIC_INNER_PRODUCT, M,
             BangVectorPlacement::kHost, 0, 1},
            {"no passes", n, 48, faiss::METRIC_L2, 0, BangVectorPlacement::kDevice, 0, 0},
            {"exact candidates, bytes", n, 32, faiss::METRIC_L2, 0, BangVectorPlacement::kDevice, 0,
             passes, BangVectorStorage::kBytes},
            {"IVF candidates, bytes", nIvf, 32, faiss::METRIC_L2, 0, BangVectorPlacement::kDevice,
             200, passes, BangVectorStorage::kBytes},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        GpuIndexBangConfig cfg;
        cfg.pageBytes = size_t(smallUnderSanitizer(8, 1)) << 20;
        cfg.pqSubquantizers = c.M;
        cfg.vectorPlacement = c.placement;
        cfg.build.graphDegree = 32;
        cfg.build.candidates = 32;
        cfg.build.candidateLists = c.lists;
        cfg.build.passes = c.passes;
        cfg.vectorStorage = c.storage;
        const bool bytes = c.storage == BangVectorStorage::kBytes;
        datasets::ClusteredSpec spec{c.n, c.d, 100, 0.1f, testSeed() + 90};
        const std::vector<float> x =
                bytes ? byteValued(datasets::clustered(spec, 0)) : datasets::clustered(spec, 0);
        GpuIndexBang index(res, c.d, c.metric, cfg);
        const PoolPeak pool(res);
        index.add(c.n, x.data());
        res.synchronize();
        const uint64_t peak = pool.bytes();
        const BangMemoryEstimate e = GpuIndexBang::estimateMemory(c.n, c.d, c.metric, cfg, rc);
        EXPECT_EQ(index.deviceMemoryBytes(), e.deviceBytes);
        EXPECT_EQ(index.hostMemoryBytes(), e.hostBytes);
        std::printf(
                "%s: build peak %.1f MiB measured, %.1f MiB estimated (%.2fx)\n", c.name,
                peak / 1048576.0, e.buildDeviceBytes / 1048576.0,
                double(e.buildDeviceBytes) / double(peak));
        // An upper bound: the arrays within 10%, the temporaries counted at their caps
        // (bytes: the float conversions too, a page and half the temporaries).
        EXPECT_GE(e.buildDeviceBytes, peak);
        const size_t caps = rc.tempMemoryBytes + cfg.pageBytes +
                (bytes ? cfg.pageBytes + rc.tempMemoryBytes / 2 : 0);
        EXPECT_LE(double(e.buildDeviceBytes - caps), 1.1 * double(peak));
    }
}

TEST(GpuIndexBangMemory, AddRefusesABuildTheDeviceCannotHold) {
    FAISS_EXT_REQUIRE_GPU();
    // Temporaries allowed to take a petabyte: the estimate of any build exceeds the device.
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(1) << 50;
    GpuResources res(rc);
    const int d = 16;
    const std::vector<float> x = datasets::uniform(3000, d, 5);
    GpuIndexBang index(res, d);
    try {
        index.add(3000, x.data());
        ADD_FAILURE() << "the add was not refused";
    } catch (const faiss::FaissException& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("estimateMemory"), std::string::npos) << what;
        EXPECT_NE(what.find("available"), std::string::npos) << what;
    }
    EXPECT_EQ(index.ntotal, 0);
    EXPECT_EQ(index.deviceMemoryBytes(), 0u);
}
