// The pinned staging of host copies (impl/PinnedStaging.h): every chunking case moves
// the bytes exactly, and a search through it answers as one from device arrays.
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/ResourcesAccess.h>

#include "TestUtil.h"

namespace faiss_ext {
namespace {

using test::testSeed;

TEST(PinnedStaging, RoundTripsEveryChunking) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    constexpr size_t slot = PinnedStaging::kSlotBytes;
    std::mt19937_64 rng(testSeed());
    for (size_t bytes :
         {size_t(1), size_t(7), slot - 1, slot, slot + 1, 2 * slot, 3 * slot + 12345,
          size_t(9) * slot}) {
        SCOPED_TRACE(bytes);
        std::vector<uint8_t> in(bytes), out(bytes, 0xab);
        for (auto& b : in) {
            b = uint8_t(rng());
        }
        auto dev = res.alloc<uint8_t>(bytes);
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(dev.data(), 0, bytes, res.stream()));
        GpuResourcesAccess::pinnedStaging(res).toDevice(dev.data(), in.data(), bytes, res.stream());
        // The source may be overwritten as soon as toDevice returns.
        std::vector<uint8_t> expected = in;
        std::fill(in.begin(), in.end(), uint8_t(0));
        GpuResourcesAccess::pinnedStaging(res).toHost(out.data(), dev.data(), bytes, res.stream());
        EXPECT_EQ(out, expected);
    }
}

TEST(PinnedStaging, DeviceToHostWaitsForEarlierWork) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const size_t bytes = 3 * PinnedStaging::kSlotBytes + 100;
    auto dev = res.alloc<uint8_t>(bytes);
    std::vector<uint8_t> out(bytes, 1);
    for (int value : {0x11, 0x22, 0x33}) {
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(dev.data(), value, bytes, res.stream()));
        GpuResourcesAccess::pinnedStaging(res).toHost(out.data(), dev.data(), bytes, res.stream());
        EXPECT_EQ(out, std::vector<uint8_t>(bytes, uint8_t(value)));
    }
}

TEST(PinnedStaging, PairCopiesBothArraysInOneSlotOrApart) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    constexpr size_t slot = PinnedStaging::kSlotBytes;
    std::mt19937_64 rng(testSeed() + 1);
    // Together in one slot (with an empty side), exactly one slot, and past it.
    const std::pair<size_t, size_t> sizes[] = {
            {40, 80},         {0, 24}, {24, 0}, {slot / 2, slot / 2}, {slot / 2, slot / 2 + 1},
            {3 * slot + 5, 7}};
    for (auto [bytesA, bytesB] : sizes) {
        SCOPED_TRACE(std::to_string(bytesA) + " + " + std::to_string(bytesB));
        std::vector<uint8_t> a(bytesA), b(bytesB);
        for (auto& v : a) {
            v = uint8_t(rng());
        }
        for (auto& v : b) {
            v = uint8_t(rng());
        }
        auto devA = res.alloc<uint8_t>(bytesA);
        auto devB = res.alloc<uint8_t>(bytesB);
        GpuResourcesAccess::pinnedStaging(res).toDevice(
                devA.data(), a.data(), bytesA, res.stream());
        GpuResourcesAccess::pinnedStaging(res).toDevice(
                devB.data(), b.data(), bytesB, res.stream());
        std::vector<uint8_t> outA(bytesA, 0xab), outB(bytesB, 0xcd);
        GpuResourcesAccess::pinnedStaging(res).toHost2(
                outA.data(), devA.data(), bytesA, outB.data(), devB.data(), bytesB, res.stream());
        EXPECT_EQ(outA, a);
        EXPECT_EQ(outB, b);
    }
}

} // namespace
} // namespace faiss_ext
