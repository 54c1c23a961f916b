// Dataset generation and file formats.
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
