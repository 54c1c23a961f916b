// The flat radix paths for one query against faiss::IndexFlat: over the FP32 base
// (kernels/RadixSelect.h, radixSelectQuery: the product and the first digit pass in one
// read of the base; the separate product and passes where the shape does not fit it)
// and over its float16 and int8 copies (the copy's keys, the band of its error bound re-ranked in
// FP32, impl/FlatRadixSearch.h); and their searches replayed from CUDA graphs.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/index_io.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <kernels/RadixSelect.h>
#include <kernels/SearchCopy.h>

#include "FlatTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using faiss_ext::test::compareKnn;
using faiss_ext::test::searchPath;

namespace {

/// The copies the radix path reads.
const kernels::CopyCode kCopies[] = {kernels::CopyCode::kFloat16, kernels::CopyCode::kInt8};

const char* copyName(kernels::CopyCode copy) {
    return copy == kernels::CopyCode::kInt8 ? "int8 copy" : "float16 copy";
}

/// The config of a GpuIndexFlat that keeps `copy`.
GpuIndexFlatConfig configWith(kernels::CopyCode copy) {
    GpuIndexFlatConfig config;
    config.float16Copy = copy == kernels::CopyCode::kFloat16;
    config.int8Copy = copy == kernels::CopyCode::kInt8;
    return config;
}

/// One query over xb on each forced radix path (over the FP32 base, over each copy)
/// against FAISS CPU, in each metric.
void expectOneQueryMatchesCpu(
        GpuResources& res,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int d,
        int k,
        std::vector<faiss::MetricType> metrics = {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
    const int64_t nb = int64_t(xb.size()) / d;
    for (faiss::MetricType m : metrics) {
        faiss::IndexFlat cpu(d, m);
        cpu.add(nb, xb.data());
        std::vector<float> refD(k), D(k);
        std::vector<int64_t> refI(k), I(k);
        cpu.search(1, xq.data(), k, refD.data(), refI.data());
        const std::string shape = " nb=" + std::to_string(nb) + " d=" + std::to_string(d) +
                " k=" + std::to_string(k) + (m == faiss::METRIC_L2 ? " L2" : " IP");
        {
            SCOPED_TRACE("radix" + shape);
            searchPath(
                    res, xb, xq, d, k, m, FlatSearchPath::kRadix, GpuFlatPrecision::kFloat32, D, I);
            EXPECT_EQ(compareKnn(refD, refI, D, I, 1, k, 1e-4f, 1e-5f), 0);
        }
        for (kernels::CopyCode copy : kCopies) {
            SCOPED_TRACE(std::string("radix over the ") + copyName(copy) + shape);
            searchPath(
                    res, xb, xq, d, k, m, FlatSearchPath::kRadixCopy, GpuFlatPrecision::kAuto, D, I,
                    copy);
            EXPECT_EQ(compareKnn(refD, refI, D, I, 1, k, 1e-4f, 1e-5f), 0);
        }
    }
}

} // namespace

// Which shapes the one-kernel product takes: over the FP32 base, d a multiple of 4
// (float4 rows), the query in shared memory, 16-byte aligned rows (the others take the
// separate product); over a copy, any d (its rows are padded) up to the same
// limit.
TEST(GpuFlatRadix, OneQueryProductFitsFloat4Rows) {
    float* aligned = reinterpret_cast<float*>(uintptr_t(256));
    kernels::RadixQueryProduct p;
    p.query = aligned;
    p.base = aligned;
    for (int d : {4, 8, 128, 768, 8192}) {
        p.d = d;
        EXPECT_TRUE(kernels::radixQueryFits(p)) << d;
    }
    for (int d : {0, 1, 3, 130, 8196}) {
        p.d = d;
        EXPECT_FALSE(kernels::radixQueryFits(p)) << d;
    }
    p.d = 128;
    p.query = aligned + 1;
    EXPECT_FALSE(kernels::radixQueryFits(p));
    p.copyRows = reinterpret_cast<const void*>(uintptr_t(256));
    p.copyScales = aligned;
    for (int d : {1, 3, 130, 8192}) {
        p.d = d;
        EXPECT_TRUE(kernels::radixQueryFits(p)) << d;
    }
    p.d = 8196;
    EXPECT_FALSE(kernels::radixQueryFits(p));
    p.d = 128;
    p.copyRows = reinterpret_cast<const void*>(uintptr_t(264)); // 16-byte chunks
    EXPECT_FALSE(kernels::radixQueryFits(p));
    using kernels::CopyCode;
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kFloat16, 1), 16);
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kFloat16, 130), 272);
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kFloat16, 768), 1536);
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kInt8, 1), 16);
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kInt8, 130), 144);
    EXPECT_EQ(kernels::copyRowBytes(CopyCode::kInt8, 768), 768);
}

// Dimensions on both sides of the float4 rule, every k up to the largest, a base of
// more blocks than the kernel runs (each walks several row groups) and a short one.
// Under compute-sanitizer a base of 20000 and a few (d, k): d a multiple of 4 and not,
// each with a small k and k 2048, and a k of each sort of the taken keys (up to 128, 512
// and 2048).
TEST(GpuFlatRadix, OneQueryMatchesCpu) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    const bool small = test::underSanitizer();
    const int64_t nb = small ? 20000 : 300000;
    // Each dimension with the k it is searched at.
    std::vector<std::pair<int, std::vector<int>>> shapes;
    if (small) {
        shapes = {{3, {10, 2048}}, {4, {1}}, {20, {300}}, {128, {2048}}};
    } else {
        for (int d : {1, 3, 4, 20, 128, 130, 768}) {
            shapes.push_back({d, {1, 10, 100, 1024, 2048}});
        }
    }
    for (const auto& [d, ks] : shapes) {
        const auto xb = datasets::uniform(nb, d, seed + d);
        const auto xq = datasets::uniform(1, d, seed + d + 1);
        for (int k : ks) {
            expectOneQueryMatchesCpu(res, xb, xq, d, k);
        }
    }
    // Fewer base rows than one warp's group, and than k.
    const auto xb = datasets::uniform(5, 16, seed);
    const auto xq = datasets::uniform(1, 16, seed + 1);
    expectOneQueryMatchesCpu(res, xb, xq, 16, 10);
}

// Many equal distances: the k-th key's ties are taken up to k (the last digit pass).
TEST(GpuFlatRadix, OneQueryOverDuplicateRows) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    const int d = 32;
    const auto distinct = datasets::uniform(50, d, seed);
    std::vector<float> xb;
    for (int copy = 0; copy < 400; ++copy) {
        xb.insert(xb.end(), distinct.begin(), distinct.end());
    }
    const auto xq = datasets::uniform(1, d, seed + 1);
    for (int k : {1, 100, 1000}) {
        expectOneQueryMatchesCpu(res, xb, xq, d, k);
    }
}

// The k-th key settled by each digit of the select: inner products with the query
// (1, 0, 0, 0) are the base rows' first components, chosen so that the k-th largest
// lies alone in its first digit (powers of two), alone in its second (1 + i 2^-12: the
// first digit shared, the second distinct) or shares both with the others (1 + i 2^-23:
// only the last digit tells them apart); and a mix where the keys below the k-th's
// first-digit bin are taken before the bin's own.
TEST(GpuFlatRadix, OneQuerySettlesTheKthAtEachDigit) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int d = 4;
    const std::vector<float> xq = {1.f, 0.f, 0.f, 0.f};
    auto rowsOf = [&](const std::vector<float>& first) {
        std::vector<float> xb(first.size() * d, 0.f);
        for (size_t i = 0; i < first.size(); ++i) {
            xb[i * d] = first[i];
        }
        return xb;
    };
    std::vector<float> powers, secondDigit, lastDigit, mixed;
    for (int i = 0; i < 30; ++i) {
        powers.push_back(std::ldexp(1.f, i - 10));
    }
    for (int i = 0; i < 500; ++i) {
        secondDigit.push_back(1.f + std::ldexp(float(i), -12));
        lastDigit.push_back(1.f + std::ldexp(float(i), -23));
        mixed.push_back(i % 10 == 0 ? 4.f + float(i) : 1.f + std::ldexp(float(i), -23));
    }
    for (const auto& first : {powers, secondDigit, lastDigit, mixed}) {
        for (int k : {1, 10, 60}) {
            expectOneQueryMatchesCpu(res, rowsOf(first), xq, d, k, {faiss::METRIC_INNER_PRODUCT});
        }
    }
}

// One query's searches replayed from CUDA graphs (GpuIndex::useSearchGraphs): the
// first call of a shape runs kernel by kernel, the second is captured, later ones
// replay it; each call must answer its own query over the contents of that moment.
// Host arrays (the graph holds their copies) and device arrays (searchDevice) alike;
// over the FP32 base and over each copy.
TEST(GpuFlatRadix, OneQuerySearchesReplayCudaGraphs) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    const int d = 16, k = 10;
    const int64_t nb = test::underSanitizer() ? 66000 : 100000; // the radix path's base
    const auto xb = datasets::uniform(nb, d, seed);
    auto qDev = res.alloc<float>(d);
    auto dDev = res.alloc<float>(k);
    auto iDev = res.alloc<int64_t>(k);
    for (int run = 0; run < 6; ++run) {
        const faiss::MetricType m = run % 2 ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2;
        GpuIndexFlatConfig config;
        config.float16Copy = run / 2 == 1;
        config.int8Copy = run / 2 == 2;
        SCOPED_TRACE(
                std::string(m == faiss::METRIC_L2 ? "L2" : "IP") +
                (config.float16Copy        ? ", float16 copy"
                         : config.int8Copy ? ", int8 copy"
                                           : ""));
        faiss::IndexFlat cpu(d, m);
        GpuIndexFlat gpu(res, d, m, config);
        cpu.add(nb, xb.data());
        gpu.add(nb, xb.data());
        auto expectCall = [&](uint64_t querySeed, bool onDevice) {
            SCOPED_TRACE(onDevice ? "device arrays" : "host arrays");
            const auto xq = datasets::uniform(1, d, querySeed);
            std::vector<float> refD(k), D(k, 12345.f);
            std::vector<int64_t> refI(k), I(k, 777);
            cpu.search(1, xq.data(), k, refD.data(), refI.data());
            if (onDevice) {
                copyToDevice(qDev.data(), xq.data(), size_t(d), res.stream());
                gpu.searchDevice(1, qDev.data(), k, dDev.data(), iDev.data());
                D = copyToHostVector(dDev.data(), size_t(k), res.stream());
                I = copyToHostVector(iDev.data(), size_t(k), res.stream());
            } else {
                gpu.search(1, xq.data(), k, D.data(), I.data());
            }
            EXPECT_EQ(compareKnn(refD, refI, D, I, 1, k, 1e-4f, 1e-5f), 0);
        };
        // Direct, captured, replayed twice: each with a query of its own.
        for (bool onDevice : {false, true}) {
            for (int call = 0; call < 4; ++call) {
                expectCall(seed + 10 + call, onDevice);
            }
        }
        EXPECT_EQ(gpu.searchGraphCount(), 2u); // one of host arrays, one of device arrays
        // New contents: the graphs are dropped, and new ones made for them.
        const auto more = datasets::uniform(1000, d, seed + 1);
        cpu.add(1000, more.data());
        gpu.add(1000, more.data());
        EXPECT_EQ(gpu.searchGraphCount(), 0u);
        for (int call = 0; call < 3; ++call) {
            expectCall(seed + 20 + call, false);
        }
        EXPECT_EQ(gpu.searchGraphCount(), 1u);
        gpu.useSearchGraphs = false;
        for (int call = 0; call < 3; ++call) {
            expectCall(seed + 30 + call, call % 2 == 1);
        }
        EXPECT_EQ(gpu.searchGraphCount(), 1u);
        gpu.reset();
        EXPECT_EQ(gpu.searchGraphCount(), 0u);
    }
}

namespace {

/// One query on GpuIndexFlat (kAuto) against faiss::IndexFlat holding the same vectors.
void expectIndexMatchesCpu(
        const GpuIndexFlat& gpu,
        const faiss::IndexFlat& cpu,
        const std::vector<float>& xq,
        int k,
        const faiss::SearchParameters* params = nullptr) {
    std::vector<float> refD(k), D(k, 12345.f);
    std::vector<int64_t> refI(k), I(k, 777);
    cpu.search(1, xq.data(), k, refD.data(), refI.data(), params);
    gpu.search(1, xq.data(), k, D.data(), I.data(), params);
    EXPECT_EQ(compareKnn(refD, refI, D, I, 1, k, 1e-4f, 1e-5f), 0);
}

} // namespace

// Rows that a copy cannot tell apart: one vector of large components plus perturbations
// a thousand times below float16's resolution (2^-11 of a component; int8's is coarser
// still), so that the copy's keys of all of them are equal to its precision and their
// order comes from the FP32 re-rank alone; mixed with rows far away, and alone. Each
// query lies among them, so its whole neighbourhood is inside the band.
TEST(GpuFlatRadix, CopiesRankRowsTheirRoundingCannotTellApart) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    const int d = 64;
    const int64_t nb = test::underSanitizer() ? 66000 : 100000;
    const auto center = datasets::uniform(1, d, seed);
    const auto noise = datasets::uniform(nb, d, seed + 1);
    const auto far = datasets::uniform(nb, d, seed + 2);
    for (bool mixed : {false, true}) {
        std::vector<float> xb(size_t(nb) * d);
        for (int64_t i = 0; i < nb; ++i) {
            for (int j = 0; j < d; ++j) {
                const size_t at = size_t(i) * d + j;
                xb[at] = mixed && i % 2 ? 1000.f * far[at]
                                        : 1000.f * (1.f + center[j]) + 1e-3f * noise[at];
            }
        }
        std::vector<float> xq(d);
        for (int j = 0; j < d; ++j) {
            xq[j] = 1000.f * (1.f + center[j]) + 1e-3f * noise[j];
        }
        for (int k : {1, 10, 100}) {
            SCOPED_TRACE(mixed ? "mixed with far rows" : "close rows only");
            expectOneQueryMatchesCpu(res, xb, xq, d, k);
        }
    }
}

// Each copy follows the stored vectors through every change of them: adds (growing the
// storage), remove_ids, reset, copyFrom, and a save and load; it costs its bytes in
// deviceMemoryBytes; a filtered search over it takes only allowed ids. Both copies at
// once are refused.
TEST(GpuFlatRadix, CopiesFollowTheStoredVectors) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const uint64_t seed = test::testSeed();
    const int d = 20, k = 10;
    const int64_t nb = 70000;
    const auto xb = datasets::uniform(nb, d, seed);
    const auto more = datasets::uniform(nb, d, seed + 1);
    const auto xq = datasets::uniform(1, d, seed + 2);
    GpuIndexFlatConfig both;
    both.float16Copy = both.int8Copy = true;
    EXPECT_THROW(GpuIndexFlat(res, d, faiss::METRIC_L2, both), faiss::FaissException);
    for (int run = 0; run < 4; ++run) {
        const kernels::CopyCode copy = kCopies[run / 2];
        const GpuIndexFlatConfig config = configWith(copy);
        const faiss::MetricType m = run % 2 ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2;
        SCOPED_TRACE(std::string(copyName(copy)) + (m == faiss::METRIC_L2 ? ", L2" : ", IP"));
        faiss::IndexFlat cpu(d, m);
        GpuIndexFlat gpu(res, d, m, config);
        GpuIndexFlat plain(res, d, m);
        cpu.add(nb, xb.data());
        gpu.add(nb, xb.data());
        plain.add(nb, xb.data());
        ASSERT_EQ(GpuIndexFlatAccess::searchPath(gpu, 1, k), FlatSearchPath::kRadixCopy);
        EXPECT_EQ(GpuIndexFlatAccess::searchPath(plain, 1, k), FlatSearchPath::kRadix);
        EXPECT_EQ(GpuIndexFlatAccess::searchPath(gpu, 2, k), FlatSearchPath::kRadix);
        EXPECT_GE(
                gpu.deviceMemoryBytes(),
                plain.deviceMemoryBytes() +
                        size_t(nb) * (kernels::copyRowBytes(copy, d) + sizeof(float)));
        expectIndexMatchesCpu(gpu, cpu, xq, k);
        cpu.add(nb, more.data());
        gpu.add(nb, more.data());
        expectIndexMatchesCpu(gpu, cpu, xq, k);
        // Every third vector removed: the copy's rows move with the vectors'.
        std::vector<int64_t> gone;
        for (int64_t i = 0; i < 2 * nb; i += 3) {
            gone.push_back(i);
        }
        faiss::IDSelectorBatch sel(gone.size(), gone.data());
        ASSERT_EQ(cpu.remove_ids(sel), gone.size());
        ASSERT_EQ(gpu.remove_ids(sel), gone.size());
        expectIndexMatchesCpu(gpu, cpu, xq, k);
        faiss::IDSelectorRange range(1000, 50000);
        faiss::SearchParameters params;
        params.sel = &range;
        expectIndexMatchesCpu(gpu, cpu, xq, k, &params);
        const std::vector<uint8_t> bytes = faiss_ext::serialize_index(&gpu);
        auto back = faiss_ext::deserialize_index(bytes.data(), bytes.size(), res);
        auto* loaded = dynamic_cast<GpuIndexFlat*>(back.get());
        ASSERT_NE(loaded, nullptr);
        EXPECT_EQ(loaded->flatConfig().float16Copy, config.float16Copy);
        EXPECT_EQ(loaded->flatConfig().int8Copy, config.int8Copy);
        expectIndexMatchesCpu(*loaded, cpu, xq, k);
        gpu.reset();
        EXPECT_EQ(gpu.deviceMemoryBytes(), 0u);
        gpu.add(nb, more.data());
        faiss::IndexFlat fresh(d, m);
        fresh.add(nb, more.data());
        expectIndexMatchesCpu(gpu, fresh, xq, k);
        gpu.copyFrom(&cpu);
        EXPECT_EQ(gpu.flatConfig().int8Copy, config.int8Copy);
        expectIndexMatchesCpu(gpu, cpu, xq, k);
    }
}
