// The Gaussian mixture data sets (benchs/datasets/Mixture.h): the fit recovers known
// components, draws are deterministic by row and follow the mixture.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "Mixture.h"

using namespace faiss_ext::datasets;

namespace {

/// Two components in 3-d: A at the origin stretched along x (sd 2, 0.1, 0.1), weight
/// 0.3; B at (10, 10, 10) with unit covariance, weight 0.7.
GaussianMixture twoComponents() {
    GaussianMixture g;
    g.d = 3;
    g.cumulative = {0.3, 1.0};
    g.means = {0, 0, 0, 10, 10, 10};
    g.factors = {2, 0, 0, 0, 0.1f, 0, 0, 0, 0.1f, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    return g;
}

/// Weight, mean and covariance (row-major) of the rows nearer `centre` than `other`.
struct Moments {
    double weight = 0;
    std::vector<double> mean, cov;
};

Moments momentsNear(const std::vector<float>& x, int d, float centre, float other) {
    const int64_t n = int64_t(x.size()) / d;
    std::vector<const float*> rows;
    for (int64_t i = 0; i < n; ++i) {
        const float* r = x.data() + i * d;
        double a = 0, b = 0;
        for (int j = 0; j < d; ++j) {
            a += (r[j] - centre) * (r[j] - centre);
            b += (r[j] - other) * (r[j] - other);
        }
        if (a < b) {
            rows.push_back(r);
        }
    }
    Moments m;
    m.weight = double(rows.size()) / double(n);
    m.mean.assign(size_t(d), 0.0);
    m.cov.assign(size_t(d) * d, 0.0);
    for (const float* r : rows) {
        for (int j = 0; j < d; ++j) {
            m.mean[size_t(j)] += r[j] / double(rows.size());
        }
    }
    for (const float* r : rows) {
        for (int a = 0; a < d; ++a) {
            for (int b = 0; b < d; ++b) {
                m.cov[size_t(a) * d + b] += (r[a] - m.mean[size_t(a)]) *
                        (r[b] - m.mean[size_t(b)]) / double(rows.size());
            }
        }
    }
    return m;
}

void expectMoments(const Moments& m, double weight, double mean, const std::vector<double>& var) {
    EXPECT_NEAR(m.weight, weight, 0.01);
    const size_t d = var.size();
    for (size_t a = 0; a < d; ++a) {
        EXPECT_NEAR(m.mean[a], mean, 0.05) << a;
        for (size_t b = 0; b < d; ++b) {
            const double expected = a == b ? var[a] : 0.0;
            EXPECT_NEAR(m.cov[a * d + b], expected, 0.05 * std::max(1.0, expected))
                    << a << " " << b;
        }
    }
}

} // namespace

TEST(Mixture, DrawsFollowTheMixture) {
    const std::vector<float> x = sampleGaussianMixture(twoComponents(), 200000, 5, false);
    ASSERT_EQ(x.size(), size_t(200000) * 3);
    expectMoments(momentsNear(x, 3, 0.f, 10.f), 0.3, 0.0, {4.0, 0.01, 0.01});
    expectMoments(momentsNear(x, 3, 10.f, 0.f), 0.7, 10.0, {1.0, 1.0, 1.0});
}

TEST(Mixture, FitRecoversTheComponents) {
    const std::vector<float> x = sampleGaussianMixture(twoComponents(), 100000, 6, false);
    const GaussianMixture fit = fitGaussianMixture(x.data(), 100000, 3, 2);
    ASSERT_EQ(fit.components(), 2);
    EXPECT_DOUBLE_EQ(fit.cumulative.back(), 1.0);
    // Drawn again from the fit, the two groups have the same moments.
    const std::vector<float> y = sampleGaussianMixture(fit, 200000, 7, false);
    expectMoments(momentsNear(y, 3, 0.f, 10.f), 0.3, 0.0, {4.0, 0.01, 0.01});
    expectMoments(momentsNear(y, 3, 10.f, 0.f), 0.7, 10.0, {1.0, 1.0, 1.0});
    // A cluster of identical rows still gets a factor (the ridge).
    std::vector<float> same(3 * 50, 2.f);
    const GaussianMixture flat = fitGaussianMixture(same.data(), 50, 3, 1);
    EXPECT_GT(flat.factors[0], 0.f);
}

TEST(Mixture, DrawsAreTheSameForAnyThreadCountAndPrefix) {
    const GaussianMixture g = twoComponents();
    const std::vector<float> one = sampleGaussianMixture(g, 20000, 9, false, 1);
    EXPECT_EQ(sampleGaussianMixture(g, 20000, 9, false, 3), one);
    const std::vector<float> prefix = sampleGaussianMixture(g, 7000, 9, false, 2);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), one.begin()));
    EXPECT_NE(sampleGaussianMixture(g, 20000, 10, false, 1), one);
}

TEST(Mixture, BytesAreRoundedAndClampedAndBadInputRefused) {
    GaussianMixture g;
    g.d = 2;
    g.cumulative = {1.0};
    g.means = {250, 5};
    g.factors = {40, 0, 0, 40};
    const std::vector<float> x = sampleGaussianMixture(g, 10000, 11, true);
    EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) {
        return v >= 0.f && v <= 255.f && v == std::nearbyint(v);
    }));
    EXPECT_GT(std::count(x.begin(), x.end(), 255.f), 1000);
    EXPECT_GT(std::count(x.begin(), x.end(), 0.f), 1000);
    EXPECT_THROW(sampleGaussianMixture(GaussianMixture(), 10, 1, false), std::invalid_argument);
    EXPECT_THROW(fitGaussianMixture(x.data(), 10, 2, 11), std::invalid_argument);
    const std::vector<float> bad = {1.f, NAN, 2.f, 3.f, 4.f, 5.f};
    EXPECT_THROW(fitGaussianMixture(bad.data(), 3, 2, 1), std::exception);
}
