// The band of the IVF list-major key path's re-rank (kernels/IvfKeyBand.h) on the host,
// with the kernels' own FP32 operations (and a model of the tensor cores' 3xTF32 keys):
// each key, distance and norm within the bound the band assumes, and no vector among a
// query's k nearest by its FP32 distance left out of the band, even with every key off by
// its full bound the way that hurts most.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include <kernels/IvfKeyBand.h>
#include <kernels/OperandSplit.h>
#include <kernels/ThresholdFilter.h>

using namespace faiss_ext::kernels;

namespace {

constexpr int kK = 10;

/// One query against n vectors, as the kernels compute it.
struct Row {
    std::vector<float> key;      ///< the product's key: (acc0 + acc1) + |x|^2, -2 q staged
    std::vector<double> keyTrue; ///< |x|^2 - 2 q.x in double
    std::vector<float> dist;     ///< the per-query scan's FP32 distance
    std::vector<double> norm;    ///< |x|^2 in double
    float maxNorm = 0;           ///< the largest FP32 |x|^2 the product summed
    float qn = 0;                ///< |q|^2 in FP32
    double qnTrue = 0;
};

float bitsToFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

uint32_t floatToBits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

/// Tf32Round.cuh's roundToTF32.
float roundToTF32(float x) {
    return bitsToFloat((floatToBits(x) + 0x1000u) & 0xffffe000u);
}

/// What the tensor cores read of an FP32 operand: its TF32 bits (the rest truncated).
double asTF32(float x) {
    return double(bitsToFloat(floatToBits(x) & 0xffffe000u));
}

/// FP32 toward zero: a model of the tensor cores' accumulation, which truncates.
float truncateToFloat(double x) {
    float f = float(x);
    if (std::fabs(double(f)) > std::fabs(x)) {
        f = std::nextafter(f, 0.f);
    }
    return f;
}

/// ivf_list_major.cu's itemKeysTensor on one (query, vector): 3xTF32 k-steps of 8
/// components (group c + t's components 2j and 2j + 1 for the lanes t of a batch of 4
/// groups), each of its three mma.sync modelled as the exact sum of its 8 products and
/// the accumulator truncated to FP32; |x|^2 summed by the four lanes t, then joined by
/// the two shuffles; the key their FP32 sum.
float tensorKey(const float* q, const float* x, int d) {
    const int groups = (d + 3) / 4;
    auto at = [&](const float* v, int c) { return c < d ? v[c] : 0.f; };
    float acc = 0.f;
    float part[4] = {0.f, 0.f, 0.f, 0.f};
    for (int b0 = 0; b0 < groups; b0 += 4) {
        for (int j = 0; j < 2; ++j) {
            double s[3] = {0, 0, 0}; // lo.hi, hi.lo, hi.hi
            for (int t = 0; t < 4 && b0 + t < groups; ++t) {
                for (int e = 0; e < 2; ++e) {
                    const int c = 4 * (b0 + t) + 2 * j + e;
                    const float a = -2.f * at(q, c), b = at(x, c);
                    const float ah = roundToTF32(a), bh = roundToTF32(b);
                    s[0] += asTF32(a - ah) * double(bh);
                    s[1] += double(ah) * asTF32(b - bh);
                    s[2] += double(ah) * double(bh);
                }
            }
            for (double term : s) {
                acc = truncateToFloat(double(acc) + term);
            }
        }
        for (int t = 0; t < 4 && b0 + t < groups; ++t) {
            for (int e = 0; e < 4; ++e) {
                const float v = at(x, 4 * (b0 + t) + e);
                part[t] = std::fma(v, v, part[t]);
            }
        }
    }
    const float norm = (part[0] + part[1]) + (part[2] + part[3]);
    return acc + norm;
}

/// Components 4c .. 4c + 3 go to acc0, acc1, acc0, acc1 (ivf_list_major.cu, IvfListLoader.cuh).
Row computeRow(const std::vector<float>& q, const std::vector<float>& xb, int64_t n, int d) {
    Row r;
    for (int j = 0; j < d; ++j) {
        r.qn = std::fma(q[j], q[j], r.qn);
        r.qnTrue += double(q[j]) * q[j];
    }
    for (int64_t v = 0; v < n; ++v) {
        const float* x = xb.data() + v * d;
        float acc[2] = {0.f, 0.f}, nx[2] = {0.f, 0.f}, dd[2] = {0.f, 0.f};
        double dot = 0, norm = 0;
        for (int j = 0; j < d; ++j) {
            const float staged = -2.f * q[j];
            acc[j % 2] = std::fma(staged, x[j], acc[j % 2]);
            nx[j % 2] = std::fma(x[j], x[j], nx[j % 2]);
            const float e = q[j] - x[j];
            dd[j % 2] = std::fma(e, e, dd[j % 2]);
            dot += double(q[j]) * x[j];
            norm += double(x[j]) * x[j];
        }
        const float nsum = nx[0] + nx[1];
        r.key.push_back((acc[0] + acc[1]) + nsum);
        r.keyTrue.push_back(norm - 2.0 * dot);
        r.dist.push_back(dd[0] + dd[1]);
        r.norm.push_back(norm);
        r.maxNorm = std::max(r.maxNorm, nsum);
    }
    return r;
}

/// The k nearest positions by (FP32 distance, position).
std::vector<int64_t> nearest(const Row& r, int k) {
    std::vector<int64_t> order(r.dist.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return r.dist[size_t(a)] < r.dist[size_t(b)];
    });
    order.resize(size_t(k));
    return order;
}

struct Case {
    int d;
    float offset; ///< added to every component: large offsets make the keys cancel
    float spread; ///< of the vectors around one centre
};

/// Base and query drawn around one centre of components offset + [0, 1).
void draw(
        const Case& c,
        int64_t n,
        std::mt19937_64& rng,
        std::vector<float>& xb,
        std::vector<float>& q) {
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::normal_distribution<float> noise(0.f, c.spread);
    std::vector<float> centre(size_t(c.d));
    for (float& v : centre) {
        v = c.offset + unit(rng);
    }
    xb.resize(size_t(n) * c.d);
    for (int64_t i = 0; i < n * c.d; ++i) {
        xb[size_t(i)] = centre[size_t(i % c.d)] + noise(rng);
    }
    q.resize(size_t(c.d));
    for (int j = 0; j < c.d; ++j) {
        q[size_t(j)] = centre[size_t(j)] + noise(rng);
    }
}

/// The keys' dot-product bound on the tensor cores (IvfListMajorArgs::tensorKeys).
double tensorDotRel(int d) {
    return keyErrorBound(d, GemmProduct::kTF32x3).dotRel;
}

const Case kCases[] = {
        {1, 0.f, 0.3f},      {5, 0.f, 0.3f},     {128, 0.f, 0.1f},     {768, 0.f, 0.1f},
        {128, 100.f, 0.01f}, {768, 50.f, 0.01f}, {2048, 10.f, 0.001f}, {33, 1000.f, 0.1f},
};

} // namespace

// What the band assumes of the kernels' rounding, on real roundings: half of
// ivfKeyErrorRel (the other half is margin) bounds each key's error relative to |x|^2 + 2
// |q| |x|, each distance's relative to the distance, and |q|^2's.
TEST(IvfKeyBand, KernelRoundingWithinTheBound) {
    std::mt19937_64 rng(7);
    for (const Case& c : kCases) {
        SCOPED_TRACE(testing::Message() << "d=" << c.d << " offset=" << c.offset);
        std::vector<float> xb, q;
        draw(c, 500, rng, xb, q);
        const Row r = computeRow(q, xb, 500, c.d);
        const double half = ivfKeyErrorRel(c.d) / 2;
        EXPECT_LE(std::fabs(r.qn - r.qnTrue), half * r.qnTrue);
        for (size_t v = 0; v < r.key.size(); ++v) {
            const double scale = r.norm[v] + 2.0 * std::sqrt(r.qnTrue * r.norm[v]);
            ASSERT_LE(std::fabs(r.key[v] - r.keyTrue[v]), half * scale) << "vector " << v;
            const double distTrue = r.keyTrue[v] + r.qnTrue;
            ASSERT_LE(std::fabs(r.dist[v] - distTrue), half * std::fabs(distTrue) + 1e-30)
                    << "vector " << v;
        }
    }
}

// Every key moved by its whole bound W the way that hurts (the k nearest up, the others
// down): the k nearest by FP32 distance still lie within the band of the moved keys' k-th,
// for the FP32 product's bound and the tensor cores'. Without the band's margin (the k-th
// key alone) they do not, on the offset sets.
TEST(IvfKeyBand, BandHoldsTheNearestAgainstWorstCaseKeys) {
    std::mt19937_64 rng(11);
    for (const bool tensor : {false, true}) {
        int missedWithoutMargin = 0;
        for (const Case& c : kCases) {
            SCOPED_TRACE(
                    testing::Message()
                    << "d=" << c.d << " offset=" << c.offset << " tensor=" << tensor);
            const int64_t n = 2000;
            std::vector<float> xb, q;
            draw(c, n, rng, xb, q);
            const Row r = computeRow(q, xb, n, c.d);
            const double rel = ivfKeyErrorRel(c.d);
            const double dotRel = tensor ? tensorDotRel(c.d) : rel;
            const double w = rel * r.maxNorm + dotRel * 2.0 * std::sqrt(double(r.qn) * r.maxNorm);
            const std::vector<int64_t> best = nearest(r, kK);
            std::vector<float> moved(r.key.size());
            for (size_t v = 0; v < moved.size(); ++v) {
                const bool near = std::find(best.begin(), best.end(), int64_t(v)) != best.end();
                moved[v] = float(r.keyTrue[v] + (near ? w : -w));
            }
            std::vector<float> sorted = moved;
            std::nth_element(sorted.begin(), sorted.begin() + (kK - 1), sorted.end());
            const float kth = sorted[kK - 1];
            const float limit = ivfKeyBandLimit(kth, r.qn, r.maxNorm, c.d, dotRel);
            EXPECT_GE(limit, kth);
            bool missed = false;
            for (int64_t v : best) {
                EXPECT_LE(moved[size_t(v)], limit) << "vector " << v;
                missed = missed || moved[size_t(v)] > kth;
            }
            missedWithoutMargin += missed ? 1 : 0;
        }
        EXPECT_GT(missedWithoutMargin, 0);
    }
}

// Fewer than k finite keys: every finite key is listed. The limit grows with the norms.
TEST(IvfKeyBand, LimitEdges) {
    const float inf = std::numeric_limits<float>::infinity();
    auto limit = [](float kth, float qn, float maxNorm, int d) {
        return ivfKeyBandLimit(kth, qn, maxNorm, d, ivfKeyErrorRel(d));
    };
    EXPECT_EQ(limit(inf, 4.f, 9.f, 128), inf);
    EXPECT_GE(limit(-3.f, 4.f, 9.f, 128), -3.f);
    EXPECT_LT(limit(-3.f, 4.f, 9.f, 128), limit(-3.f, 4.f, 90.f, 128));
    EXPECT_LT(limit(-3.f, 4.f, 9.f, 128), limit(-3.f, 4.f, 9.f, 1024));
    // A zero query and zero vectors: the keys are exact, the band is the k-th key.
    EXPECT_EQ(limit(0.f, 0.f, 0.f, 16), 0.f);
    // The tensor cores' larger dot-product bound widens the band; a bound below the FP32
    // product's is taken as the FP32 one.
    EXPECT_LT(limit(-3.f, 4.f, 9.f, 768), ivfKeyBandLimit(-3.f, 4.f, 9.f, 768, tensorDotRel(768)));
    EXPECT_EQ(limit(-3.f, 4.f, 9.f, 768), ivfKeyBandLimit(-3.f, 4.f, 9.f, 768, 0.0));
}

// The tensor cores' keys (modelled: exact products of the TF32 parts, each mma's sum
// truncated to FP32) within half of the band's W for the tensor bound, rel |x|^2 + dotRel
// 2 |q| |x|, the other half margin. The model rounds: the keys are not all exact.
TEST(IvfKeyBand, TensorKeysWithinTheirBound) {
    std::mt19937_64 rng(13);
    double largestShare = 0; // of the half bound
    for (const Case& c : kCases) {
        SCOPED_TRACE(testing::Message() << "d=" << c.d << " offset=" << c.offset);
        std::vector<float> xb, q;
        draw(c, 300, rng, xb, q);
        const Row r = computeRow(q, xb, 300, c.d);
        const double rel = ivfKeyErrorRel(c.d);
        const double dotRel = tensorDotRel(c.d);
        for (size_t v = 0; v < r.key.size(); ++v) {
            const float key = tensorKey(q.data(), xb.data() + v * c.d, c.d);
            const double half =
                    (rel * r.norm[v] + dotRel * 2.0 * std::sqrt(r.qnTrue * r.norm[v])) / 2;
            const double err = std::fabs(double(key) - r.keyTrue[v]);
            ASSERT_LE(err, half) << "vector " << v;
            largestShare = std::max(largestShare, err / half);
        }
    }
    EXPECT_GT(largestShare, 0.0);
    std::printf("largest tensor-key error: %.3f of half the bound\n", largestShare);
}
