// GpuIndexFlat on bad input, copies and memory exhaustion: errors are
// faiss::FaissException and the index is left as it was.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_runtime_api.h>
#include <faiss/IndexFlat.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexFlat.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;

using test::DeviceMemoryHog;
using test::expectSameSearch;
using test::snapshotSearch;

TEST(GpuIndexFlatErrors, BadInputsThrowAndLeaveIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 16, k = 4;
    GpuIndexFlat gpu(res, d);
    auto xb = datasets::uniform(200, d, 1);
    gpu.add(200, xb.data());
    auto q = datasets::uniform(1, d, 2);
    auto before = snapshotSearch(gpu, q, k);

    std::vector<float> D(10 * 3000);
    std::vector<int64_t> I(10 * 3000);
    EXPECT_THROW(gpu.add(0, xb.data()), faiss::FaissException);
    EXPECT_THROW(gpu.add(-1, xb.data()), faiss::FaissException);
    EXPECT_THROW(gpu.add(5, nullptr), faiss::FaissException);
    std::vector<float> nan = xb;
    nan[3 * d + 1] = std::nanf("");
    EXPECT_THROW(gpu.add(10, nan.data()), faiss::FaissException);
    std::vector<int64_t> ids(10, 7);
    EXPECT_THROW(gpu.add_with_ids(10, xb.data(), ids.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(0, q.data(), k, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, q.data(), 0, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, q.data(), 2049, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, nullptr, k, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, q.data(), k, nullptr, I.data()), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, q.data(), k, D.data(), nullptr), faiss::FaissException);
    EXPECT_THROW(gpu.reconstruct(200, D.data()), faiss::FaissException);
    EXPECT_THROW(gpu.reconstruct(-1, D.data()), faiss::FaissException);
    EXPECT_THROW(gpu.reconstruct_n(190, 11, D.data()), faiss::FaissException);
    EXPECT_THROW(gpu.reconstruct(0, nullptr), faiss::FaissException);

    float* devPtr = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&devPtr), sizeof(float) * d * 4), cudaSuccess);
    EXPECT_THROW(gpu.add(4, devPtr), faiss::FaissException);
    EXPECT_THROW(gpu.search(1, devPtr, k, D.data(), I.data()), faiss::FaissException);
    cudaFree(devPtr);

    expectSameSearch(before, snapshotSearch(gpu, q, k));
}

TEST(GpuIndexFlatErrors, BadConstruction) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    EXPECT_THROW(GpuIndexFlat(res, 0), faiss::FaissException);
    EXPECT_THROW(GpuIndexFlat(res, 8, faiss::METRIC_L1), faiss::FaissException);
    EXPECT_THROW(GpuIndexFlat(res, nullptr), faiss::FaissException);
}

TEST(GpuIndexFlatErrors, DeviceMemoryExhaustedLeavesIndexUnchanged) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 256, k = 3;
    GpuIndexFlat gpu(res, d);
    auto xb = datasets::uniform(1000, d, 5);
    gpu.add(1000, xb.data());
    auto q = datasets::uniform(1, d, 6);
    auto before = snapshotSearch(gpu, q, k);

    const int64_t n = (int64_t(2) << 30) / (d * sizeof(float)); // 2 GiB of vectors
    std::vector<float> big(size_t(n) * d, 0.5f);
    {
        DeviceMemoryHog hog(res, size_t(512) << 20);
        ASSERT_TRUE(hog.holding());
        EXPECT_THROW(gpu.add(n, big.data()), faiss::FaissException);
    }

    expectSameSearch(before, snapshotSearch(gpu, q, k));
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
        faiss::IndexFlat back(5, m == faiss::METRIC_L2 ? faiss::METRIC_INNER_PRODUCT
                                                     : faiss::METRIC_L2);
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
