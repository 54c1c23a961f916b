// GpuIndexFlat's own error cases and copies to and from faiss::IndexFlat (bad input
// and memory exhaustion, which every index handles alike, are gpu_index_contract.cpp).
#include <cstring>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexFlat.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;

TEST(GpuIndexFlatErrors, BadConstruction) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    EXPECT_THROW(GpuIndexFlat(res, 0), faiss::FaissException);
    EXPECT_THROW(GpuIndexFlat(res, 8, faiss::METRIC_L1), faiss::FaissException);
    EXPECT_THROW(GpuIndexFlat(res, nullptr), faiss::FaissException);
}

TEST(GpuIndexFlatErrors, CopyRoundTripIntoGarbageTargets) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        const int d = 24;
        faiss::IndexFlat cpu(d, m);
        auto xb = datasets::uniform(300, d, 9);
        cpu.add(300, xb.data());

        // Target GPU index of another dimension and metric, with data in it.
        GpuIndexFlat gpu(res, 7, faiss::METRIC_L2);
        auto junk = datasets::uniform(50, 7, 10);
        gpu.add(50, junk.data());
        gpu.copyFrom(&cpu);
        EXPECT_EQ(gpu.d, d);
        EXPECT_EQ(gpu.metric_type, m);
        EXPECT_EQ(gpu.ntotal, 300);
        std::vector<float> row(d);
        gpu.reconstruct(123, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), xb.data() + 123 * d, d * sizeof(float)));

        // Back into a CPU index of another dimension and metric, with data in it.
        faiss::IndexFlat back(
                5, m == faiss::METRIC_L2 ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2);
        auto junk5 = datasets::uniform(20, 5, 11);
        back.add(20, junk5.data());
        gpu.copyTo(&back);
        EXPECT_EQ(back.d, d);
        EXPECT_EQ(back.metric_type, m);
        ASSERT_EQ(back.ntotal, 300);
        EXPECT_EQ(0, std::memcmp(back.get_xb(), xb.data(), xb.size() * sizeof(float)));

        std::vector<float> all(300 * d);
        gpu.reconstruct_n(0, 300, all.data());
        EXPECT_EQ(all, xb);

        gpu.reset();
        EXPECT_EQ(gpu.ntotal, 0);
        EXPECT_EQ(gpu.deviceMemoryBytes(), 0u);
    }
}
