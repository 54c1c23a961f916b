// Dataset generation and file formats.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "Synthetic.h"
#include "VecsIO.h"

using namespace faiss_ext::datasets;

TEST(Synthetic, DeterministicAndClustered) {
    ClusteredSpec spec;
    spec.n = 2000;
    spec.d = 16;
    spec.clusters = 4;
    spec.spread = 0.01f;
    auto a = clustered(spec);
    auto b = clustered(spec);
    EXPECT_EQ(a, b);
    auto q = clustered(spec, 1);
    EXPECT_NE(a, q);
    // With 4 tight blobs, each vector lies within a few spreads of some other vector.
    int far = 0;
    for (int i = 0; i < 100; ++i) {
        float best = 1e30f;
        for (int j = 0; j < spec.n; ++j) {
            if (j == i)
                continue;
            float s = 0;
            for (int t = 0; t < spec.d; ++t) {
                float diff = a[i * spec.d + t] - a[j * spec.d + t];
                s += diff * diff;
            }
            best = std::min(best, s);
        }
        far += best > 16 * spec.d * spec.spread * spec.spread;
    }
    EXPECT_EQ(far, 0);
}

TEST(Synthetic, ByRowIsTheSameForAnyThreadCountAndPrefix) {
    ClusteredSpec spec;
    spec.n = 5000;
    spec.d = 12;
    spec.clusters = 7;
    spec.spread = 0.05f;
    const auto one = clusteredByRow(spec, 0, 1);
    EXPECT_EQ(clusteredByRow(spec, 0, 3), one);
    EXPECT_EQ(clusteredByRow(spec, 0, 0), one);
    EXPECT_NE(clusteredByRow(spec, 1, 2), one);
    ClusteredSpec shorter = spec;
    shorter.n = 1234;
    const auto prefix = clusteredByRow(shorter, 0, 2);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), one.begin()));
}

TEST(Synthetic, ByRowDrawsNormalNoiseAroundTheCentres) {
    // One blob: the rows' mean is its centre and each component's variance spread^2.
    ClusteredSpec spec;
    spec.n = 40000;
    spec.d = 8;
    spec.clusters = 1;
    spec.spread = 0.2f;
    const auto x = clusteredByRow(spec);
    // The centre: one row of clustered() with a negligible spread (the same centres).
    const auto centre = clustered(ClusteredSpec{1, spec.d, 1, 1e-9f, spec.seed});
    for (int j = 0; j < spec.d; ++j) {
        double sum = 0, sumSq = 0, beyond3 = 0;
        for (int64_t i = 0; i < spec.n; ++i) {
            const double e = x[size_t(i) * spec.d + j] - centre[size_t(j)];
            sum += e;
            sumSq += e * e;
            beyond3 += std::abs(e) > 3 * spec.spread;
        }
        const double mean = sum / spec.n, var = sumSq / spec.n - mean * mean;
        EXPECT_NEAR(mean, 0.0, 0.01) << "component " << j;
        EXPECT_NEAR(var / (spec.spread * spec.spread), 1.0, 0.05) << "component " << j;
        // A normal puts 0.27% beyond 3 sigma.
        EXPECT_NEAR(beyond3 / spec.n, 0.0027, 0.0015) << "component " << j;
    }
}

TEST(Synthetic, UniformRange) {
    auto u = uniform(1000, 8, 7);
    for (float v : u) {
        ASSERT_GE(v, 0.f);
        ASSERT_LT(v, 1.f);
    }
    EXPECT_EQ(u, uniform(1000, 8, 7));
}

namespace {
std::string tmpPath(const char* name) {
    return testing::TempDir() + name;
}
} // namespace

TEST(VecsIO, RoundTripAllFormats) {
    Matrix<float> f{3, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5f}};
    Matrix<int32_t> i{2, 3, {1, -2, 3, 4, 5, 6}};
    Matrix<uint8_t> b{2, 2, {0, 255, 7, 8}};
    writeFvecs(tmpPath("a.fvecs"), f);
    writeIvecs(tmpPath("a.ivecs"), i);
    writeBvecs(tmpPath("a.bvecs"), b);
    writeFbin(tmpPath("a.fbin"), f);
    writeIbin(tmpPath("a.ibin"), i);
    EXPECT_EQ(readFvecs(tmpPath("a.fvecs")).data, f.data);
    EXPECT_EQ(readIvecs(tmpPath("a.ivecs")).data, i.data);
    EXPECT_EQ(readBvecs(tmpPath("a.bvecs")).data, b.data);
    auto fb = readFbin(tmpPath("a.fbin"));
    EXPECT_EQ(fb.n, 3);
    EXPECT_EQ(fb.d, 4);
    EXPECT_EQ(fb.data, f.data);
    EXPECT_EQ(readIbin(tmpPath("a.ibin")).data, i.data);
}

TEST(VecsIO, TruncatedFilesAreRefused) {
    Matrix<float> f{3, 4, std::vector<float>(12, 1.f)};
    writeFvecs(tmpPath("t.fvecs"), f);
    writeFbin(tmpPath("t.fbin"), f);
    for (const char* name : {"t.fvecs", "t.fbin"}) {
        std::string p = tmpPath(name);
        std::ifstream in(p, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(p, std::ios::binary).write(bytes.data(), bytes.size() - 5);
    }
    EXPECT_THROW(readFvecs(tmpPath("t.fvecs")), std::runtime_error);
    EXPECT_THROW(readFbin(tmpPath("t.fbin")), std::runtime_error);
    EXPECT_THROW(readFvecs(tmpPath("missing.fvecs")), std::runtime_error);
}
