// The band of the threshold path's re-rank (kernels/RerankBand.h) on the host: with every
// listed key off by its full proven bound in the direction that hurts most, no id the
// band drops may be among the k nearest by the re-rank's FP32 distance.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <kernels/RerankBand.h>

using namespace faiss_ext::kernels;

namespace {

/// rerankListed's distance in FP32, summed as its kernel sums it: 32 lanes over strided
/// columns, then a butterfly of shuffle sums (lane 0's value).
float rerankDistance(const float* q, const float* b, int d, bool l2) {
    float lanes[32] = {};
    for (int i = 0; i < d; ++i) {
        if (l2) {
            const float t = q[i] - b[i];
            lanes[i % 32] += t * t;
        } else {
            lanes[i % 32] += q[i] * b[i];
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float next[32];
        for (int l = 0; l < 32; ++l) {
            next[l] = lanes[l] + lanes[l ^ off];
        }
        std::copy(next, next + 32, lanes);
    }
    return l2 ? lanes[0] : -lanes[0];
}

/// One query against the whole base, every id listed.
struct Listed {
    std::vector<double> key; ///< exact |b|^2 - 2 q.b (L2) or -q.b
    std::vector<float> dist; ///< rerankDistance
    float qn = 0;            ///< |q|^2 in FP32
};

/// Base rows in tight clusters (noise ~1e-5, far below the keys' error bounds, far above
/// FP32's resolution of the distances): the cluster at a query's k-th distance holds
/// near-ties that a low-precision key cannot order.
std::vector<float> clusteredBase(
        int64_t clusters,
        int64_t perCluster,
        int d,
        std::mt19937_64& rng) {
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> xb;
    for (int64_t c = 0; c < clusters; ++c) {
        std::vector<float> center(d);
        for (float& v : center) {
            v = unit(rng);
        }
        for (int64_t m = 0; m < perCluster; ++m) {
            for (int j = 0; j < d; ++j) {
                xb.push_back(center[j] + 1e-5f * (unit(rng) - 0.5f));
            }
        }
    }
    return xb;
}

Listed listAll(const std::vector<float>& xb, const float* q, int d, bool l2) {
    const int64_t nb = int64_t(xb.size()) / d;
    Listed out;
    for (int j = 0; j < d; ++j) {
        out.qn += q[j] * q[j];
    }
    for (int64_t i = 0; i < nb; ++i) {
        const float* b = xb.data() + i * d;
        double qb = 0, bb = 0;
        for (int j = 0; j < d; ++j) {
            qb += double(q[j]) * b[j];
            bb += double(b[j]) * b[j];
        }
        out.key.push_back(l2 ? bb - 2 * qb : -qb);
        out.dist.push_back(rerankDistance(q, b, d, l2));
    }
    return out;
}

/// Applies the band with keys off by 0.99 of the bound e: up for every id the re-rank
/// may select (distance at most the k-th), down for the others. Returns how many dropped
/// ids have fewer than k re-ranked distances strictly below their own (0: the band
/// is safe); *kept gets the ids inside the band.
int64_t droppedNeighbours(
        const Listed& l,
        int k,
        float e,
        KeyErrorBound keyBound,
        float rerankRel,
        float maxBaseNorm,
        bool l2,
        int64_t* kept) {
    const int64_t n = int64_t(l.dist.size());
    std::vector<float> sorted = l.dist;
    std::sort(sorted.begin(), sorted.end());
    const float kthDist = sorted[k - 1];
    std::vector<float> keys(n);
    for (int64_t i = 0; i < n; ++i) {
        keys[i] = float(l.key[i] + (l.dist[i] <= kthDist ? 0.99 : -0.99) * e);
    }
    std::vector<float> byKey = keys;
    std::nth_element(byKey.begin(), byKey.begin() + (k - 1), byKey.end());
    const float limit = rerankBandLimit(byKey[k - 1], l.qn, maxBaseNorm, keyBound, rerankRel, l2);
    int64_t bad = 0;
    *kept = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (keys[i] <= limit) {
            ++*kept;
            continue;
        }
        const int64_t below =
                std::lower_bound(sorted.begin(), sorted.end(), l.dist[i]) - sorted.begin();
        bad += below < k;
    }
    return bad;
}

} // namespace

TEST(RerankBand, KeepsEveryNeighbourOfTheReRankUnderWorstCaseKeyErrors) {
    std::mt19937_64 rng(20261125);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    for (int d : {16, 64, 768}) {
        const auto xb = clusteredBase(100, 40, d, rng);
        const int64_t nb = int64_t(xb.size()) / d;
        float maxBaseNorm = 0;
        for (int64_t i = 0; i < nb; ++i) {
            float s = 0;
            for (int j = 0; j < d; ++j) {
                s += xb[i * d + j] * xb[i * d + j];
            }
            maxBaseNorm = std::max(maxBaseNorm, s);
        }
        for (bool l2 : {true, false}) {
            int64_t halfBandDrops = 0;
            for (int qi = 0; qi < 20; ++qi) {
                std::vector<float> q(d);
                for (float& v : q) {
                    v = unit(rng);
                }
                const Listed l = listAll(xb, q.data(), d, l2);
                for (GemmProduct product :
                     {GemmProduct::kFloat32, GemmProduct::kTF32x3, GemmProduct::kBF16x3}) {
                    const KeyErrorBound bound = keyErrorBound(d, product);
                    const float e = keyErrorOf(bound, l.qn, maxBaseNorm, l2);
                    for (int k : {1, 10, 100, 1000}) {
                        SCOPED_TRACE(
                                testing::Message()
                                << "d=" << d << (l2 ? " L2" : " IP") << " query " << qi
                                << " product " << int(product) << " k=" << k);
                        int64_t kept = 0;
                        EXPECT_EQ(
                                droppedNeighbours(
                                        l, k, e, bound, rerankErrorRel(d), maxBaseNorm, l2, &kept),
                                0);
                        EXPECT_GE(kept, k);
                        if (product == GemmProduct::kBF16x3 && k <= 100) {
                            EXPECT_LT(kept, nb / 2); // the band does cut the list
                        }
                        if (product == GemmProduct::kBF16x3) {
                            // The control: a band of W, not 2 W, is not safe.
                            const KeyErrorBound half{bound.dotRel / 2, bound.normRel / 2};
                            halfBandDrops +=
                                    droppedNeighbours(l, k, e, half, 0.f, maxBaseNorm, l2, &kept);
                        }
                    }
                }
            }
            EXPECT_GT(halfBandDrops, 0) << "d=" << d << (l2 ? " L2" : " IP");
        }
    }
}

TEST(RerankBand, LimitIsTheKthKeyPlusTwiceTheBoundRoundedUp) {
    const KeyErrorBound bound = keyErrorBound(128, GemmProduct::kBF16x3);
    for (bool l2 : {true, false}) {
        const float qn = 40.f, maxBaseNorm = 60.f, kth = 17.25f;
        const float w = keyErrorOf(bound, qn, maxBaseNorm, l2) +
                rerankErrorRel(128) *
                        (l2 ? qn + 2.f * std::sqrt(qn * maxBaseNorm) + maxBaseNorm
                            : std::sqrt(qn * maxBaseNorm));
        const float limit = rerankBandLimit(kth, qn, maxBaseNorm, bound, rerankErrorRel(128), l2);
        EXPECT_GE(double(limit), double(kth) + 2.0 * double(w));
        EXPECT_LE(double(limit), (double(kth) + 2.0 * double(w)) * (1 + 1e-6));
        // Fewer than k listed: everything is kept.
        EXPECT_EQ(
                rerankBandLimit(INFINITY, qn, maxBaseNorm, bound, rerankErrorRel(128), l2),
                INFINITY);
    }
    // The re-rank's rounding: 2 gamma_(ceil(d / 32) + 8).
    EXPECT_FLOAT_EQ(rerankErrorRel(1), float(2.0 * 9 / (1 << 24)));
    EXPECT_FLOAT_EQ(rerankErrorRel(768), float(2.0 * 32 / (1 << 24)));
}
