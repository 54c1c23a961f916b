#include "Mixture.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include "ByRow.h"
#include "MixtureRow.h"

namespace faiss_ext {
namespace datasets {

namespace {

/// The lower-triangular L with L L^T = a (d x d, symmetric positive definite; double),
/// as floats; throws if a is not positive definite.
std::vector<float> choleskyFactor(const std::vector<double>& a, int d) {
    std::vector<double> l(size_t(d) * d, 0.0);
    for (int i = 0; i < d; ++i) {
        for (int j = 0; j <= i; ++j) {
            double s = a[size_t(i) * d + j];
            for (int k = 0; k < j; ++k) {
                s -= l[size_t(i) * d + k] * l[size_t(j) * d + k];
            }
            if (i == j) {
                if (!(s > 0.0)) {
                    throw std::runtime_error(
                            "fitGaussianMixture: a covariance is not positive definite (NaN "
                            "or infinite rows?)");
                }
                l[size_t(i) * d + i] = std::sqrt(s);
            } else {
                l[size_t(i) * d + j] = s / l[size_t(j) * d + j];
            }
        }
    }
    return std::vector<float>(l.begin(), l.end());
}

} // namespace

GaussianMixture fitGaussianMixture(const float* x, int64_t n, int d, int components) {
    if (n < 1 || d < 1 || components < 1 || components > n) {
        throw std::invalid_argument(
                "fitGaussianMixture: n=" + std::to_string(n) + " d=" + std::to_string(d) +
                " components=" + std::to_string(components));
    }
    const size_t D = size_t(d);
    std::vector<float> centroids(size_t(components) * D);
    faiss::kmeans_clustering(D, size_t(n), size_t(components), x, centroids.data());
    faiss::IndexFlatL2 assign(d);
    assign.add(components, centroids.data());
    std::vector<float> unused(static_cast<size_t>(n));
    std::vector<int64_t> label(static_cast<size_t>(n));
    assign.search(n, x, 1, unused.data(), label.data());

    // Each cluster's members, then its weight, mean and covariance (double, rows in id
    // order: the same numbers for any thread count).
    const int C = components;
    std::vector<std::vector<int64_t>> members(static_cast<size_t>(C));
    for (int64_t i = 0; i < n; ++i) {
        members[size_t(label[size_t(i)])].push_back(i);
    }
    GaussianMixture g;
    g.d = d;
    g.cumulative.resize(size_t(C));
    g.means.resize(size_t(C) * D);
    g.factors.resize(size_t(C) * D * D);
    auto fitCluster = [&](int c) {
        const std::vector<int64_t>& rows = members[size_t(c)];
        const double m = double(std::max<size_t>(rows.size(), 1));
        std::vector<double> mean(D, 0.0), cov(D * D, 0.0);
        for (const int64_t i : rows) {
            const float* row = x + size_t(i) * D;
            for (size_t a = 0; a < D; ++a) {
                mean[a] += row[a];
            }
        }
        for (double& v : mean) {
            v /= m;
        }
        for (const int64_t i : rows) {
            const float* row = x + size_t(i) * D;
            for (size_t a = 0; a < D; ++a) {
                const double da = row[a] - mean[a];
                for (size_t b = 0; b <= a; ++b) {
                    cov[a * D + b] += da * (row[b] - mean[b]);
                }
            }
        }
        double trace = 0.0;
        for (size_t a = 0; a < D; ++a) {
            g.means[size_t(c) * D + a] = float(mean[a]);
            for (size_t b = 0; b <= a; ++b) {
                cov[a * D + b] /= m;
                cov[b * D + a] = cov[a * D + b];
            }
            trace += cov[a * D + a];
        }
        const double ridge = 1e-4 * trace / double(D) + 1e-12;
        for (size_t a = 0; a < D; ++a) {
            cov[a * D + a] += ridge;
        }
        const std::vector<float> l = choleskyFactor(cov, d);
        std::copy(l.begin(), l.end(), g.factors.begin() + size_t(c) * D * D);
    };
    // A cluster's fit is a few million multiply-adds: any split is worth a thread.
    fillRowsInParallel(
            C, 0,
            [&](int64_t c0, int64_t c1) {
                for (int64_t c = c0; c < c1; ++c) {
                    fitCluster(int(c));
                }
            },
            1);
    double running = 0.0;
    for (int c = 0; c < C; ++c) {
        running += double(members[size_t(c)].size()) / double(n);
        g.cumulative[size_t(c)] = running;
    }
    g.cumulative.back() = 1.0; // rounding
    return g;
}

std::vector<float> sampleGaussianMixture(
        const GaussianMixture& g,
        int64_t n,
        uint64_t seed,
        bool bytes,
        int threads) {
    const size_t D = size_t(g.d);
    if (g.components() < 1 || g.d < 1 || n < 0) {
        throw std::invalid_argument("sampleGaussianMixture: an empty mixture or n < 0");
    }
    const uint64_t streamSeed = mixtureStreamSeed(seed);
    std::vector<float> x(size_t(n) * D);
    fillRowsInParallel(n, threads, [&](int64_t begin, int64_t end) {
        std::vector<float> z(D);
        const auto normal = [&z](int b) { return z[size_t(b)]; };
        for (int64_t i = begin; i < end; ++i) {
            RowRng rng(rowSeed(streamSeed, i));
            const int c = mixtureComponent(rng, g.cumulative.data(), g.components());
            for (float& v : z) {
                v = rng.normal();
            }
            const float* mean = g.means.data() + size_t(c) * D;
            const float* l = g.factors.data() + size_t(c) * D * D;
            float* row = x.data() + size_t(i) * D;
            for (size_t a = 0; a < D; ++a) {
                row[a] = mixtureValue(mean[a], l + a * D, int(a), normal, bytes);
            }
        }
    });
    return x;
}

} // namespace datasets
} // namespace faiss_ext
