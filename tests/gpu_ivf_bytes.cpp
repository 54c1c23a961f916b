// GpuIndexIVFFlat over byte-valued data (every stored value an integer in [0, 255], as
// SIFT's): its lists keep a byte copy that the list-major scan reads. The results must be
// those of the floats, bit for bit (the per-query scan reads the floats), and FAISS
// CPU's; the copy is kept exactly while every stored value is a byte.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/index_io.h>

#include <kernels/IvfKeyRerank.h>

#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// n x d integers in [0, 255] as floats.
std::vector<float> byteRows(int64_t n, int d, uint64_t seed) {
    std::vector<float> x = datasets::uniform(n, d, seed);
    for (float& v : x) {
        v = std::floor(v * 256.f);
    }
    return x;
}

/// Queries on the data's scale, not bytes (only stored values decide the copy).
std::vector<float> queriesFor(int64_t n, int d, uint64_t seed) {
    std::vector<float> x = datasets::uniform(n, d, seed);
    for (float& v : x) {
        v *= 255.f;
    }
    return x;
}

/// Searches `listMajor` (which must read its byte copy) and `perQuery` (the same lists,
/// read as floats): identical results; and both against `cpu`'s within 1e-4.
void expectBytesMatchFloats(
        const faiss::IndexIVFFlat& cpu,
        const GpuIndexIVFFlat& listMajor,
        const GpuIndexIVFFlat& perQuery,
        const std::vector<float>& xq,
        int k,
        const faiss::SearchParametersIVF& params) {
    ASSERT_TRUE(GpuIndexIVFFlatAccess::keepsByteCopy(listMajor));
    const int64_t nq = int64_t(xq.size()) / cpu.d;
    std::vector<float> rD(size_t(nq) * k), D1(rD.size()), D2(rD.size(), 12345.f);
    std::vector<int64_t> rI(rD.size()), I1(rD.size()), I2(rD.size(), 777);
    cpu.search(nq, xq.data(), k, rD.data(), rI.data(), &params);
    infForMissing(rD, rI, cpu.metric_type);
    perQuery.search(nq, xq.data(), k, D1.data(), I1.data(), &params);
    listMajor.search(nq, xq.data(), k, D2.data(), I2.data(), &params);
    EXPECT_EQ(compareExact(D1, I1, D2, I2, nq, k), 0);
    const auto skip = coarseTies(*cpu.quantizer, nq, xq.data(), int64_t(params.nprobe));
    EXPECT_EQ(compareKnnRows(rD, rI, D2, I2, nq, k, skip, 1e-4f, 1e-4f), 0);
}

} // namespace

// Every d class of the byte layout (under, at and over a 16-byte group; over the 128
// components a query chunk stages), both metrics, k and nprobe drawn.
TEST(GpuIvfByteLists, ListMajorFromBytesEqualsFloatsAndCpu) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(testSeed());
    const int dims[] = {1, 5, 16, 17, 100, 128, 129, 300, 768};
    for (int d : dims) {
        const int64_t nlist = 1 + int64_t(rng() % 64);
        const int64_t nb = smallUnderSanitizer(d >= 300 ? 3000 : 8000, 800);
        const int64_t nq = 1 + int64_t(rng() % smallUnderSanitizer(400, 40));
        const int k = 1 + int(rng() % 100);
        const auto metric = rng() % 2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
        const uint64_t seed = rng();
        SCOPED_TRACE(
                testing::Message() << "d=" << d << " nlist=" << nlist << " nq=" << nq << " k=" << k
                                   << " metric=" << int(metric) << " seed=" << seed);
        const auto xb = byteRows(nb, d, seed);
        const auto xq = queriesFor(nq, d, seed + 1);
        auto cpu = cpuIvf(d, nlist, metric, xb.data());
        cpu->add(nb, xb.data());
        GpuIndexIVFFlat listMajor(res, cpu.get(), forcedScan(IvfScanPath::kListMajor));
        GpuIndexIVFFlat perQuery(res, cpu.get(), forcedScan(IvfScanPath::kPerQuery));
        faiss::SearchParametersIVF params;
        params.nprobe = size_t(1 + rng() % (nlist + 1));
        expectBytesMatchFloats(*cpu, listMajor, perQuery, xq, k, params);
        // The key path streams the same bytes (L2, at most kKeyRerankMaxK results).
        if (metric == faiss::METRIC_L2) {
            GpuIndexIVFFlat keys(res, cpu.get(), forcedScan(IvfScanPath::kListMajorKeys));
            const int keysK = std::min(k, kernels::kKeyRerankMaxK);
            ASSERT_TRUE(
                    GpuIndexIVFFlatAccess::plan(keys, nq, keysK, int(params.nprobe)).listMajorKeys);
            expectBytesMatchFloats(*cpu, keys, perQuery, xq, keysK, params);
        }
    }
}

// The copy follows every change of the lists: adds that grow the lists (the kept prefix
// moves over), remove_ids (lists rebuilt), addPreassigned, a filtered search, save /
// load, reset, copyFrom.
TEST(GpuIvfByteLists, CopyFollowsEveryChangeOfTheLists) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const int d = 40, k = 15;
    const int64_t nlist = 12, nb = smallUnderSanitizer(6000, 1200);
    const auto xb = byteRows(nb, d, seed);
    const auto xq = queriesFor(50, d, seed + 1);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < nb; ++i) {
        ids.push_back(10 + 7 * i);
    }
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    const int64_t first = nb / 10;
    cpu->add_with_ids(first, xb.data(), ids.data());
    GpuIndexIVFFlat listMajor(res, cpu.get(), forcedScan(IvfScanPath::kListMajor));
    GpuIndexIVFFlat perQuery(res, cpu.get(), forcedScan(IvfScanPath::kPerQuery));
    faiss::SearchParametersIVF params;
    params.nprobe = 5;
    auto check = [&](const char* step) {
        SCOPED_TRACE(step);
        expectBytesMatchFloats(*cpu, listMajor, perQuery, xq, k, params);
    };
    check("copyFrom");
    // In three adds: the lists grow past their capacity twice.
    for (int64_t i0 = first; i0 < nb; i0 += (nb - first) / 3 + 1) {
        const int64_t n = std::min((nb - first) / 3 + 1, nb - i0);
        cpu->add_with_ids(n, xb.data() + i0 * d, ids.data() + i0);
        listMajor.add_with_ids(n, xb.data() + i0 * d, ids.data() + i0);
        perQuery.add_with_ids(n, xb.data() + i0 * d, ids.data() + i0);
    }
    check("add_with_ids");

    const faiss::IDSelectorRange gone(ids[size_t(nb / 3)], ids[size_t(nb / 2)]);
    const size_t removed = cpu->remove_ids(gone);
    ASSERT_GT(removed, 0u);
    EXPECT_EQ(listMajor.remove_ids(gone), removed);
    EXPECT_EQ(perQuery.remove_ids(gone), removed);
    check("remove_ids");

    std::vector<int64_t> listNos(size_t(nb / 3));
    {
        std::vector<float> unused(listNos.size());
        cpu->quantizer->search(nb / 3, xb.data(), 1, unused.data(), listNos.data());
    }
    std::vector<int64_t> moreIds(listNos.size());
    for (size_t i = 0; i < moreIds.size(); ++i) {
        moreIds[i] = 1000000 + int64_t(i);
    }
    cpu->add_core(nb / 3, xb.data(), moreIds.data(), listNos.data());
    listMajor.addPreassigned(nb / 3, xb.data(), listNos.data(), moreIds.data());
    perQuery.addPreassigned(nb / 3, xb.data(), listNos.data(), moreIds.data());
    check("addPreassigned");

    {
        faiss::IDSelectorRange half(ids[size_t(nb / 4)], ids[size_t(3 * nb / 4)]);
        faiss::SearchParametersIVF filtered;
        filtered.nprobe = params.nprobe;
        filtered.sel = &half;
        SCOPED_TRACE("filtered");
        expectBytesMatchFloats(*cpu, listMajor, perQuery, xq, k, filtered);
    }

    {
        const std::vector<uint8_t> bytes = serialize_index(&listMajor);
        auto loaded = deserialize_index(bytes.data(), bytes.size(), res);
        auto* ivf = dynamic_cast<GpuIndexIVFFlat*>(loaded.get());
        ASSERT_NE(ivf, nullptr);
        SCOPED_TRACE("save / load");
        // The loaded index scans as its config says (list-major forced, saved with it).
        ASSERT_TRUE(GpuIndexIVFFlatAccess::plan(*ivf, 50, k, int64_t(params.nprobe)).listMajor);
        expectBytesMatchFloats(*cpu, *ivf, perQuery, xq, k, params);
    }

    cpu->reset();
    listMajor.reset();
    perQuery.reset();
    cpu->add_with_ids(first, xb.data(), ids.data());
    listMajor.add_with_ids(first, xb.data(), ids.data());
    perQuery.add_with_ids(first, xb.data(), ids.data());
    check("reset, add_with_ids");

    auto other = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data() + d);
    other->add_with_ids(nb / 2, xb.data(), ids.data());
    listMajor.copyFrom(other.get());
    perQuery.copyFrom(other.get());
    cpu = std::move(other);
    check("copyFrom another index");
}

// One stored value that is not a byte (a fraction, 256, -1, -0, 1000) drops the
// copy for good: searches still match FAISS CPU; reset gives it back to byte data. The
// copy's memory shows in deviceMemoryBytes.
TEST(GpuIvfByteLists, CopyKeptOnlyWhileEveryValueIsAByte) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    GpuResources res;
    const int d = 24, k = 10;
    const int64_t nlist = 8, nb = smallUnderSanitizer(3000, 600);
    const auto xb = byteRows(nb, d, seed);
    const auto xq = queriesFor(20, d, seed + 1);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(nb, xb.data());
    GpuIndexIVFFlat bytes(res, cpu.get(), forcedScan(IvfScanPath::kListMajor));
    ASSERT_TRUE(GpuIndexIVFFlatAccess::keepsByteCopy(bytes));

    // The same lists, every value and centroid + 0.5 (exact: the same differences): no
    // copy, the same float buffers.
    std::vector<float> shifted = xb;
    for (float& v : shifted) {
        v += 0.5f;
    }
    auto cpuShifted = cpuIvf(d, nlist, faiss::METRIC_L2, shifted.data());
    cpuShifted->add(nb, shifted.data());
    GpuIndexIVFFlat floats(res, cpuShifted.get(), forcedScan(IvfScanPath::kListMajor));
    EXPECT_FALSE(GpuIndexIVFFlatAccess::keepsByteCopy(floats));
    const size_t copyBytes = bytes.deviceMemoryBytes() - floats.deviceMemoryBytes();
    EXPECT_GE(copyBytes, size_t(nb) * 32); // 32 bytes a vector at d 24
    EXPECT_LE(copyBytes, size_t(nb + 32 * nlist) * 32 * 2);

    for (float odd : {0.5f, 256.f, -1.f, -0.f, 1000.f}) {
        SCOPED_TRACE(odd);
        GpuIndexIVFFlat index(res, cpu.get(), forcedScan(IvfScanPath::kListMajor));
        std::vector<float> one(xb.begin(), xb.begin() + d);
        one[size_t(d / 2)] = odd;
        index.add(1, one.data());
        EXPECT_FALSE(GpuIndexIVFFlatAccess::keepsByteCopy(index));
        auto ref = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
        ref->add(nb, xb.data());
        ref->add(1, one.data());
        faiss::SearchParametersIVF params;
        params.nprobe = 3;
        std::vector<float> rD(size_t(20) * k), D(rD.size());
        std::vector<int64_t> rI(rD.size()), I(rD.size());
        ref->search(20, xq.data(), k, rD.data(), rI.data(), &params);
        index.search(20, xq.data(), k, D.data(), I.data(), &params);
        const auto skip = coarseTies(*ref->quantizer, 20, xq.data(), 3);
        EXPECT_EQ(compareKnnRows(rD, rI, D, I, 20, k, skip, 1e-4f, 1e-4f), 0);
        // Removing the odd vector does not bring the copy back; reset does.
        index.remove_ids(faiss::IDSelectorRange(nb, nb + 1));
        EXPECT_FALSE(GpuIndexIVFFlatAccess::keepsByteCopy(index));
        index.reset();
        index.add(nb, xb.data());
        EXPECT_TRUE(GpuIndexIVFFlatAccess::keepsByteCopy(index));
    }
}
