// The fused IVF coarse search (kernels/IvfCoarseFused.h, impl/IvfCoarseSearch.h): its
// kernel's per-segment candidates and the whole coarse search against a CPU
// double-precision reference, and GpuIndexIVFFlat with the fused and the GEMM coarse
// paths forced on one index, against each other and against FAISS CPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfCoarseSearch.h>
#include <faiss_ext/impl/IvfSearch.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <kernels/Distances.h>
#include <kernels/IvfCoarseFused.h>

#include "IvfTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

struct CoarseShape {
    int64_t nq;
    int d;
    int64_t nlist;
    int k;
    faiss::MetricType metric;
};

std::string describe(const CoarseShape& s) {
    return "nq=" + std::to_string(s.nq) + " d=" + std::to_string(s.d) +
            " nlist=" + std::to_string(s.nlist) + " k=" + std::to_string(s.k) +
            (s.metric == faiss::METRIC_L2 ? " L2" : " IP");
}

/// Random queries in [0, 1) and centroids shifted away from the origin (by +5 for L2,
/// -5 for inner product), so that a zero row standing for a centroid past nlist would
/// beat every real one (key 0 against keys > 0) if the kernel let it in.
struct CoarseData {
    std::vector<float> xq, cent;
};

CoarseData coarseData(const CoarseShape& s, uint64_t seed) {
    CoarseData data;
    data.xq = datasets::uniform(s.nq, s.d, seed);
    data.cent = datasets::uniform(s.nlist, s.d, seed + 1);
    const float shift = s.metric == faiss::METRIC_L2 ? 5.f : -5.f;
    for (float& x : data.cent) {
        x += shift;
    }
    return data;
}

/// The selection key of (query, centroid) in double: |c|^2 - 2 q.c (L2) or -q.c.
double referenceKey(const CoarseData& data, const CoarseShape& s, int64_t q, int64_t c) {
    double dot = 0, norm = 0;
    for (int j = 0; j < s.d; ++j) {
        const double x = data.xq[size_t(q * s.d + j)], y = data.cent[size_t(c * s.d + j)];
        dot += x * y;
        norm += y * y;
    }
    return s.metric == faiss::METRIC_L2 ? norm - 2 * dot : -dot;
}

/// Largest squared norm of the centroids.
double maxCentroidNorm(const CoarseData& data, const CoarseShape& s) {
    double cmax = 0;
    for (int64_t c = 0; c < s.nlist; ++c) {
        double cn = 0;
        for (int j = 0; j < s.d; ++j) {
            cn += double(data.cent[size_t(c * s.d + j)]) * data.cent[size_t(c * s.d + j)];
        }
        cmax = std::max(cmax, cn);
    }
    return cmax;
}

/// Checks one list of k results (keys / ids, ascending) against the reference keys of
/// the centroids [c0, c1) of query q: each reported key is its id's key, ids are
/// distinct and in range, and the j-th reported id's key is the reference j-th key up to
/// a near-tie (so the ids equal the reference's except where keys tie within tol); the
/// ranks past the range's size are (+inf, -1). Returns false after one ADD_FAILURE.
bool expectListMatches(
        const float* keys,
        const int64_t* ids,
        int k,
        const std::vector<double>& refKeys, // of c0 .. c1 - 1
        int64_t c0,
        double tol,
        const std::string& where) {
    std::vector<int64_t> order(refKeys.size());
    std::iota(order.begin(), order.end(), int64_t(0));
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return refKeys[size_t(a)] < refKeys[size_t(b)] ||
                (refKeys[size_t(a)] == refKeys[size_t(b)] && a < b);
    });
    std::set<int64_t> seen;
    for (int j = 0; j < k; ++j) {
        const std::string at = where + " rank " + std::to_string(j);
        if (size_t(j) >= refKeys.size()) {
            if (ids[j] != -1 || keys[j] != std::numeric_limits<float>::infinity()) {
                ADD_FAILURE() << at << ": expected (+inf, -1), got (" << keys[j] << ", " << ids[j]
                              << ")";
                return false;
            }
            continue;
        }
        const int64_t id = ids[j];
        if (id < c0 || id >= c0 + int64_t(refKeys.size()) || !seen.insert(id).second) {
            ADD_FAILURE() << at << ": id " << id << " out of range or repeated";
            return false;
        }
        const double own = refKeys[size_t(id - c0)];
        const double expected = refKeys[size_t(order[size_t(j)])];
        if (std::fabs(double(keys[j]) - own) > tol || std::fabs(own - expected) > 2 * tol ||
            (j > 0 && keys[j] < keys[j - 1])) {
            ADD_FAILURE() << at << ": id " << id << " key " << keys[j] << " (its reference " << own
                          << "), reference rank key " << expected << " (id "
                          << c0 + order[size_t(j)] << "), tolerance " << tol;
            return false;
        }
    }
    return true;
}

/// The kernel's candidates of every (query, segment), the query norms and the merged
/// results, against the double reference.
void expectKernelMatchesReference(GpuResources& res, const CoarseShape& s, uint64_t seed) {
    SCOPED_TRACE(describe(s));
    cudaStream_t stream = res.stream();
    const CoarseData data = coarseData(s, seed);
    auto xq = res.alloc<float>(data.xq.size());
    auto cent = res.alloc<float>(data.cent.size());
    auto centNorms = res.alloc<float>(size_t(s.nlist));
    copyToDevice(xq.data(), data.xq.data(), data.xq.size(), stream);
    copyToDevice(cent.data(), data.cent.data(), data.cent.size(), stream);
    kernels::rowSquaredNorms(cent.data(), s.nlist, s.d, centNorms.data(), stream);
    const bool l2 = s.metric == faiss::METRIC_L2;
    const int64_t segments = kernels::coarseFusedSegments(s.nlist);
    const int64_t ld = segments * s.k;
    auto candD = res.alloc<float>(size_t(s.nq * ld));
    auto candI = res.alloc<int64_t>(size_t(s.nq * ld));
    auto qNorms = res.alloc<float>(size_t(s.nq));
    auto fragments =
            res.alloc<float4>(kernels::coarseFusedFragmentBytes(s.nlist, s.d) / sizeof(float4));
    auto outD = res.alloc<float>(size_t(s.nq * s.k));
    auto outI = res.alloc<int64_t>(size_t(s.nq * s.k));
    kernels::coarseFusedSplitCentroids(cent.data(), s.nlist, s.d, fragments.data(), stream);
    kernels::CoarseFusedArgs a;
    a.queries = xq.data();
    a.nq = s.nq;
    a.d = s.d;
    a.centroidFragments = fragments.data();
    a.centroidNorms = l2 ? centNorms.data() : nullptr;
    a.nlist = s.nlist;
    a.innerProduct = !l2;
    a.k = s.k;
    a.candD = candD.data();
    a.candI = candI.data();
    a.queryNorms = l2 ? qNorms.data() : nullptr;
    a.outD = outD.data();
    a.outI = outI.data();
    kernels::coarseFusedSearch(a, stream);
    const auto D = copyToHostVector(candD.data(), size_t(s.nq * ld), stream);
    const auto I = copyToHostVector(candI.data(), size_t(s.nq * ld), stream);
    const auto norms = copyToHostVector(qNorms.data(), size_t(s.nq), stream);
    // The merged results, in FAISS's distances: |q - c|^2, or q.c largest first.
    auto finalD = copyToHostVector(outD.data(), size_t(s.nq * s.k), stream);
    const auto finalI = copyToHostVector(outI.data(), size_t(s.nq * s.k), stream);

    const double cmax = maxCentroidNorm(data, s);
    int failures = 0;
    for (int64_t q = 0; q < s.nq && failures < 5; ++q) {
        double qn = 0;
        for (int j = 0; j < s.d; ++j) {
            qn += double(data.xq[size_t(q * s.d + j)]) * data.xq[size_t(q * s.d + j)];
        }
        // The rounding a key may carry, as the near-tie tolerance: 1e-5 of |q|^2 + max
        // |c|^2 (3xTF32 products summed in FP32 over d <= 256 terms stay well inside it).
        const double tol = 1e-5 * (qn + cmax);
        if (l2 && std::fabs(norms[size_t(q)] - qn) > 1e-5 * qn) {
            ADD_FAILURE() << "query " << q << " norm " << norms[size_t(q)] << " vs " << qn;
            ++failures;
        }
        std::vector<double> all(size_t(s.nlist));
        for (int64_t c = 0; c < s.nlist; ++c) {
            all[size_t(c)] = referenceKey(data, s, q, c);
        }
        for (int64_t seg = 0; seg < segments; ++seg) {
            const int64_t c0 = seg * kernels::kCoarseFusedSegment;
            const int64_t c1 = std::min(c0 + kernels::kCoarseFusedSegment, s.nlist);
            const std::vector<double> keys(all.begin() + c0, all.begin() + c1);
            const size_t at = size_t(q * ld + seg * s.k);
            if (!expectListMatches(
                        &D[at], &I[at], s.k, keys, c0, tol,
                        "query " + std::to_string(q) + " segment " + std::to_string(seg))) {
                ++failures;
            }
        }
        // Finished distances back to keys: L2 |q - c|^2 - |q|^2, inner product -q.c.
        float* row = &finalD[size_t(q * s.k)];
        for (int j = 0; j < s.k; ++j) {
            row[j] = l2 ? float(double(row[j]) - qn) : -row[j];
        }
        if (!expectListMatches(
                    row, &finalI[size_t(q * s.k)], s.k, all, 0, tol,
                    "query " + std::to_string(q) + " (whole coarse search)")) {
            ++failures;
        }
    }
    EXPECT_EQ(failures, 0);
}

} // namespace

// The fused kernel's per-(query, segment) top k, every list capacity, on shapes whose
// last query tile, last segment and last chunk are partial (nq 1000 = 15 x 64 + 40,
// nlist 1000 = 3 x 256 + 232, nlist 259 leaves 3 centroids to a segment of k 8, nlist
// 5 fewer than a chunk), against a double-precision reference.
TEST(GpuIvfCoarseFused, CandidatesMatchDoubleReference) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    if (res.computeCapabilityMajor() < 8) {
        GTEST_SKIP() << "the fused coarse search needs compute capability 8.0";
    }
    const uint64_t seed = testSeed();
    const int64_t nq = smallUnderSanitizer(1000, 100);
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        for (int k : {1, 2, 3, 4, 8}) {
            expectKernelMatchesReference(res, {nq, 128, 1000, k, m}, seed + uint64_t(k));
            expectKernelMatchesReference(res, {nq, 13, 259, k, m}, seed + 10 + uint64_t(k));
        }
        expectKernelMatchesReference(res, {70, 13, 5, 4, m}, seed + 20);
        expectKernelMatchesReference(res, {nq, 13, 4096, 8, m}, seed + 21);
        if (kernels::coarseFusedSmemBytes(256) <= res.maxSharedMemoryPerBlock()) {
            expectKernelMatchesReference(res, {300, 256, 700, 4, m}, seed + 22);
        }
    }
}

// Where the fused coarse search cannot serve: kAuto takes the GEMM path, a forced
// kFused throws naming why (the products must be 3xTF32, nprobe at most 8).
TEST(GpuIvfCoarseFused, RuleAndRefusals) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    FlatSearchInput coarse;
    coarse.nq = 1024;
    coarse.nb = 4096;
    coarse.d = 128;
    coarse.precision = ivfCoarsePrecision(res, coarse, 4);
    const bool tensor = res.computeCapabilityMajor() >= 8;
    EXPECT_EQ(
            ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kAuto),
            tensor ? IvfCoarsePath::kFused : IvfCoarsePath::kGemm);
    EXPECT_EQ(ivfCoarsePathFor(res, coarse, 9, IvfCoarsePath::kAuto), IvfCoarsePath::kGemm);
    // Above kIvfCoarseFusedMaxQueries kAuto keeps the GEMM path; forced, the fused serves.
    coarse.nq = kIvfCoarseFusedMaxQueries + 1;
    EXPECT_EQ(ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kAuto), IvfCoarsePath::kGemm);
    if (tensor) {
        EXPECT_EQ(ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kFused), IvfCoarsePath::kFused);
    }
    coarse.nq = 1024;
    EXPECT_EQ(ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kGemm), IvfCoarsePath::kGemm);
    EXPECT_THROW(ivfCoarsePathFor(res, coarse, 9, IvfCoarsePath::kFused), faiss::FaissException);
    coarse.d = kernels::kCoarseFusedMaxDim + 1;
    EXPECT_EQ(ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kAuto), IvfCoarsePath::kGemm);
    coarse.d = 128;
    coarse.precision = GpuFlatPrecision::kFloat32;
    EXPECT_EQ(ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kAuto), IvfCoarsePath::kGemm);
    try {
        ivfCoarsePathFor(res, coarse, 4, IvfCoarsePath::kFused);
        FAIL() << "the fused coarse search forced on FP32 products";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("3xTF32"), std::string::npos) << e.what();
    }

    // Through the index: nprobe 9 forced is refused by the plan, FP32 at search time;
    // the index answers as before afterwards.
    const int d = 16, k = 5;
    const int64_t nlist = 300, nb = 3000, nq = 50;
    auto xb = datasets::uniform(nb, d, 31);
    auto xq = datasets::uniform(nq, d, 32);
    auto cpu = cpuIvf(d, nlist, faiss::METRIC_L2, xb.data());
    cpu->add(nb, xb.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    std::vector<float> D(nq * k), D2(nq * k);
    std::vector<int64_t> I(nq * k), I2(nq * k);
    gpu.nprobe = 4;
    gpu.search(nq, xq.data(), k, D.data(), I.data());
    GpuIndexIVFFlatAccess::setCoarsePath(gpu, IvfCoarsePath::kFused);
    gpu.nprobe = 9;
    EXPECT_THROW(gpu.search(nq, xq.data(), k, D2.data(), I2.data()), faiss::FaissException);
    gpu.nprobe = 4;
    gpu.coarsePrecision = GpuFlatPrecision::kFloat32;
    EXPECT_THROW(gpu.search(nq, xq.data(), k, D2.data(), I2.data()), faiss::FaissException);
    GpuIndexIVFFlatAccess::setCoarsePath(gpu, IvfCoarsePath::kAuto);
    gpu.search(nq, xq.data(), k, D2.data(), I2.data());
    EXPECT_EQ(compareExact(D, I, D2, I2, nq, k), 0);
}

namespace {

/// One index searched with the GEMM and the fused coarse paths forced (each twice, so
/// the second call of a shape runs from its search graph), nprobe 1, 2, 4, 8 at k 10:
/// both give FAISS CPU's results within 1e-4, and each other's bit for bit (the lists
/// scan the same vectors) except for queries whose nprobe-th centroid ties the next.
void expectCoarsePathsAgree(
        GpuResources& res,
        int d,
        int64_t nlist,
        faiss::MetricType m,
        int64_t nq,
        GpuFlatPrecision precision,
        uint64_t seed) {
    SCOPED_TRACE(
            testing::Message() << "d=" << d << " nlist=" << nlist << " nq=" << nq
                               << " metric=" << (m == faiss::METRIC_L2 ? "L2" : "IP")
                               << " precision=" << int(precision) << " seed=" << seed);
    const int64_t nb = smallUnderSanitizer(5 * nlist, nlist);
    const int k = 10;
    auto xb = datasets::uniform(nb, d, seed);
    auto xq = datasets::uniform(nq, d, seed + 1);
    auto cent = datasets::uniform(nlist, d, seed + 2);
    auto cpu = cpuIvf(d, nlist, m, cent.data());
    cpu->add(nb, xb.data());
    GpuIndexIVFFlat gpu(res, cpu.get());
    gpu.coarsePrecision = precision;
    FlatSearchInput coarse;
    coarse.nq = nq;
    coarse.nb = nlist;
    coarse.d = d;
    coarse.metric = m;
    coarse.precision = precision;
    for (int nprobe : {1, 2, 4, 8}) {
        SCOPED_TRACE(testing::Message() << "nprobe=" << nprobe);
        coarse.precision = ivfCoarsePrecision(res, coarse, nprobe);
        ASSERT_EQ(coarse.precision, GpuFlatPrecision::kTF32x3);
        // kAuto picks the fused path here.
        ASSERT_EQ(
                ivfCoarsePathFor(res, coarse, nprobe, IvfCoarsePath::kAuto), IvfCoarsePath::kFused);
        cpu->nprobe = gpu.nprobe = size_t(nprobe);
        std::vector<float> refD(nq * k);
        std::vector<int64_t> refI(nq * k);
        cpu->search(nq, xq.data(), k, refD.data(), refI.data());
        infForMissing(refD, refI, m);
        const auto skip = coarseTies(*cpu->quantizer, nq, xq.data(), nprobe);
        EXPECT_LE(std::count(skip.begin(), skip.end(), true), nq / 4) << "too many coarse ties";
        std::vector<float> D[2];
        std::vector<int64_t> I[2];
        const IvfCoarsePath forced[2] = {IvfCoarsePath::kGemm, IvfCoarsePath::kFused};
        for (int i = 0; i < 2; ++i) {
            SCOPED_TRACE(forced[i] == IvfCoarsePath::kFused ? "fused" : "gemm");
            GpuIndexIVFFlatAccess::setCoarsePath(gpu, forced[i]);
            ASSERT_EQ(GpuIndexIVFFlatAccess::plan(gpu, nq, k, nprobe).coarsePath, forced[i]);
            D[i].assign(nq * k, 12345.f);
            I[i].assign(nq * k, 777);
            gpu.search(nq, xq.data(), k, D[i].data(), I[i].data());
            EXPECT_EQ(compareKnnRows(refD, refI, D[i], I[i], nq, k, skip, 1e-4f, 1e-4f), 0);
            std::vector<float> again(nq * k);
            std::vector<int64_t> againI(nq * k);
            gpu.search(nq, xq.data(), k, again.data(), againI.data());
            EXPECT_EQ(compareExact(D[i], I[i], again, againI, nq, k), 0) << "second call";
        }
        EXPECT_EQ(compareExact(D[0], I[0], D[1], I[1], nq, k, skip), 0);
    }
    GpuIndexIVFFlatAccess::setCoarsePath(gpu, IvfCoarsePath::kAuto);
}

} // namespace

// The two coarse paths forced on one index: at 1024 queries (where kAuto's precision is
// 3xTF32) and at 200 with 3xTF32 forced; L2 and inner product, d 13 and 128, nlist 1000
// (no multiple of the kernel's tiles) and 4096.
TEST(GpuIndexIVFFlat, FusedCoarseSearchMatchesGemm) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    if (res.computeCapabilityMajor() < 8) {
        GTEST_SKIP() << "the fused coarse search needs compute capability 8.0";
    }
    const uint64_t seed = testSeed();
    for (int d : {13, 128}) {
        for (int64_t nlist : {int64_t(1000), int64_t(4096)}) {
            for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
                const uint64_t s = seed + uint64_t(d + nlist + int(m));
                expectCoarsePathsAgree(res, d, nlist, m, 1024, GpuFlatPrecision::kAuto, s);
                expectCoarsePathsAgree(res, d, nlist, m, 200, GpuFlatPrecision::kTF32x3, s + 7);
            }
        }
    }
}

namespace {

/// A search of `index` on the fused coarse path, 3xTF32, nprobe 4, k 10.
void fusedSearch(
        GpuIndexIVFFlat& index,
        int64_t nq,
        const float* xq,
        std::vector<float>& D,
        std::vector<int64_t>& I) {
    GpuIndexIVFFlatAccess::setCoarsePath(index, IvfCoarsePath::kFused);
    index.coarsePrecision = GpuFlatPrecision::kTF32x3;
    index.nprobe = 4;
    D.resize(size_t(nq) * 10);
    I.resize(size_t(nq) * 10);
    index.search(nq, xq, 10, D.data(), I.data());
}

} // namespace

// The index keeps its centroids' split for the fused coarse search and builds it again
// with every new set of centroids (setQuantizer, copyFrom, train): after each change its
// results are those of a fresh index over the same centroids and lists, bit for bit (a
// split left from the previous centroids would send the queries to other lists).
TEST(GpuIvfCoarseFused, KeptSplitFollowsTheCentroids) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    if (res.computeCapabilityMajor() < 8) {
        GTEST_SKIP() << "the fused coarse search needs compute capability 8.0";
    }
    const int d = 32;
    const int64_t nlist = 300, nb = 3000, nq = 200;
    const auto xb = datasets::uniform(nb, d, 51);
    const auto xq = datasets::uniform(nq, d, 52);
    const auto centA = datasets::uniform(nlist, d, 53);
    const auto centB = datasets::uniform(nlist, d, 54);
    auto cpuA = cpuIvf(d, nlist, faiss::METRIC_L2, centA.data());
    auto cpuB = cpuIvf(d, nlist, faiss::METRIC_L2, centB.data());
    cpuA->add(nb, xb.data());
    cpuB->add(nb, xb.data());
    std::vector<float> D, Dref;
    std::vector<int64_t> I, Iref;

    GpuIndexIVFFlat gpu(res, cpuA.get());
    EXPECT_EQ(
            GpuIndexIVFFlatAccess::coarseFragmentBytes(gpu),
            kernels::coarseFusedFragmentBytes(nlist, d));
    fusedSearch(gpu, nq, xq.data(), D, I);
    {
        GpuIndexIVFFlat fresh(res, cpuA.get());
        fusedSearch(fresh, nq, xq.data(), Dref, Iref);
        EXPECT_EQ(compareExact(D, I, Dref, Iref, nq, 10), 0) << "copied from A";
    }

    gpu.reset();
    gpu.setQuantizer(dynamic_cast<const faiss::IndexFlat*>(cpuB->quantizer));
    gpu.add(nb, xb.data());
    fusedSearch(gpu, nq, xq.data(), D, I);
    {
        GpuIndexIVFFlat fresh(res, cpuB.get());
        fusedSearch(fresh, nq, xq.data(), Dref, Iref);
        EXPECT_EQ(compareExact(D, I, Dref, Iref, nq, 10), 0) << "setQuantizer to B";
    }

    gpu.copyFrom(cpuA.get());
    fusedSearch(gpu, nq, xq.data(), D, I);
    {
        GpuIndexIVFFlat fresh(res, cpuA.get());
        fusedSearch(fresh, nq, xq.data(), Dref, Iref);
        EXPECT_EQ(compareExact(D, I, Dref, Iref, nq, 10), 0) << "copyFrom A";
    }

    gpu.reset();
    gpu.train(nb, xb.data());
    gpu.add(nb, xb.data());
    fusedSearch(gpu, nq, xq.data(), D, I);
    {
        faiss::IndexIVFFlat trained;
        gpu.copyTo(&trained);
        GpuIndexIVFFlat fresh(res, &trained);
        fusedSearch(fresh, nq, xq.data(), Dref, Iref);
        EXPECT_EQ(compareExact(D, I, Dref, Iref, nq, 10), 0) << "trained again";
    }
}
