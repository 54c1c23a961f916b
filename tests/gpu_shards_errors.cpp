// Sharded and replicated faiss_ext indexes refuse what one GpuIndex refuses, before any
// part is called, so every part stays as it was; and refuse parts that do not fit.
#include <cmath>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/gpu_multiple.h>

#include "ShardsTestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 16;
constexpr int64_t kNb = 1001;

class GpuShardsErrors : public ::testing::TestWithParam<PartsLayout> {};

/// The calls every wrapper refuses, each checked to leave the index as it was.
void expectRefusalsLeaveItUnchanged(faiss::Index& index, uint64_t seed) {
    const auto query = clusteredVectors(1, kD, seed, 7);
    const SearchSnapshot before = snapshotSearch(index, query, 5);
    auto unchanged = [&] { expectSameSearch(before, snapshotSearch(index, query, 5)); };

    auto x = clusteredVectors(10, kD, seed, 8);
    x[9 * kD + 3] = std::nanf("");
    EXPECT_THROW(index.add(10, x.data()), faiss::FaissException);
    unchanged();
    x[9 * kD + 3] = INFINITY;
    EXPECT_THROW(index.add(10, x.data()), faiss::FaissException);
    unchanged();
    EXPECT_THROW(index.add(0, x.data()), faiss::FaissException);
    EXPECT_THROW(index.add(10, nullptr), faiss::FaissException);
    unchanged();

    std::vector<float> D(10);
    std::vector<int64_t> I(10);
    EXPECT_THROW(index.search(1, query.data(), 0, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index.search(1, query.data(), 2049, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index.search(0, query.data(), 5, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index.search(1, nullptr, 5, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index.search(1, query.data(), 5, nullptr, I.data()), faiss::FaissException);

    // Device arrays are refused: the parts may be on other devices.
    float* deviceQuery = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&deviceQuery), kD * sizeof(float)), cudaSuccess);
    EXPECT_THROW(index.search(1, deviceQuery, 5, D.data(), I.data()), faiss::FaissException);
    EXPECT_THROW(index.add(1, deviceQuery), faiss::FaissException);
    ASSERT_EQ(cudaFree(deviceQuery), cudaSuccess);
    unchanged();

    // A query with a NaN gets only missing results, as from one index.
    expectNanQueryGivesMissing(index, 5, seed);
}

} // namespace

TEST_P(GpuShardsErrors, FlatRefusesWhatOneIndexRefuses) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    GpuIndexShards shards(GetParam().config(), flatParts(kD));
    shards.add(kNb, xb.data());
    expectRefusalsLeaveItUnchanged(shards, seed);
    // Sequential ids: no caller ids, and (as faiss::IndexShards) one add only.
    std::vector<int64_t> ids(10, 1);
    const auto query = clusteredVectors(1, kD, seed, 7);
    const SearchSnapshot before = snapshotSearch(shards, query, 5);
    EXPECT_THROW(shards.add_with_ids(10, xb.data(), ids.data()), faiss::FaissException);
    EXPECT_THROW(shards.add(10, xb.data()), faiss::FaissException);
    expectSameSearch(before, snapshotSearch(shards, query, 5));

    GpuIndexReplicas replicas(GetParam().config(), flatParts(kD));
    replicas.add(kNb, xb.data());
    expectRefusalsLeaveItUnchanged(replicas, seed);
    EXPECT_THROW(replicas.add_with_ids(10, xb.data(), ids.data()), faiss::FaissException);
    EXPECT_EQ(replicas.ntotal, kNb);
}

TEST_P(GpuShardsErrors, IvfRefusesWhatOneIndexRefuses) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed() + 1;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    std::vector<int64_t> ids(kNb);
    for (int64_t i = 0; i < kNb; ++i) {
        ids[size_t(i)] = 10 * i;
    }
    GpuIndexShards shards(GetParam().config(), ivfFlatParts(kD, 16));
    GpuIndexReplicas replicas(GetParam().config(), ivfFlatParts(kD, 16));
    for (faiss::Index* index :
         {static_cast<faiss::Index*>(&shards), static_cast<faiss::Index*>(&replicas)}) {
        std::vector<float> D(5);
        std::vector<int64_t> I(5);
        EXPECT_THROW(index->search(1, xb.data(), 5, D.data(), I.data()), faiss::FaissException);
        EXPECT_THROW(index->add(kNb, xb.data()), faiss::FaissException); // not trained
        EXPECT_EQ(index->ntotal, 0);
        index->train(kNb, xb.data());
        index->add_with_ids(kNb, xb.data(), ids.data());
        expectRefusalsLeaveItUnchanged(*index, seed);

        const auto query = clusteredVectors(1, kD, seed, 7);
        const SearchSnapshot before = snapshotSearch(*index, query, 5);
        std::vector<int64_t> badIds(ids.begin(), ids.begin() + 10);
        badIds[9] = -1;
        EXPECT_THROW(index->add_with_ids(10, xb.data(), badIds.data()), faiss::FaissException);
        EXPECT_THROW(index->add_with_ids(10, xb.data(), nullptr), faiss::FaissException);
        EXPECT_THROW(index->train(kNb, xb.data()), faiss::FaissException); // not empty
        expectSameSearch(before, snapshotSearch(*index, query, 5));
    }
}

TEST_P(GpuShardsErrors, PartsThatDoNotFitAreRefused) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const GpuPartsConfig parts = GetParam().config();
    auto none = [](GpuResources&, int) { return std::unique_ptr<GpuIndex>(); };
    EXPECT_THROW(GpuIndexShards(parts, none), faiss::FaissException);
    auto mixedTypes = [](GpuResources& r, int i) -> std::unique_ptr<GpuIndex> {
        if (i == 0) {
            return std::make_unique<GpuIndexFlat>(r, kD);
        }
        return std::make_unique<GpuIndexIVFFlat>(r, kD, 4);
    };
    EXPECT_THROW(GpuIndexShards(parts, mixedTypes), faiss::FaissException);
    auto mixedDims = [](GpuResources& r, int i) -> std::unique_ptr<GpuIndex> {
        return std::make_unique<GpuIndexFlat>(r, kD + i);
    };
    EXPECT_THROW(GpuIndexReplicas(parts, mixedDims), faiss::FaissException);
    auto mixedMetrics = [](GpuResources& r, int i) -> std::unique_ptr<GpuIndex> {
        return std::make_unique<GpuIndexFlat>(
                r, kD, i == 0 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT);
    };
    EXPECT_THROW(GpuIndexShards(parts, mixedMetrics), faiss::FaissException);
}

INSTANTIATE_TEST_SUITE_P(
        Layouts,
        GpuShardsErrors,
        ::testing::ValuesIn(partsLayouts()),
        [](const ::testing::TestParamInfo<PartsLayout>& info) { return info.param.name; });
