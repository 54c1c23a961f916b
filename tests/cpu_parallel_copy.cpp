// The host copies of the pinned staging: every byte lands, none outside the destination,
// at any alignment and at sizes on both sides of the one-thread cutoff.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/ParallelCopy.h>

namespace {

using faiss_ext::CopyPart;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = uint8_t(i * 131 + seed + (i >> 9));
    }
    return v;
}

// Copies `bytes` from src + srcOff to dst + dstOff with `copy`; checks the copy and the
// guard bytes around it.
template <typename Copy>
void checkCopy(size_t bytes, size_t srcOff, size_t dstOff, Copy copy) {
    const std::vector<uint8_t> src = pattern(bytes + srcOff, 7);
    std::vector<uint8_t> dst(bytes + dstOff + 64, 0xEE);
    copy(dst.data() + dstOff, src.data() + srcOff, bytes);
    for (size_t i = 0; i < dstOff; ++i) {
        ASSERT_EQ(dst[i], 0xEE) << "byte " << i << " before the copy, bytes " << bytes;
    }
    for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(dst[dstOff + i], src[srcOff + i])
                << "byte " << i << " of " << bytes << ", offsets " << srcOff << " / " << dstOff;
    }
    for (size_t i = bytes + dstOff; i < dst.size(); ++i) {
        ASSERT_EQ(dst[i], 0xEE) << "byte " << i << " after the copy, bytes " << bytes;
    }
}

// The copies run on one thread below 256 KB.
const size_t kCutoff = 256 << 10;
const size_t kSizes[] = {
        0, 1, 15, 16, 17, 63, 64, 100, 4095, kCutoff - 1, kCutoff, kCutoff * 3 + 5, (1 << 20) + 13};

TEST(ParallelCopy, ForDmaCopiesEveryByteAtAnyAlignment) {
    for (size_t bytes : kSizes) {
        for (size_t srcOff : {0, 1, 8, 13}) {
            for (size_t dstOff : {0, 3, 16, 33}) {
                checkCopy(bytes, srcOff, dstOff, [](void* d, const void* s, size_t n) {
                    faiss_ext::parallelCopyForDma(d, s, n);
                });
            }
        }
    }
}

TEST(ParallelCopy, PlainCopiesEveryByteAtAnyAlignment) {
    for (size_t bytes : kSizes) {
        for (size_t srcOff : {0, 5}) {
            for (size_t dstOff : {0, 7}) {
                checkCopy(bytes, srcOff, dstOff, [](void* d, const void* s, size_t n) {
                    faiss_ext::parallelCopy(d, s, n);
                });
            }
        }
    }
}

TEST(ParallelCopy, PartsLaidEndToEndLandInTheirOwnDestinations) {
    // Two parts whose shared thread shares cross the boundary between them.
    const size_t a = (128 << 10) * 2 + 11, b = (128 << 10) * 5 + 3;
    const std::vector<uint8_t> srcA = pattern(a, 1), srcB = pattern(b, 2);
    std::vector<uint8_t> dstA(a, 0), dstB(b, 0);
    const CopyPart parts[2] = {{dstA.data(), srcA.data(), a}, {dstB.data(), srcB.data(), b}};
    faiss_ext::parallelCopy(parts, 2);
    EXPECT_EQ(dstA, srcA);
    EXPECT_EQ(dstB, srcB);
}

} // namespace
