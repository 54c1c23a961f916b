// IvfLists' host side: a list rebuilt without removed vectors (remove_ids) keeps room
// for as many vectors in its ids as in its data, what append may fill without growing.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/IvfLists.h>
#include <kernels/IvfStore.h>

using namespace faiss_ext;

namespace {

constexpr int kDp = 8;

/// A list of len vectors in the interleaved layout: component j of vector p is
/// 1000 p + j, its id 7 p + 5.
struct RawList {
    std::vector<float> raw;
    std::vector<int64_t> ids;
};

RawList rawList(int64_t len) {
    RawList r;
    r.raw.assign(size_t((len + 31) / 32 * 32) * kDp, -1.f);
    for (int64_t p = 0; p < len; ++p) {
        for (int j = 0; j < kDp; ++j) {
            r.raw[kernels::ivfLayoutIndex(p, j, kDp)] = float(1000 * p + j);
        }
        r.ids.push_back(7 * p + 5);
    }
    return r;
}

/// Compacts a list of len vectors without positions [b, e) and checks what is kept.
void checkCompaction(int64_t len, int64_t b, int64_t e) {
    SCOPED_TRACE(
            "len " + std::to_string(len) + " without [" + std::to_string(b) + ", " +
            std::to_string(e) + ")");
    const RawList in = rawList(len);
    const IvfHostList out = ivfCompactList(
            in.raw.data(), in.ids.data(), len, kDp, [&](int64_t p) { return p >= b && p < e; });
    const int64_t kept = len - (e - b);
    ASSERT_EQ(out.len, kept);
    // The ids have room for as many vectors as the data: append writes up to capacity.
    EXPECT_EQ(out.capacity(), (kept + 31) / 32 * 32);
    ASSERT_EQ(out.data.size(), size_t(out.capacity()) * kDp);
    ASSERT_EQ(out.ids.size(), size_t(out.capacity()));
    int64_t v = 0;
    for (int64_t p = 0; p < len; ++p) {
        if (p >= b && p < e) {
            continue;
        }
        EXPECT_EQ(out.ids[size_t(v)], 7 * p + 5) << "position " << v;
        for (int j = 0; j < kDp; ++j) {
            EXPECT_EQ(out.data[kernels::ivfLayoutIndex(v, j, kDp)], float(1000 * p + j))
                    << "position " << v << " component " << j;
        }
        ++v;
    }
    for (int64_t p = kept; p < out.capacity(); ++p) {
        EXPECT_EQ(out.ids[size_t(p)], -1) << "padding " << p;
    }
}

TEST(IvfCompactList, KeepsOrderAndHasIdsForTheWholeCapacity) {
    // 40 -> 33: capacity 64, so the 7 removed vectors can come back without growing the
    // list (the case where the ids once had room for 33 only).
    checkCompaction(40, 3, 10);
    checkCompaction(40, 0, 1);
    checkCompaction(64, 60, 64);
    checkCompaction(33, 32, 33); // 32 kept: one whole block
    checkCompaction(100, 10, 90);
}

TEST(IvfCompactList, EveryVectorRemovedLeavesNoRoom) {
    checkCompaction(1, 0, 1);
    checkCompaction(45, 0, 45);
}

} // namespace

// The byte copy's layout (kernels/IvfStore.h): within each block of 32 vectors, 16-byte
// group g of vector v at (g * 32 + v % 32) * 16 (what the list-major product reads as
// one uint4 a lane), component j at byte j % 16 of group j / 16; every component of a
// block lands on its own byte of that block, and the block's bytes are all covered once
// the dimension is padded to 16.
TEST(IvfByteLayout, BlocksOfThirtyTwoWithSixteenByteGroups) {
    for (int d : {1, 5, 16, 17, 128, 129}) {
        SCOPED_TRACE(d);
        const int groups = kernels::ivfByteGroups(d);
        EXPECT_EQ(groups, (d + 15) / 16);
        const int64_t blockBytes = int64_t(32) * 16 * groups;
        std::vector<int> hits(size_t(2 * blockBytes), 0);
        for (int64_t v = 0; v < 64; ++v) {
            for (int j = 0; j < 16 * groups; ++j) {
                const int64_t at = kernels::ivfByteLayoutIndex(v, j, d);
                ASSERT_EQ(at / blockBytes, v / 32);
                ASSERT_EQ(at % blockBytes, ((j / 16) * 32 + v % 32) * 16 + j % 16);
                ++hits[size_t(at)];
            }
        }
        for (int h : hits) {
            ASSERT_EQ(h, 1);
        }
    }
}
