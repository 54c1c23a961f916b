// The CRC32C of the index files against published check values.
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/Crc32c.h>

#include "TestUtil.h"

using faiss_ext::crc32c;

TEST(Crc32c, KnownValues) {
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u); // the standard check value
    EXPECT_EQ(crc32c("", 0), 0u);
    // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, of ones, ascending, descending.
    std::vector<uint8_t> b(32, 0);
    EXPECT_EQ(crc32c(b.data(), b.size()), 0x8A9136AAu);
    std::fill(b.begin(), b.end(), 0xFF);
    EXPECT_EQ(crc32c(b.data(), b.size()), 0x62A8AB43u);
    std::iota(b.begin(), b.end(), 0);
    EXPECT_EQ(crc32c(b.data(), b.size()), 0x46DD794Eu);
    for (int i = 0; i < 32; ++i) {
        b[i] = uint8_t(31 - i);
    }
    EXPECT_EQ(crc32c(b.data(), b.size()), 0x113FDB5Cu);
}

TEST(Crc32c, ContinuesAcrossPiecesAndEveryAlignment) {
    std::mt19937_64 rng(faiss_ext::test::testSeed());
    std::vector<uint8_t> b(1000);
    for (uint8_t& v : b) {
        v = uint8_t(rng());
    }
    // The 8-byte loop against the byte-at-a-time tail: every split point and start.
    const uint32_t whole = crc32c(b.data(), b.size());
    for (size_t cut = 0; cut <= 40; ++cut) {
        EXPECT_EQ(crc32c(b.data() + cut, b.size() - cut, crc32c(b.data(), cut)), whole) << cut;
    }
    uint32_t bytewise = 0;
    for (uint8_t v : b) {
        bytewise = crc32c(&v, 1, bytewise);
    }
    EXPECT_EQ(bytewise, whole);
    // One flipped bit changes it.
    b[500] ^= 4;
    EXPECT_NE(crc32c(b.data(), b.size()), whole);
}
