// A Gaussian mixture fitted to real vectors, to draw deterministic sets of any size
// that keep a real set's cluster structure and per-cluster shape: each cluster's full
// covariance, so its vectors spread along few directions as real descriptors do, where
// Synthetic.h's blobs are isotropic (a hard case for graphs that grows with n:
// benchs/NOTES.md, twenty-eighth session). Issue 15's 100M x 128 stand-in for
// SIFT100M is this mixture fitted to the carried SIFT 1M (benchs/datasets/README.md).
#pragma once

#include <cstdint>
#include <vector>

namespace faiss_ext {
namespace datasets {

struct GaussianMixture {
    int d = 0;
    std::vector<double> cumulative; ///< per component, the running sum of the weights
    std::vector<float> means;       ///< components x d
    std::vector<float> factors;     ///< components x d x d: lower-triangular L, L L^T = cov

    int components() const {
        return int(cumulative.size());
    }
};

/// Fits `components` Gaussians to the n x d rows x: faiss's k-means (its defaults and
/// seed, so deterministic), then each cluster's weight (its share of the rows), mean and
/// covariance, plus a ridge of 1e-4 of its mean variance (and 1e-12) so that every
/// covariance has a Cholesky factor, even for a cluster of fewer than d rows.
GaussianMixture fitGaussianMixture(const float* x, int64_t n, int d, int components);

/// n rows drawn from g; row i depends only on (g, seed, i), so every thread count
/// (threads 0: one per hardware thread) and every n sharing a prefix give the same
/// rows. A row: a component by weight, then mean + L z with z standard normal. With
/// bytes, each value is rounded and clamped to [0, 255] (descriptors such as SIFT's).
std::vector<float> sampleGaussianMixture(
        const GaussianMixture& g,
        int64_t n,
        uint64_t seed,
        bool bytes,
        int threads = 0);

} // namespace datasets
} // namespace faiss_ext
