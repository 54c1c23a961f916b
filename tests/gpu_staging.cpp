// The pinned staging of host copies (impl/PinnedStaging.h): every chunking case moves
// the bytes exactly, and a search through it answers as one from device arrays. The
// search graphs' copy kernel (kernels/MappedCopy.h) between device memory and mapped
// host memory, on its 16-byte and 4-byte word paths, both ways.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/MappedHostBuffer.h>
#include <faiss_ext/impl/ResourcesAccess.h>
#include <kernels/MappedCopy.h>

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

TEST(MappedCopy, CopiesEveryAlignmentBothWays) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    cudaStream_t stream = res.stream();
    std::mt19937_64 rng(testSeed());
    constexpr size_t kWords = 70001; // several blocks' worth, not a multiple of 4
    MappedHostBuffer<uint32_t> host(kWords, stream), back(kWords, stream), after(1, stream);
    for (size_t i = 0; i < kWords; ++i) {
        host.data()[i] = uint32_t(rng());
    }
    auto dev = res.alloc<uint32_t>(kWords + 1);
    // Offsets of 0 words (both ends 16-byte aligned: 16-byte words and a tail) and of
    // 1 and 3 words (4-byte words only); lengths with and without a partial 16 bytes.
    for (size_t offset : {size_t(0), size_t(1), size_t(3)}) {
        for (size_t words : {size_t(0), size_t(1), size_t(5), size_t(4096), kWords - 3}) {
            SCOPED_TRACE(testing::Message() << "offset " << offset << " words " << words);
            FAISS_EXT_CUDA_CHECK(
                    cudaMemsetAsync(dev.data(), 0, (kWords + 1) * sizeof(uint32_t), stream));
            FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
            std::fill(back.data(), back.data() + kWords, 0u);
            after.data()[0] = 7u;
            const kernels::CopySpan in{
                    dev.data() + offset, host.deviceData() + offset, words * sizeof(uint32_t)};
            kernels::copySpans(&in, 1, res.multiProcessorCount(), stream);
            // Two spans in one launch, device to host: the copied words, and the device
            // word after them (still zero: the copy in wrote nothing past its end).
            const kernels::CopySpan out[2] = {
                    {back.deviceData() + offset, dev.data() + offset, words * sizeof(uint32_t)},
                    {after.deviceData(), dev.data() + offset + words, sizeof(uint32_t)}};
            kernels::copySpans(out, 2, res.multiProcessorCount(), stream);
            FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
            for (size_t i = 0; i < kWords; ++i) {
                const uint32_t want = i >= offset && i < offset + words ? host.data()[i] : 0u;
                ASSERT_EQ(back.data()[i], want) << "word " << i;
            }
            ASSERT_EQ(after.data()[0], 0u);
        }
    }
}

TEST(MappedCopy, RefusesPartialWordsAndTooManySpans) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    auto dev = res.alloc<uint32_t>(4);
    const kernels::CopySpan partial{dev.data(), dev.data() + 2, 6};
    EXPECT_THROW(
            kernels::copySpans(&partial, 1, res.multiProcessorCount(), res.stream()),
            faiss::FaissException);
    const kernels::CopySpan unaligned{reinterpret_cast<char*>(dev.data()) + 2, dev.data() + 2, 4};
    EXPECT_THROW(
            kernels::copySpans(&unaligned, 1, res.multiProcessorCount(), res.stream()),
            faiss::FaissException);
    const kernels::CopySpan three[3] = {};
    EXPECT_THROW(
            kernels::copySpans(three, 3, res.multiProcessorCount(), res.stream()),
            faiss::FaissException);
}

} // namespace
} // namespace faiss_ext
