// faiss's own C++ wrappers over faiss_ext indexes: faiss::IndexIDMap, IndexRefineFlat and
// IndexPreTransform call only faiss::Index's virtual methods, so one wrapping a faiss_ext
// index answers as the same wrapper over the CPU index does (ties aside). faiss::IndexShards
// over faiss_ext parts is gpu_shards_tests' subject.
#include <cstdint>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/IndexRefine.h>
#include <faiss/VectorTransform.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kD = 48;
constexpr int64_t kNb = 4000;
constexpr int64_t kNq = 97;
constexpr int kK = 10;

struct Data {
    std::vector<float> xb, xq;
};

Data makeData(uint64_t seed) {
    datasets::ClusteredSpec spec{kNb, kD, 40, 0.2f, seed};
    Data data;
    data.xb = datasets::clustered(spec, 0);
    spec.n = kNq;
    data.xq = datasets::clustered(spec, 1);
    return data;
}

/// Searches both wrappers and compares their answers (distances within 1e-4 relative).
void expectSameAnswers(faiss::Index& reference, faiss::Index& wrapped, const Data& data) {
    std::vector<float> refD(kNq * kK), D(kNq * kK);
    std::vector<int64_t> refI(kNq * kK), I(kNq * kK);
    reference.search(kNq, data.xq.data(), kK, refD.data(), refI.data());
    wrapped.search(kNq, data.xq.data(), kK, D.data(), I.data());
    EXPECT_EQ(compareKnn(refD, refI, D, I, kNq, kK, 1e-4f, 1e-5f), 0);
}

} // namespace

TEST(GpuFaissWrappers, IndexIdMapOverGpuIndexFlat) {
    FAISS_EXT_REQUIRE_GPU();
    const Data data = makeData(testSeed());
    std::vector<int64_t> ids(kNb);
    for (int64_t i = 0; i < kNb; ++i) {
        ids[size_t(i)] = 1000000 + 7 * (kNb - i); // neither positions nor increasing
    }
    faiss::IndexFlatL2 cpuFlat(kD);
    faiss::IndexIDMap reference(&cpuFlat);
    reference.add_with_ids(kNb, data.xb.data(), ids.data());

    GpuResources res;
    GpuIndexFlat gpuFlat(res, kD);
    faiss::IndexIDMap wrapped(&gpuFlat);
    wrapped.add_with_ids(kNb, data.xb.data(), ids.data());
    ASSERT_EQ(gpuFlat.ntotal, kNb);
    expectSameAnswers(reference, wrapped, data);
}

TEST(GpuFaissWrappers, IndexRefineFlatOverGpuIndexIvfFlat) {
    FAISS_EXT_REQUIRE_GPU();
    const Data data = makeData(testSeed() + 1);
    constexpr int64_t kNlist = 32;
    faiss::IndexFlatL2 quantizer(kD);
    faiss::IndexIVFFlat cpuIvf(&quantizer, kD, kNlist);
    cpuIvf.train(kNb, data.xb.data());
    cpuIvf.nprobe = 4;

    GpuResources res;
    GpuIndexIVFFlat gpuIvf(res, &cpuIvf); // same quantizer, no vectors yet
    gpuIvf.nprobe = 4;

    // Each refine wrapper adds the vectors to its base and to its own flat copy.
    faiss::IndexRefineFlat reference(&cpuIvf);
    faiss::IndexRefineFlat wrapped(&gpuIvf);
    reference.k_factor = wrapped.k_factor = 4;
    reference.add(kNb, data.xb.data());
    wrapped.add(kNb, data.xb.data());
    ASSERT_EQ(gpuIvf.ntotal, kNb);
    expectSameAnswers(reference, wrapped, data);
}

TEST(GpuFaissWrappers, IndexPreTransformOverGpuIndexFlat) {
    FAISS_EXT_REQUIRE_GPU();
    const Data data = makeData(testSeed() + 2);
    // The same seeded rotation on both sides; the test owns the transforms and indexes.
    faiss::RandomRotationMatrix cpuRotation(kD, kD), gpuRotation(kD, kD);
    faiss::IndexFlatL2 cpuFlat(kD);
    faiss::IndexPreTransform reference(&cpuRotation, &cpuFlat);
    reference.own_fields = false;

    GpuResources res;
    GpuIndexFlat gpuFlat(res, kD);
    faiss::IndexPreTransform wrapped(&gpuRotation, &gpuFlat);
    wrapped.own_fields = false;

    reference.train(kNb, data.xb.data());
    wrapped.train(kNb, data.xb.data());
    reference.add(kNb, data.xb.data());
    wrapped.add(kNb, data.xb.data());
    ASSERT_EQ(gpuFlat.ntotal, kNb);
    expectSameAnswers(reference, wrapped, data);
}
