#include <faiss_ext/impl/Crc32c.h>

#include <array>
#include <cstring>

namespace faiss_ext {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78; // CRC32C, reflected

/// table[0] is the byte-at-a-time table; table[j][b] is the CRC of byte b followed by
/// j zero bytes, so that 8 bytes are folded with 8 look-ups (slicing by 8).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables makeTables() {
    Tables t{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = b;
        for (int i = 0; i < 8; ++i) {
            c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
        }
        t[0][b] = c;
    }
    for (int j = 1; j < 8; ++j) {
        for (uint32_t b = 0; b < 256; ++b) {
            t[j][b] = (t[j - 1][b] >> 8) ^ t[0][t[j - 1][b] & 0xFF];
        }
    }
    return t;
}

constexpr Tables kTables = makeTables();

} // namespace

uint32_t crc32c(const void* data, size_t bytes, uint32_t crc) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    uint32_t c = ~crc;
    for (; bytes >= 8; bytes -= 8, p += 8) {
        uint32_t lo, hi; // little-endian words, as the file format is
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
                kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
                kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    }
    for (; bytes > 0; --bytes, ++p) {
        c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFF];
    }
    return ~c;
}

} // namespace faiss_ext
