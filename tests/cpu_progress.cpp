// The verbose reports (impl/Progress.h) and the host side of locating a caller's
// arrays (utils/MemorySpace.h): host-only logic, run on every machine.
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/Progress.h>
#include <faiss_ext/utils/MemorySpace.h>

using namespace faiss_ext;

namespace {

std::string printed(const std::function<void()>& f) {
    ::testing::internal::CaptureStdout();
    f();
    return ::testing::internal::GetCapturedStdout();
}

} // namespace

TEST(Progress, SilentUnlessEnabled) {
    const Progress off(false, "GpuIndexFlat::add");
    EXPECT_EQ(
            printed([&] {
                off.report("vectors stored", 0.5);
                off.step("vectors stored", 1, 2);
                off.part(0.5, 1).report("later", 1);
            }),
            "");
}

TEST(Progress, LinesNameTheCallPhaseFractionAndTime) {
    const Progress on(true, "GpuIndexIVFFlat::train");
    const std::string out = printed([&] {
        on.report("centroids stored", 0.25);
        on.step("k-means iteration", 3, 10);
    });
    const std::regex line(
            "GpuIndexIVFFlat::train: centroids stored, 25\\.0% done, [0-9]+\\.[0-9]{3} s\n"
            "GpuIndexIVFFlat::train: k-means iteration 3/10, 30\\.0% done, [0-9]+\\.[0-9]{3} s\n");
    EXPECT_TRUE(std::regex_match(out, line)) << out;
}

TEST(Progress, PartsMapTheirFractionsIntoTheWhole) {
    const Progress on(true, "GpuIndexBang::add");
    const Progress build = on.part(0, 0.8);
    const Progress pq = on.part(0.8, 1.0);
    const std::string out = printed([&] {
        build.step("stage", 1, 4);            // 0.25 of [0, 0.8]
        build.part(0.5, 1).report("half", 0); // start of [0.4, 0.8]
        pq.report("PQ codes", 1.0);           // end of [0.8, 1]
    });
    EXPECT_NE(out.find("stage 1/4, 20.0% done"), std::string::npos) << out;
    EXPECT_NE(out.find("half, 40.0% done"), std::string::npos) << out;
    EXPECT_NE(out.find("PQ codes, 100.0% done"), std::string::npos) << out;
}

TEST(MemorySpace, HostArraysAreHost) {
    std::vector<float> heap(16);
    float stack[4] = {};
    EXPECT_EQ(memorySpaceOf(heap.data(), 0, "x"), MemorySpace::kHost);
    EXPECT_EQ(memorySpaceOf(stack, 0, "x"), MemorySpace::kHost);
}
