// write_index / read_index of large indexes without a second copy in host memory
// (issue 15): a GpuIndexBang with its vectors placed on the host (PQ mode) and a
// GpuIndexFlat, a few hundred thousand vectors each, go through a file and answer the
// same searches, while the process's peak resident memory during each call stays well
// under one more copy of the vectors above what it holds before and after the call (the
// loaded index's own host rows included there).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/HostMemory.h>
#include <faiss_ext/index_io.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// Whether resetPeakResidentBytes works here: after 64 MiB touched and freed, the peak comes back
/// to the resident memory.
bool peakRssResets() {
    {
        std::vector<char> touched(size_t(64) << 20, 1);
        EXPECT_EQ(touched.back(), 1);
    }
    return resetPeakResidentBytes() &&
            processStatusBytes("VmHWM") < processStatusBytes("VmRSS") + (size_t(8) << 20);
}

/// The peak resident memory of a call above what the process holds before it and after
/// it (what the call leaves, such as a loaded index's host rows, is not a copy).
class TransientRss {
   public:
    TransientRss() : before_(processStatusBytes("VmRSS")) {
        EXPECT_TRUE(resetPeakResidentBytes());
    }
    size_t bytes() const {
        const size_t held = std::max(before_, processStatusBytes("VmRSS"));
        const size_t peak = processStatusBytes("VmHWM");
        return peak > held ? peak - held : 0;
    }

   private:
    size_t before_;
};

struct Results {
    std::vector<float> D;
    std::vector<int64_t> I;
};

Results searchOf(const GpuIndex& index, const std::vector<float>& xq, int k) {
    const int64_t nq = int64_t(xq.size()) / index.d;
    Results r{std::vector<float>(size_t(nq) * k), std::vector<int64_t>(size_t(nq) * k)};
    index.search(nq, xq.data(), k, r.D.data(), r.I.data());
    return r;
}

/// A round trip of a small index through memory first: the kernels and pinned slots
/// the calls use are loaded before those measured.
void warmUp(const GpuIndex& small, GpuResources& res) {
    const std::vector<uint8_t> bytes = serialize_index(&small);
    EXPECT_EQ(deserialize_index(bytes.data(), bytes.size(), res)->ntotal, small.ntotal);
}

/// Saves `index` to a file and loads it, each call under a TransientRss; expects the
/// same search results from the loaded index and transients under half of vectorBytes.
template <typename Index>
void expectStreamedRoundTrip(
        const Index& index,
        GpuResources& res,
        const std::vector<float>& xq,
        size_t vectorBytes,
        const char* file) {
    const int k = 10;
    const Results before = searchOf(index, xq, k);
    const std::string path = std::string(::testing::TempDir()) + file;
    size_t written = 0, read = 0;
    {
        TransientRss rss;
        write_index(&index, path.c_str());
        written = rss.bytes();
    }
    std::unique_ptr<GpuIndex> loaded;
    {
        TransientRss rss;
        loaded = read_index(path.c_str(), res);
        read = rss.bytes();
    }
    std::remove(path.c_str());
    std::printf(
            "%s: vectors %.1f MB; peak above what is held: write_index %.1f MB, read_index "
            "%.1f MB\n",
            file, vectorBytes / 1e6, written / 1e6, read / 1e6);
    EXPECT_LT(written, vectorBytes / 2);
    EXPECT_LT(read, vectorBytes / 2);
    auto* back = dynamic_cast<const Index*>(loaded.get());
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->ntotal, index.ntotal);
    const Results after = searchOf(*back, xq, k);
    EXPECT_EQ(after.I, before.I);
    EXPECT_EQ(after.D, before.D);
}

/// A graph of n nodes and degree R given whole: node v's neighbours v + 1 + 7919 j (mod n).
std::vector<int32_t> stridedGraph(int64_t n, int R) {
    std::vector<int32_t> graph(size_t(n) * R);
    for (int64_t v = 0; v < n; ++v) {
        for (int j = 0; j < R; ++j) {
            graph[size_t(v) * R + j] = int32_t((v + 1 + 7919 * int64_t(j)) % n);
        }
    }
    return graph;
}

} // namespace

TEST(GpuIndexIoStreaming, BangOnTheHostSavesAndLoadsWithoutASecondHostCopy) {
    FAISS_EXT_REQUIRE_GPU();
    if (!peakRssResets()) {
        GTEST_SKIP() << "the peak resident memory cannot be reset here (/proc/self/clear_refs)";
    }
    GpuResources res;
    const int d = 128, R = 32;
    GpuIndexBangConfig config;
    config.pqSubquantizers = 16;
    config.vectorPlacement = BangVectorPlacement::kHost;
    config.build.graphDegree = R;
    // A graph given whole (setGraph trains the PQ): the file does not care how it was
    // built, and the test stays quick.
    auto make = [&](int64_t n) {
        auto index = std::make_unique<GpuIndexBang>(res, d, faiss::METRIC_L2, config);
        const std::vector<float> x = datasets::clustered({n, d, 200, 0.1f, testSeed()});
        index->setGraph(n, x.data(), stridedGraph(n, R).data(), 0);
        return index;
    };
    const std::vector<float> xq = datasets::clustered({200, d, 200, 0.1f, testSeed()}, 1);
    warmUp(*make(20000), res);
    const int64_t n = 250000;
    auto index = make(n);
    ASSERT_EQ(index->hostMemoryBytes(), size_t(n) * d * sizeof(float));
    expectStreamedRoundTrip(
            *index, res, xq, size_t(n) * d * sizeof(float), "bang_host_streamed.fx");
}

// Vectors stored as bytes on the device are written as floats a piece at a time and read
// back into bytes a piece at a time.
TEST(GpuIndexIoStreaming, BangOfBytesSavesAndLoadsWithoutASecondHostCopy) {
    FAISS_EXT_REQUIRE_GPU();
    if (!peakRssResets()) {
        GTEST_SKIP() << "the peak resident memory cannot be reset here (/proc/self/clear_refs)";
    }
    GpuResources res;
    const int d = 128, R = 32;
    GpuIndexBangConfig config;
    config.build.graphDegree = R;
    auto make = [&](int64_t n) {
        auto index = std::make_unique<GpuIndexBang>(res, d, faiss::METRIC_L2, config);
        std::vector<float> x = datasets::uniform(n, d, testSeed() + 2);
        for (float& v : x) {
            v = std::floor(v * 256.f); // bytes
        }
        index->setGraph(n, x.data(), stridedGraph(n, R).data(), 0);
        return index;
    };
    const std::vector<float> xq = datasets::uniform(200, d, testSeed() + 3);
    warmUp(*make(20000), res);
    const int64_t n = 250000;
    auto index = make(n);
    ASSERT_TRUE(index->storesBytes());
    expectStreamedRoundTrip(
            *index, res, xq, size_t(n) * d * sizeof(float), "bang_bytes_streamed.fx");
}

TEST(GpuIndexIoStreaming, FlatSavesAndLoadsWithoutASecondHostCopy) {
    FAISS_EXT_REQUIRE_GPU();
    if (!peakRssResets()) {
        GTEST_SKIP() << "the peak resident memory cannot be reset here (/proc/self/clear_refs)";
    }
    GpuResources res;
    const int d = 128;
    auto make = [&](int64_t n) {
        auto index = std::make_unique<GpuIndexFlat>(res, d);
        index->add(n, datasets::uniform(n, d, testSeed()).data());
        return index;
    };
    const std::vector<float> xq = datasets::uniform(100, d, testSeed() + 1);
    warmUp(*make(20000), res);
    const int64_t n = 400000;
    expectStreamedRoundTrip(*make(n), res, xq, size_t(n) * d * sizeof(float), "flat_streamed.fx");
}
