// Sharded and replicated faiss_ext indexes (faiss::IndexShards / IndexReplicas) give
// the results of one index (ties aside), keep ids right across shards, and each shard
// saves and loads. Every layout of ShardsTestUtil.h: two parts on device 0 (any GPU
// machine), and on two devices (skipped with fewer).
#include <algorithm>
#include <memory>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/gpu_multiple.h>
#include <faiss_ext/index_io.h>

#include "ShardsTestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 32;
// Uneven slices; under compute-sanitizer a tenth of the vectors (each Bang shard's
// build is most of the time there).
const int64_t kNb = smallUnderSanitizer(3001, 301);
constexpr int64_t kNq = 101; // uneven query split over replicas
constexpr int kK = 10;
constexpr int64_t kNlist = 32;

class GpuShards : public ::testing::TestWithParam<PartsLayout> {};

std::vector<float> centroidsOf(const GpuIndexIVFFlat& index) {
    faiss::IndexFlat q;
    index.quantizer().copyTo(&q);
    return std::vector<float>(q.get_xb(), q.get_xb() + q.ntotal * q.d);
}

GpuIndexIVFFlat& ivfPart(GpuIndex& part) {
    auto* ivf = dynamic_cast<GpuIndexIVFFlat*>(&part);
    EXPECT_NE(ivf, nullptr);
    return *ivf;
}

double recallAt(const Knn& truth, const Knn& got, int64_t nq, int k) {
    int64_t hits = 0;
    for (int64_t q = 0; q < nq; ++q) {
        auto row = truth.I.begin() + q * k;
        for (int j = 0; j < k; ++j) {
            hits += std::count(row, row + k, got.I[size_t(q * k + j)]);
        }
    }
    return double(hits) / double(nq * k);
}

} // namespace

TEST_P(GpuShards, FlatEqualsOneIndex) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    const auto xq = clusteredVectors(kNq, kD, seed, 1);
    GpuResources res;
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        SCOPED_TRACE("metric " + std::to_string(int(metric)));
        GpuIndexFlat one(res, kD, metric);
        one.add(kNb, xb.data());
        const Knn ref = knnOf(one, xq, kNq, kK);

        GpuIndexShards shards(GetParam().config(), flatParts(kD, metric));
        shards.add(kNb, xb.data());
        EXPECT_EQ(shards.ntotal, kNb);
        EXPECT_EQ(shards.metric_type, metric);
        EXPECT_EQ(shards.shard(0).ntotal, kNb / 2);
        EXPECT_EQ(knnMismatches(ref, knnOf(shards, xq, kNq, kK), kNq, kK), 0);

        GpuIndexReplicas replicas(GetParam().config(), flatParts(kD, metric));
        replicas.add(kNb, xb.data());
        EXPECT_EQ(replicas.ntotal, kNb);
        EXPECT_EQ(replicas.replica(1).ntotal, kNb);
        EXPECT_EQ(knnMismatches(ref, knnOf(replicas, xq, kNq, kK), kNq, kK), 0);

        faiss::IndexFlat cpu(kD, metric);
        cpu.add(kNb, xb.data());
        auto copied = index_cpu_to_gpu_shards(&cpu, GetParam().config());
        EXPECT_EQ(knnMismatches(ref, knnOf(*copied, xq, kNq, kK), kNq, kK), 0);
        auto copies = index_cpu_to_gpu_replicas(&cpu, GetParam().config());
        EXPECT_EQ(knnMismatches(ref, knnOf(*copies, xq, kNq, kK), kNq, kK), 0);
    }
}

TEST_P(GpuShards, IvfCopiedFromCpuEqualsOneIndex) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed() + 1;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    const auto xq = clusteredVectors(kNq, kD, seed, 1);
    GpuResources res;
    for (faiss::MetricType metric : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        SCOPED_TRACE("metric " + std::to_string(int(metric)));
        faiss::IndexFlat quantizer(kD, metric);
        faiss::IndexIVFFlat cpu(&quantizer, kD, kNlist, metric);
        cpu.train(kNb, xb.data());
        std::vector<int64_t> ids(kNb);
        for (int64_t i = 0; i < kNb; ++i) {
            ids[size_t(i)] = 100000 + 7 * i; // not positions: ids must be kept
        }
        cpu.add_with_ids(kNb, xb.data(), ids.data());
        cpu.nprobe = 8;
        GpuIndexIVFFlat one(res, &cpu);
        const Knn ref = knnOf(one, xq, kNq, kK);
        EXPECT_GE(*std::min_element(ref.I.begin(), ref.I.end()), 100000);

        auto shards = index_cpu_to_gpu_shards(&cpu, GetParam().config());
        EXPECT_FALSE(shards->successive_ids);
        EXPECT_EQ(shards->ntotal, kNb);
        EXPECT_GT(shards->shard(0).ntotal, 0);
        EXPECT_GT(shards->shard(1).ntotal, 0);
        EXPECT_EQ(ivfPart(shards->shard(1)).nprobe, 8u);
        EXPECT_EQ(centroidsOf(ivfPart(shards->shard(1))), centroidsOf(one));
        EXPECT_EQ(knnMismatches(ref, knnOf(*shards, xq, kNq, kK), kNq, kK), 0);

        auto replicas = index_cpu_to_gpu_replicas(&cpu, GetParam().config());
        EXPECT_EQ(replicas->ntotal, kNb);
        EXPECT_EQ(knnMismatches(ref, knnOf(*replicas, xq, kNq, kK), kNq, kK), 0);
    }
}

TEST_P(GpuShards, IvfTrainedThroughTheWrapperSharesOneQuantizer) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed() + 2;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    const auto xq = clusteredVectors(kNq, kD, seed, 1);
    std::vector<int64_t> ids(kNb);
    for (int64_t i = 0; i < kNb; ++i) {
        ids[size_t(i)] = 5000 + 3 * i;
    }
    GpuResources res;

    GpuIndexShards shards(GetParam().config(), ivfFlatParts(kD, kNlist));
    EXPECT_FALSE(shards.is_trained);
    shards.train(kNb, xb.data());
    EXPECT_TRUE(shards.is_trained);
    shards.add_with_ids(kNb, xb.data(), ids.data());
    GpuIndexReplicas replicas(GetParam().config(), ivfFlatParts(kD, kNlist));
    replicas.train(kNb, xb.data());
    replicas.add_with_ids(kNb, xb.data(), ids.data());
    for (int i = 0; i < 2; ++i) {
        ivfPart(shards.shard(i)).nprobe = 8;
        ivfPart(replicas.replica(i)).nprobe = 8;
    }
    const auto centroids = centroidsOf(ivfPart(shards.shard(0)));
    EXPECT_EQ(centroidsOf(ivfPart(shards.shard(1))), centroids);
    const auto replicaCentroids = centroidsOf(ivfPart(replicas.replica(0)));
    EXPECT_EQ(centroidsOf(ivfPart(replicas.replica(1))), replicaCentroids);

    // One index with the same centroids and ids.
    faiss::IndexFlat quantizer(kD, faiss::METRIC_L2);
    quantizer.add(kNlist, centroids.data());
    GpuIndexIVFFlat one(res, kD, kNlist);
    one.setQuantizer(&quantizer);
    one.nprobe = 8;
    one.add_with_ids(kNb, xb.data(), ids.data());
    EXPECT_EQ(knnMismatches(knnOf(one, xq, kNq, kK), knnOf(shards, xq, kNq, kK), kNq, kK), 0);

    // add() numbers from ntotal across all shards.
    shards.add(5, xq.data());
    EXPECT_EQ(shards.ntotal, kNb + 5);
    const Knn own = knnOf(shards, xq, 5, 1);
    for (int64_t q = 0; q < 5; ++q) {
        EXPECT_EQ(own.I[size_t(q)], kNb + q);
    }

    shards.reset();
    EXPECT_EQ(shards.ntotal, 0);
    EXPECT_TRUE(shards.is_trained);
}

TEST_P(GpuShards, BangShardsBuildTheirOwnGraphs) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed() + 3;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    const auto xq = clusteredVectors(kNq, kD, seed, 1);
    GpuResources res;
    GpuIndexFlat exact(res, kD);
    exact.add(kNb, xb.data());
    const Knn truth = knnOf(exact, xq, kNq, kK);

    GpuIndexShards shards(GetParam().config(), bangParts(kD));
    EXPECT_TRUE(shards.successive_ids);
    shards.add(kNb, xb.data());
    EXPECT_EQ(shards.ntotal, kNb);
    EXPECT_GT(dynamic_cast<GpuIndexBang&>(shards.shard(1)).nodeCount(), 0);
    const double shardRecall = recallAt(truth, knnOf(shards, xq, kNq, kK), kNq, kK);
    EXPECT_GE(shardRecall, 0.9);

    GpuIndexReplicas replicas(GetParam().config(), bangParts(kD));
    replicas.add(kNb, xb.data());
    const double replicaRecall = recallAt(truth, knnOf(replicas, xq, kNq, kK), kNq, kK);
    EXPECT_GE(replicaRecall, 0.9);
    std::printf("Bang recall@10: shards %.3f replicas %.3f\n", shardRecall, replicaRecall);
}

TEST_P(GpuShards, EachShardSavesAndLoads) {
    FAISS_EXT_REQUIRE_LAYOUT(GetParam());
    const uint64_t seed = testSeed() + 4;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto xb = clusteredVectors(kNb, kD, seed, 0);
    const auto xq = clusteredVectors(kNq, kD, seed, 1);
    faiss::IndexFlat quantizer(kD, faiss::METRIC_L2);
    faiss::IndexIVFFlat cpuIvf(&quantizer, kD, kNlist);
    cpuIvf.train(kNb, xb.data());
    cpuIvf.add(kNb, xb.data());
    cpuIvf.nprobe = 5;
    faiss::IndexFlatL2 cpuFlat(kD);
    cpuFlat.add(kNb, xb.data());

    std::vector<std::unique_ptr<GpuIndexShards>> built;
    built.push_back(index_cpu_to_gpu_shards(&cpuFlat, GetParam().config()));
    built.push_back(index_cpu_to_gpu_shards(&cpuIvf, GetParam().config()));
    built.push_back(std::make_unique<GpuIndexShards>(GetParam().config(), bangParts(kD)));
    built.back()->add(kNb, xb.data());
    for (const auto& shards : built) {
        SCOPED_TRACE(typeid(shards->shard(0)).name());
        std::vector<std::vector<uint8_t>> files;
        for (int i = 0; i < shards->count(); ++i) {
            files.push_back(serialize_index(&shards->shard(i)));
        }
        GpuIndexShards loaded(GetParam().config(), [&](GpuResources& r, int i) {
            return deserialize_index(files[size_t(i)].data(), files[size_t(i)].size(), r);
        });
        EXPECT_EQ(loaded.ntotal, shards->ntotal);
        EXPECT_EQ(loaded.successive_ids, shards->successive_ids);
        const Knn before = knnOf(*shards, xq, kNq, kK);
        const Knn after = knnOf(loaded, xq, kNq, kK);
        EXPECT_EQ(after.I, before.I);
        EXPECT_EQ(after.D, before.D);
    }
}

INSTANTIATE_TEST_SUITE_P(
        Layouts,
        GpuShards,
        ::testing::ValuesIn(partsLayouts()),
        [](const ::testing::TestParamInfo<PartsLayout>& info) { return info.param.name; });
