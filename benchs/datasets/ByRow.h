// What the datasets drawn by row share (Synthetic.h's clusteredByRow, Mixture.h): each
// row seeds its own generator, so every thread count and machine draws the same rows,
// and the threads that fill a set's rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

// The row generators run on the GPU too (MixtureGpu.cu): the same rows.
#ifdef __CUDACC__
#define FAISS_EXT_ROW_HD __host__ __device__
#else
#define FAISS_EXT_ROW_HD
#endif

namespace faiss_ext {
namespace datasets {

/// SplitMix64's output function: a well mixed 64-bit value of x.
FAISS_EXT_ROW_HD inline uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Draw k (k >= 1) of a row generator seeded with `seed`: SplitMix64 is a counter, so any
/// draw can be had without the ones before it (the GPU draws a row's normals in parallel).
FAISS_EXT_ROW_HD inline uint64_t rowDraw(uint64_t seed, uint64_t k) {
    return mix64(seed + k * 0x9e3779b97f4a7c15ull);
}

/// Uniform in (0, 1] from a draw: 24 bits.
FAISS_EXT_ROW_HD inline float unitOpenOf(uint64_t draw) {
    return float((draw >> 40) + 1) * (1.f / 16777216.f);
}

/// Box-Muller's pair of standard normals from two draws (radius from the first, angle
/// from the second). The float functions by name (std::'s float overloads call them), so
/// that device code calls its own.
FAISS_EXT_ROW_HD inline void normalPair(uint64_t radius, uint64_t angle, float& c, float& s) {
    const float r = sqrtf(-2.f * logf(unitOpenOf(radius)));
    const float a = 6.2831853f * unitOpenOf(angle);
    c = r * cosf(a);
    s = r * sinf(a);
}

/// SplitMix64 from a row's own seed: uniform draws and Box-Muller normals, draw after draw
/// (the k-th call of next() is rowDraw(seed, k)).
class RowRng {
   public:
    FAISS_EXT_ROW_HD explicit RowRng(uint64_t seed) : state_(seed) {}
    FAISS_EXT_ROW_HD uint64_t next() {
        state_ += 0x9e3779b97f4a7c15ull;
        return mix64(state_);
    }
    /// Uniform in (0, 1]: 24 bits.
    FAISS_EXT_ROW_HD float unitOpen() {
        return unitOpenOf(next());
    }
    /// A standard normal (the pair's second half is kept for the next call).
    FAISS_EXT_ROW_HD float normal() {
        if (hasSpare_) {
            hasSpare_ = false;
            return spare_;
        }
        const uint64_t radius = next();
        const uint64_t angle = next();
        float c;
        normalPair(radius, angle, c, spare_);
        hasSpare_ = true;
        return c;
    }

   private:
    uint64_t state_;
    float spare_ = 0;
    bool hasSpare_ = false;
};

/// The seed of row i of a stream (streamSeed: mix64 of the set's seed and stream).
FAISS_EXT_ROW_HD inline uint64_t rowSeed(uint64_t streamSeed, int64_t i) {
    return mix64(streamSeed + 0xd1b54a32d192ed03ull * uint64_t(i));
}

/// Calls fill(begin, end) over [0, n) split among `threads` threads (0: one per hardware
/// thread; at most one per minPerThread items); the first exception a thread throws is
/// rethrown once all have ended.
template <typename Fill>
void fillRowsInParallel(int64_t n, int threads, Fill fill, int64_t minPerThread = 4096) {
    const int64_t workers = std::max<int64_t>(
            1,
            std::min<int64_t>(
                    threads > 0 ? threads : int64_t(std::thread::hardware_concurrency()),
                    n / minPerThread + 1));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < workers; ++t) {
        pool.emplace_back([&, t] {
            try {
                fill(n * t / workers, n * (t + 1) / workers);
            } catch (...) {
                errors[size_t(t)] = std::current_exception();
            }
        });
    }
    for (std::thread& t : pool) {
        t.join();
    }
    for (const std::exception_ptr& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
}

} // namespace datasets
} // namespace faiss_ext
