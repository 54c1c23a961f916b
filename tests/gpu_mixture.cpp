// The mixture's rows drawn on the GPU (benchs/datasets/MixtureGpu.h) against the host's
// draw (Mixture.h): the same rows, up to the last bits of the device's logf / sinf /
// cosf.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "Mixture.h"
#include "MixtureGpu.h"
#include "TestUtil.h"

using namespace faiss_ext::datasets;

namespace {

/// C components in d dimensions: means in [20, 200], lower-triangular factors with a
/// diagonal in [1, 5] and the rest in [-0.3, 0.3], weights uneven.
GaussianMixture randomMixture(std::mt19937_64& rng, int d, int C) {
    std::uniform_real_distribution<float> mean(20.f, 200.f), diag(1.f, 5.f), off(-0.3f, 0.3f);
    GaussianMixture g;
    g.d = d;
    double running = 0;
    for (int c = 0; c < C; ++c) {
        running += 1.0 + double(c % 7);
        g.cumulative.push_back(running);
    }
    for (double& w : g.cumulative) {
        w /= running;
    }
    g.cumulative.back() = 1.0;
    for (int i = 0; i < C * d; ++i) {
        g.means.push_back(mean(rng));
    }
    g.factors.assign(size_t(C) * d * d, 0.f);
    for (int c = 0; c < C; ++c) {
        for (int a = 0; a < d; ++a) {
            for (int b = 0; b <= a; ++b) {
                g.factors[(size_t(c) * d + a) * d + b] = a == b ? diag(rng) : off(rng);
            }
        }
    }
    return g;
}

} // namespace

TEST(MixtureOnGpu, SameRowsAsTheHost) {
    FAISS_EXT_REQUIRE_GPU();
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 90);
    for (int d : {3, 37, 128}) {
        const GaussianMixture g = randomMixture(rng, d, 50);
        const int64_t n = 30001;
        for (bool bytes : {false, true}) {
            const std::vector<float> host = sampleGaussianMixture(g, n, 11, bytes);
            // Chunks of 7000 rows: the last one partial.
            const std::vector<float> gpu = sampleGaussianMixtureOnGpu(g, n, 11, bytes, 7000);
            ASSERT_EQ(gpu.size(), host.size());
            int64_t differing = 0, far = 0;
            for (size_t i = 0; i < host.size(); ++i) {
                const float diff = std::fabs(gpu[i] - host[i]);
                differing += diff != 0.f;
                far += bytes ? diff > 1.f : diff > 1e-4f * (1.f + std::fabs(host[i]));
            }
            std::printf(
                    "d=%d bytes=%d: %lld of %zu values differ from the host's\n", d, int(bytes),
                    (long long)differing, host.size());
            EXPECT_EQ(far, 0) << "d=" << d << " bytes=" << bytes;
            // Bytes differ only where a value falls within the last bits of a boundary.
            if (bytes) {
                EXPECT_LE(differing, int64_t(host.size() / 1000)) << "d=" << d;
            }
        }
    }
}

TEST(MixtureOnGpu, RowsDependOnTheirIndexOnly) {
    FAISS_EXT_REQUIRE_GPU();
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 91);
    const GaussianMixture g = randomMixture(rng, 16, 9);
    const std::vector<float> whole = sampleGaussianMixtureOnGpu(g, 5000, 3, true, 5000);
    const std::vector<float> chunked = sampleGaussianMixtureOnGpu(g, 5000, 3, true, 333);
    const std::vector<float> prefix = sampleGaussianMixtureOnGpu(g, 1234, 3, true, 1);
    EXPECT_EQ(chunked, whole);
    EXPECT_EQ(prefix, std::vector<float>(whole.begin(), whole.begin() + 1234 * 16));
    EXPECT_NE(sampleGaussianMixtureOnGpu(g, 5000, 4, true), whole); // another seed
    EXPECT_TRUE(sampleGaussianMixtureOnGpu(g, 0, 3, true).empty());
}

TEST(MixtureOnGpu, RefusesWhatItCannotDraw) {
    FAISS_EXT_REQUIRE_GPU();
    GaussianMixture empty;
    empty.d = 4;
    EXPECT_THROW(sampleGaussianMixtureOnGpu(empty, 10, 1, true), std::invalid_argument);
    std::mt19937_64 rng(faiss_ext::test::testSeed() + 92);
    const GaussianMixture g = randomMixture(rng, 8, 2);
    EXPECT_THROW(sampleGaussianMixtureOnGpu(g, -1, 1, true), std::invalid_argument);
    EXPECT_THROW(sampleGaussianMixtureOnGpu(g, 10, 1, true, 0), std::invalid_argument);
    // A factor of 400 x 400 floats (625 KB) fits no GPU's shared memory.
    GaussianMixture wide;
    wide.d = 400;
    wide.cumulative = {1.0};
    wide.means.assign(400, 0.f);
    wide.factors.assign(size_t(400) * 400, 0.f);
    EXPECT_THROW(sampleGaussianMixtureOnGpu(wide, 10, 1, true), std::invalid_argument);
}
