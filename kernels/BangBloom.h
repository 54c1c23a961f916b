// The per-query Bloom filter of the BANG search and the worklist's sort keys: plain
// functions compiled for both host and device, so that the CPU reference search of
// the tests filters and orders exactly like the kernels.
#pragma once

#include <cstdint>
#include <cstring>

#include "HostDevice.h"

namespace faiss_ext {
namespace kernels {

/// 2^17 bits (16 KiB) per query: after 5000 insertions (L = 100 visits ~130 parents
/// of ~40 new neighbours) a false positive (an unseen node skipped) has probability
/// (1 - e^(-2 * 5000 / 2^17))^2 ~ 0.5%.
constexpr int kBangBloomLog2Bits = 17;
constexpr int kBangBloomWords = 1 << (kBangBloomLog2Bits - 5);

FAISS_EXT_HD inline uint32_t bangBloomHash1(uint32_t id) {
    return (id * 0x9E3779B1u) >> (32 - kBangBloomLog2Bits);
}

FAISS_EXT_HD inline uint32_t bangBloomHash2(uint32_t id) {
    uint32_t h = id ^ (id >> 16);
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h & ((1u << kBangBloomLog2Bits) - 1);
}

/// Whether both bits of id are set (id was seen, or a false positive).
FAISS_EXT_HD inline bool bangBloomTest(const uint32_t* words, uint32_t id) {
    const uint32_t a = bangBloomHash1(id), b = bangBloomHash2(id);
    return ((words[a >> 5] >> (a & 31)) & 1u) && ((words[b >> 5] >> (b & 31)) & 1u);
}

/// Worklist and candidate entries are 64-bit keys: the squared L2 distance's bits
/// (non-negative floats order like their bit patterns) above the 32-bit id, so that
/// one integer comparison orders by distance, then by id. kBangEmptyKey sorts last.
constexpr uint64_t kBangEmptyKey = ~uint64_t(0);

FAISS_EXT_HD inline uint64_t bangKey(float dist, int32_t id) {
#ifdef __CUDA_ARCH__
    const uint32_t bits = __float_as_uint(dist);
#else
    uint32_t bits;
    std::memcpy(&bits, &dist, sizeof(bits));
#endif
    return (uint64_t(bits) << 32) | uint32_t(id);
}

FAISS_EXT_HD inline int32_t bangKeyId(uint64_t key) {
    return int32_t(uint32_t(key & 0xffffffffu));
}

FAISS_EXT_HD inline float bangKeyDist(uint64_t key) {
    const uint32_t bits = uint32_t(key >> 32);
#ifdef __CUDA_ARCH__
    return __uint_as_float(bits);
#else
    float d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
#endif
}

} // namespace kernels
} // namespace faiss_ext
