// The Bang build's first candidates from IVF lists (impl/IvfSelfKnn.h): each vector's
// approximate k nearest among the others, a GEMM per list. Against the exact k-NN
// (GpuIndexFlat) and against what the IVF-Flat search it replaced finds with the same
// lists and probes; rows well formed (ids in range, no repeats, the vector itself, -1
// only at the end); probing every list gives the exact k-NN; pages and chunks keep the
// recall, the training rows' placement the result; the device memory stays within
// ivfSelfKnnPeakBytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>
#include <vector>

#include <faiss/IndexIVF.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/BangRows.h>
#include <faiss_ext/impl/IvfSelfKnn.h>

#include "BangTestUtil.h"
#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// One call's shape.
struct SelfKnnCase {
    int64_t n = 0;
    int d = 0;
    int k = 0;
    int64_t nlist = 0;
    int nprobe = 0;
    size_t pageBytes = size_t(256) << 20;
    kernels::GemmProduct product = kernels::GemmProduct::kFloat32;
};

/// ivfSelfKnn of the host rows x (copied to the device; trainX: the device copy when
/// trainOnDevice, else x), n x k ids on the host.
std::vector<int64_t> selfKnn(
        const GpuResources& res,
        const std::vector<float>& x,
        const SelfKnnCase& c,
        bool trainOnDevice = false,
        BangVectorStorage storage = BangVectorStorage::kFloat) {
    auto xDev = res.alloc<float>(x.size());
    copyToDevice(xDev.data(), x.data(), x.size(), res.stream());
    BangRows rows(res, c.d);
    rows.assign({{c.n, xDev.data(), nullptr}}, storage);
    EXPECT_EQ(rows.isBytes(), storage == BangVectorStorage::kBytes);
    const DeviceBuffer<int32_t> ids = ivfSelfKnn(
            res, rows.view(), trainOnDevice ? xDev.data() : x.data(), c.k, c.nlist, c.nprobe,
            c.product, c.pageBytes, Progress(false, "test"));
    const std::vector<int32_t> narrow =
            copyToHostVector(ids.data(), size_t(c.n) * c.k, res.stream());
    return std::vector<int64_t>(narrow.begin(), narrow.end());
}

/// The exact k nearest of every row among the rows (GpuIndexFlat); with rows > 0, of the
/// first `rows` rows only.
void exactKnn(
        GpuResources& res,
        const std::vector<float>& x,
        int64_t n,
        int d,
        int k,
        std::vector<float>& D,
        std::vector<int64_t>& I,
        int64_t rows = 0) {
    const int64_t nq = rows > 0 ? rows : n;
    GpuIndexFlat flat(res, d);
    flat.add(n, x.data());
    D.resize(size_t(nq) * k);
    I.resize(size_t(nq) * k);
    flat.search(nq, x.data(), k, D.data(), I.data());
}

/// What the IVF-Flat search finds with the same lists (its k-means, same parameters)
/// and probes: the build's candidates before ivfSelfKnn.
std::vector<int64_t> ivfFlatKnn(
        GpuResources& res,
        const std::vector<float>& x,
        const SelfKnnCase& c) {
    GpuIndexIVFFlat ivf(res, c.d, c.nlist);
    ivf.train(c.n, x.data());
    ivf.add(c.n, x.data());
    faiss::SearchParametersIVF params;
    params.nprobe = size_t(c.nprobe);
    std::vector<float> D(size_t(c.n) * c.k);
    std::vector<int64_t> I(size_t(c.n) * c.k);
    ivf.search(c.n, x.data(), c.k, D.data(), I.data(), &params);
    return I;
}

/// The fraction of the exact rows' ids found in the same rows of I.
double recall(const std::vector<int64_t>& exact, const std::vector<int64_t>& I, int64_t n, int k) {
    int64_t found = 0;
    for (int64_t q = 0; q < n; ++q) {
        const std::unordered_set<int64_t> row(I.begin() + q * k, I.begin() + (q + 1) * k);
        for (int j = 0; j < k; ++j) {
            found += exact[size_t(q * k + j)] >= 0 && row.count(exact[size_t(q * k + j)]);
        }
    }
    return double(found) / double(n * k);
}

/// Squared L2 distances of each row's ids to the row (+inf for -1), in double.
std::vector<float> distancesOf(
        const std::vector<float>& x,
        const std::vector<int64_t>& I,
        int64_t n,
        int d,
        int k) {
    std::vector<float> D(I.size());
    for (int64_t q = 0; q < n; ++q) {
        for (int j = 0; j < k; ++j) {
            const int64_t id = I[size_t(q * k + j)];
            double s = 0;
            for (int c = 0; id >= 0 && c < d; ++c) {
                const double t = double(x[size_t(q * d + c)]) - double(x[size_t(id * d + c)]);
                s += t * t;
            }
            D[size_t(q * k + j)] = id >= 0 ? float(s) : std::numeric_limits<float>::infinity();
        }
    }
    return D;
}

/// Valid ids in row q.
int64_t foundIn(const std::vector<int64_t>& I, int64_t q, int k) {
    return std::count_if(
            I.begin() + q * k, I.begin() + (q + 1) * k, [](int64_t id) { return id >= 0; });
}

/// Checks every row: ids in [0, n) or -1, -1 only after the last id, no id twice, the
/// row's own id present. Returns how many rows hold a -1 (-1 after a bad row).
int64_t paddedRows(const std::vector<int64_t>& I, int64_t n, int k) {
    int64_t padded = 0;
    for (int64_t q = 0; q < n; ++q) {
        std::unordered_set<int64_t> seen;
        bool missing = false;
        for (int j = 0; j < k; ++j) {
            const int64_t id = I[size_t(q * k + j)];
            if (id == -1) {
                missing = true;
                continue;
            }
            if (id < 0 || id >= n || missing || !seen.insert(id).second) {
                ADD_FAILURE() << "row " << q << ": id " << id << " at " << j
                              << " (out of range, after a -1 or twice)";
                return -1;
            }
        }
        if (!seen.count(q)) {
            ADD_FAILURE() << "row " << q << " lacks the vector itself";
            return -1;
        }
        padded += missing;
    }
    return padded;
}

/// ivfSelfKnn's rows are full and equal the exact k-NN's up to ties (distances within
/// 1e-4 relative).
void expectExactSelfKnn(GpuResources& res, const std::vector<float>& x, const SelfKnnCase& c) {
    const std::vector<int64_t> I = selfKnn(res, x, c);
    EXPECT_EQ(paddedRows(I, c.n, c.k), 0);
    std::vector<float> refD;
    std::vector<int64_t> refI;
    exactKnn(res, x, c.n, c.d, c.k, refD, refI);
    EXPECT_EQ(
            compareKnn(refD, refI, distancesOf(x, I, c.n, c.d, c.k), I, c.n, c.k, 1e-4f, 1e-4f), 0);
}

std::vector<float> clusteredRows(int64_t n, int d, uint64_t seed) {
    return datasets::clustered(datasets::ClusteredSpec{n, d, 50, 0.2f, seed}, 0);
}

} // namespace

TEST(IvfSelfKnn, RecallAtLeastTheIvfFlatSearchsOnTheSameListsAndProbes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // Under compute-sanitizer 1200 vectors: the tolerance below is a share of the ids.
    const int64_t n = smallUnderSanitizer(20000, 1200);
    // sqrt(n) lists, as the build.
    const SelfKnnCase c{n, 32, 33, int64_t(std::sqrt(double(n))), 8};
    for (int shape = 0; shape < shapeCount(2, 1); ++shape) {
        const bool clustered = shape == 0;
        SCOPED_TRACE(clustered ? "clustered" : "uniform");
        const std::vector<float> x = clustered ? clusteredRows(c.n, c.d, testSeed() + 1)
                                               : datasets::uniform(c.n, c.d, testSeed() + 2);
        const std::vector<int64_t> I = selfKnn(res, x, c);
        EXPECT_GE(paddedRows(I, c.n, c.k), 0);
        std::vector<float> refD;
        std::vector<int64_t> refI;
        exactKnn(res, x, c.n, c.d, c.k, refD, refI);
        const double ours = recall(refI, I, c.n, c.k);
        const double ivf = recall(refI, ivfFlatKnn(res, x, c), c.n, c.k);
        std::printf(
                "%s: recall@%d %.4f (per-list GEMM) vs %.4f (IVF-Flat search)\n",
                clustered ? "clustered" : "uniform", c.k, ours, ivf);
        // The same centroids (the same k-means on the same rows) and exact distances in
        // the probed lists on both sides: only near ties of the probes' or the
        // neighbours' rounding differ.
        EXPECT_GE(ours, ivf - 0.002);
    }
}

// The build's products: TF32 on tensor cores. Not exact, so near neighbours may trade
// places at the k-th; the recall against the exact k-NN stays that of FP32 products,
// and the rows stay well formed. Bad products are refused.
TEST(IvfSelfKnn, Tf32ProductsKeepTheRecallOfFp32) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int64_t n = smallUnderSanitizer(20000, 1200);
    SelfKnnCase c{n, 64, 33, int64_t(std::sqrt(double(n))), 4};
    const std::vector<float> x = clusteredRows(c.n, c.d, testSeed() + 9);
    std::vector<float> refD;
    std::vector<int64_t> refI;
    exactKnn(res, x, c.n, c.d, c.k, refD, refI);
    const double fp32 = recall(refI, selfKnn(res, x, c), c.n, c.k);
    SelfKnnCase tf32 = c;
    tf32.product = kernels::GemmProduct::kTF32;
    const std::vector<int64_t> I = selfKnn(res, x, tf32);
    EXPECT_GE(paddedRows(I, c.n, c.k), 0);
    const double ours = recall(refI, I, c.n, c.k);
    std::printf("recall@%d: FP32 products %.4f, TF32 %.4f\n", c.k, fp32, ours);
    EXPECT_GE(ours, fp32 - 0.01);
    SelfKnnCase split = c;
    split.product = kernels::GemmProduct::kTF32x3;
    EXPECT_THROW(selfKnn(res, x, split), faiss::FaissException);
}

TEST(IvfSelfKnn, EveryListProbedIsTheExactKnnUpToK1024) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // Under compute-sanitizer 1100 vectors (k 1024 still finds 1024) in 20 lists: each
    // list probed merges into every query's running k best.
    const int64_t n = smallUnderSanitizer(5000, 1100), nlist = smallUnderSanitizer(70, 20);
    const std::vector<float> x = clusteredRows(n, 24, testSeed() + 3);
    for (const int k : {1, 10, 65, 1024}) {
        SCOPED_TRACE(k);
        expectExactSelfKnn(res, x, SelfKnnCase{n, 24, k, nlist, int(nlist)});
    }
}

TEST(IvfSelfKnn, OneListIsTheExactKnn) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    // 8 probes, more than the lists: the one list.
    const int64_t n = smallUnderSanitizer(3000, 1000);
    expectExactSelfKnn(res, datasets::uniform(n, 16, testSeed() + 4), SelfKnnCase{n, 16, 20, 1, 8});
}

TEST(IvfSelfKnn, FewerThanKInTheProbedListsPadsWithMinusOne) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    {
        // A list per vector (k-means of n points into n centroids keeps the points): 8
        // probes find 8 vectors, the vector first. A search per list: fewer under the
        // sanitizer.
        SCOPED_TRACE("nlist = n");
        const int64_t n = underSanitizer() ? 120 : 2000;
        SelfKnnCase c{n, 8, 16, n, 8};
        const std::vector<float> x = datasets::uniform(c.n, c.d, testSeed() + 5);
        const std::vector<int64_t> I = selfKnn(res, x, c);
        EXPECT_EQ(paddedRows(I, c.n, c.k), c.n);
        for (int64_t q = 0; q < c.n; ++q) {
            EXPECT_EQ(I[size_t(q * c.k)], q);
            EXPECT_EQ(foundIn(I, q, c.k), 8) << "row " << q;
        }
    }
    {
        // Tiny n: 2 of n / 10 lists hold about 20 vectors, k is 100; every list probed
        // finds all n, then -1. Under compute-sanitizer n is 150.
        SCOPED_TRACE("tiny n");
        const int64_t n = smallUnderSanitizer(300, 150);
        SelfKnnCase c{n, 8, 100, n / 10, 2};
        const std::vector<float> x = datasets::uniform(c.n, c.d, testSeed() + 6);
        EXPECT_EQ(paddedRows(selfKnn(res, x, c), c.n, c.k), c.n);
        c.k = int(n + 10);
        c.nprobe = int(n / 10);
        const std::vector<int64_t> all = selfKnn(res, x, c);
        EXPECT_EQ(paddedRows(all, c.n, c.k), c.n);
        for (int64_t q = 0; q < c.n; ++q) {
            EXPECT_EQ(foundIn(all, q, c.k), c.n) << "row " << q;
        }
    }
}

TEST(IvfSelfKnn, PagesChunksAndTrainingPlacementKeepTheResult) {
    FAISS_EXT_REQUIRE_GPU();
    // Under compute-sanitizer under half the vectors (the 4 long lists below still take
    // more than one chunk each, and the pages below are still three), and the recalls
    // measured on the first 1000 rows (their exact k-NN, a selection over every row, is
    // the reference).
    const int64_t n = smallUnderSanitizer(20000, 9000), m = smallUnderSanitizer(n, 1000);
    SelfKnnCase c{n, 32, 33, int64_t(std::sqrt(double(n))), 8};
    const std::vector<float> x = clusteredRows(c.n, c.d, testSeed() + 7);
    GpuResources res;
    const std::vector<int64_t> one = selfKnn(res, x, c);
    ASSERT_EQ(ivfSelfKnnPageQueries(c.n, c.k, c.nprobe, c.nlist, c.pageBytes), c.n);
    // Training rows in device memory: the same k-means, the same result.
    EXPECT_EQ(selfKnn(res, x, c, true), one);
    std::vector<float> refD;
    std::vector<int64_t> refI;
    exactKnn(res, x, c.n, c.d, c.k, refD, refI, m);
    // Pages: a page holds kIvfSelfKnnPairsPerList x nlist / nprobe queries at the least,
    // so with 16 lists, all probed, a budget of one byte gives pages of 4096 queries
    // (five; three under compute-sanitizer), each query's later lists bounded by its
    // running best.
    const SelfKnnCase all{c.n, c.d, c.k, 16, 16};
    SelfKnnCase paged = all;
    paged.pageBytes = 1;
    const int64_t pageQueries = kIvfSelfKnnPairsPerList;
    ASSERT_EQ(ivfSelfKnnPageQueries(c.n, c.k, all.nprobe, all.nlist, paged.pageBytes), pageQueries);
    ASSERT_GE((c.n + pageQueries - 1) / pageQueries, 3);
    ASSERT_EQ(ivfSelfKnnPageQueries(c.n, c.k, all.nprobe, all.nlist, all.pageBytes), c.n);
    const std::vector<int64_t> pages = selfKnn(res, x, paged);
    EXPECT_GE(paddedRows(pages, c.n, c.k), 0);
    EXPECT_NEAR(recall(refI, pages, m, c.k), recall(refI, selfKnn(res, x, all), m, c.k), 0.002);
    EXPECT_GE(recall(refI, one, m, c.k), 0.5);
    // 16 MiB of temporaries (the least GpuResources takes) over 4 long lists: each
    // list's ~10000 queries searched in chunks of a few hundred, against the same lists
    // searched whole. Smaller tiles change the products' shapes, k-means' included, so
    // the lists may differ by near ties: the recall stays.
    const SelfKnnCase longLists{c.n, c.d, c.k, 4, 2};
    GpuResourcesConfig small;
    small.tempMemoryBytes = size_t(16) << 20;
    GpuResources smallRes(small);
    ASSERT_LT(
            ivfSelfKnnChunkRows(c.d, c.k, c.n / 4, small.tempMemoryBytes),
            c.n * longLists.nprobe / longLists.nlist);
    const std::vector<int64_t> whole = selfKnn(res, x, longLists);
    const std::vector<int64_t> chunks = selfKnn(smallRes, x, longLists);
    EXPECT_GE(paddedRows(chunks, c.n, c.k), 0);
    EXPECT_NEAR(recall(refI, chunks, m, c.k), recall(refI, whole, m, c.k), 0.002);
}

TEST(IvfSelfKnn, DeviceMemoryWithinThePeakBound) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig rc;
    rc.tempMemoryBytes = size_t(16) << 20;
    GpuResources res(rc);
    // Under compute-sanitizer a tenth of the vectors in sqrt(n) lists; one page (the
    // floor of kIvfSelfKnnPairsPerList pairs a list holds every query).
    SelfKnnCase c{smallUnderSanitizer(60000, 6000), 32, 33, smallUnderSanitizer(245, 77), 8};
    c.pageBytes = size_t(8) << 20;
    const std::vector<float> x = byteValued(clusteredRows(c.n, c.d, testSeed() + 8));
    for (BangVectorStorage storage : {BangVectorStorage::kFloat, BangVectorStorage::kBytes}) {
        const bool bytes = storage == BangVectorStorage::kBytes;
        SCOPED_TRACE(bytes ? "bytes" : "floats");
        BangRows rows(res, c.d);
        rows.assign({{c.n, x.data(), nullptr}}, storage);
        const PoolPeak pool(res);
        {
            const DeviceBuffer<int32_t> ids = ivfSelfKnn(
                    res, rows.view(), x.data(), c.k, c.nlist, c.nprobe, c.product, c.pageBytes,
                    Progress(false, "test"));
            res.synchronize();
        }
        const uint64_t peak = pool.bytes();
        const size_t bound = ivfSelfKnnPeakBytes(
                c.n, c.d, bytes, c.k, c.nlist, c.nprobe, c.pageBytes, rc.tempMemoryBytes);
        std::printf("peak %.1f MiB, bound %.1f MiB\n", peak / 1048576.0, bound / 1048576.0);
        EXPECT_LE(peak, bound);
        // The arrays (all but the page, the temporaries and the conversions) are all held
        // at once.
        const size_t page =
                size_t(ivfSelfKnnPageQueries(c.n, c.k, c.nprobe, c.nlist, c.pageBytes)) *
                ivfSelfKnnBytesPerPageQuery(c.k, c.nprobe);
        const size_t converted = bytes ? c.pageBytes + rc.tempMemoryBytes / 2 : 0;
        EXPECT_GE(peak, bound - page - rc.tempMemoryBytes - converted);
    }
}

// Rows stored as bytes are multiplied as the floats they stand for: the same ids.
TEST(IvfSelfKnn, ByteRowsGiveTheIdsOfFloatRows) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    SelfKnnCase c{smallUnderSanitizer(20000, 3000), 128, 33, 100, 4};
    c.pageBytes = size_t(1) << 20; // pages of 2048 rows in the lists' search
    const std::vector<float> x = byteValued(clusteredRows(c.n, c.d, testSeed() + 9));
    for (kernels::GemmProduct product :
         {kernels::GemmProduct::kFloat32, kernels::GemmProduct::kTF32}) {
        c.product = product;
        EXPECT_EQ(
                selfKnn(res, x, c, false, BangVectorStorage::kBytes),
                selfKnn(res, x, c, false, BangVectorStorage::kFloat));
    }
}
