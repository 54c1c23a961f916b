// The threshold path's banded re-rank (kernels/RerankBand.h) at large k against
// faiss::IndexFlat. Vectors on a grid far from the origin, each stored four times: the
// bf16x3 keys are off by a few grid steps (their bound: ~40), FP32 orders the steps
// exactly, and the k-th distance falls among exact ties. A band that dropped a true
// neighbour returns a farther grid step at some rank, which compareKnn refuses.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <faiss/IndexFlat.h>

#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/FlatThresholdSearch.h>
#include <kernels/RerankBand.h>

#include "FlatTestUtil.h"
#include "TestUtil.h"

using namespace faiss_ext;
using faiss_ext::test::compareKnn;

namespace {

constexpr int kDim = 16;
constexpr int kCopies = 4;
/// Grid step 1/3 (not a bf16 or FP32 value) from 100/3: products ~1500 a dimension, so
/// the bf16x3 key error (~2^-16 of them) is a few squared steps (1/9).
constexpr float kScale = 1.f / 3.f;
constexpr float kOffset = 100.f;

/// n rows of kDim grid values kScale (kOffset + x), x uniform in 0 .. 31.
std::vector<float> gridRows(int64_t n, std::mt19937_64& rng) {
    std::vector<float> out(size_t(n) * kDim);
    for (float& v : out) {
        v = kScale * (kOffset + float(rng() % 32));
    }
    return out;
}

/// The most ids any query lists: those whose exact key is under the sample's k-th key
/// plus the threshold's whole margin (3xTF32 sample, bf16x3 main pass). Below the
/// capacity, no query is re-searched by the tiles path: the band is what is tested.
int64_t mostListed(
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int k,
        bool l2,
        const FlatThresholdPlan& p) {
    const int64_t nb = int64_t(xb.size()) / kDim, nq = int64_t(xq.size()) / kDim;
    float maxNorm = 0;
    for (int64_t i = 0; i < nb; ++i) {
        float s = 0;
        for (int j = 0; j < kDim; ++j) {
            s += xb[i * kDim + j] * xb[i * kDim + j];
        }
        maxNorm = std::max(maxNorm, s);
    }
    const kernels::KeyErrorBound margin =
            kernels::keyErrorBound(kDim, kernels::GemmProduct::kTF32x3) +
            kernels::keyErrorBound(kDim, kernels::GemmProduct::kBF16x3);
    int64_t most = 0;
    for (int64_t qi = 0; qi < nq; ++qi) {
        const float* q = xq.data() + qi * kDim;
        float qn = 0;
        for (int j = 0; j < kDim; ++j) {
            qn += q[j] * q[j];
        }
        std::vector<double> keys(nb), sample;
        for (int64_t i = 0; i < nb; ++i) {
            double qb = 0, bb = 0;
            for (int j = 0; j < kDim; ++j) {
                qb += double(q[j]) * xb[i * kDim + j];
                bb += double(xb[i * kDim + j]) * xb[i * kDim + j];
            }
            keys[i] = l2 ? bb - 2 * qb : -qb;
        }
        for (int64_t s = 0; s < p.sampleRows; ++s) {
            sample.push_back(keys[s * p.sampleStride]);
        }
        std::nth_element(sample.begin(), sample.begin() + (k - 1), sample.end());
        const double threshold =
                sample[k - 1] + 1.01 * kernels::keyErrorOf(margin, qn, maxNorm, l2) + 1.0;
        most = std::max<int64_t>(most, std::count_if(keys.begin(), keys.end(), [&](double v) {
                                     return v <= threshold;
                                 }));
    }
    return most;
}

} // namespace

TEST(GpuFlatSearch, ThresholdPathBandKeepsNearTiesAtLargeK) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    std::mt19937_64 rng(test::testSeed());
    // Under compute-sanitizer 6 queries and a third of the vectors: the band (each
    // query's ~8000 listed ids re-ranked: the sample's k-th is about the 8192nd neighbour
    // at any base) is the same per query, in one re-rank slice instead of two (170
    // queries a slice at this capacity); a smaller base lists fewer ids past it within
    // the margin.
    const int64_t distinctRows = test::smallUnderSanitizer(15000, 5000);
    const std::vector<float> distinct = gridRows(distinctRows, rng);
    std::vector<float> xb;
    for (int c = 0; c < kCopies; ++c) {
        xb.insert(xb.end(), distinct.begin(), distinct.end());
    }
    const int64_t nb = distinctRows * kCopies;
    const int64_t nq = test::smallUnderSanitizer(300, 6);
    const std::vector<float> xq = gridRows(nq, rng);
    for (faiss::MetricType m : {faiss::METRIC_L2, faiss::METRIC_INNER_PRODUCT}) {
        const bool l2 = m == faiss::METRIC_L2;
        faiss::IndexFlat cpu(kDim, m);
        cpu.add(nb, xb.data());
        for (int k : {1024, 2048}) {
            const FlatThresholdPlan plan = planFlatThreshold(
                    nq, nb, kDim, k, kernels::GemmProduct::kBF16x3, res.tempMemoryBytes());
            ASSERT_LT(mostListed(xb, xq, k, l2, plan), plan.capacity) << "k=" << k;
            // The reference in FAISS's direct sums (fewer than 20 queries a call: no
            // norms formula, whose cancellation at these norms is near a grid step).
            std::vector<float> refD(nq * k);
            std::vector<int64_t> refI(nq * k);
            for (int64_t q0 = 0; q0 < nq; q0 += 16) {
                const int64_t n = std::min<int64_t>(16, nq - q0);
                cpu.search(n, xq.data() + q0 * kDim, k, refD.data() + q0 * k, refI.data() + q0 * k);
            }
            for (GpuFlatPrecision p :
                 {GpuFlatPrecision::kAuto, GpuFlatPrecision::kTF32x3, GpuFlatPrecision::kFloat32}) {
                SCOPED_TRACE(
                        testing::Message()
                        << (l2 ? "L2" : "IP") << " k=" << k << " precision " << int(p));
                std::vector<float> D;
                std::vector<int64_t> I;
                test::searchPath(res, xb, xq, kDim, k, m, FlatSearchPath::kThreshold, p, D, I);
                // A grid step is 1/9 of a squared distance (L2, ~100 at the k-th) and of a
                // product (inner product, ~24000): the tolerances are well under one step.
                EXPECT_EQ(compareKnn(refD, refI, D, I, nq, k, l2 ? 1e-5f : 1e-6f, 1e-3f), 0);
            }
        }
    }
}
