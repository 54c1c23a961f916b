#include "Synthetic.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

namespace faiss_ext {
namespace datasets {

namespace {

std::vector<float> clusterCentres(const ClusteredSpec& spec) {
    std::mt19937_64 centreRng(spec.seed);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> centres(size_t(spec.clusters) * spec.d);
    for (float& c : centres) {
        c = unit(centreRng);
    }
    return centres;
}

/// SplitMix64's output function: a well mixed 64-bit value of x.
uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// SplitMix64 from a row's own seed: uniform draws and Box-Muller normals.
class RowRng {
   public:
    explicit RowRng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        state_ += 0x9e3779b97f4a7c15ull;
        return mix64(state_);
    }
    /// Uniform in (0, 1]: 24 bits.
    float unitOpen() {
        return float((next() >> 40) + 1) * (1.f / 16777216.f);
    }
    /// A standard normal (the pair's second half is kept for the next call).
    float normal() {
        if (hasSpare_) {
            hasSpare_ = false;
            return spare_;
        }
        const float r = std::sqrt(-2.f * std::log(unitOpen()));
        const float a = 6.2831853f * unitOpen();
        spare_ = r * std::sin(a);
        hasSpare_ = true;
        return r * std::cos(a);
    }

   private:
    uint64_t state_;
    float spare_ = 0;
    bool hasSpare_ = false;
};

} // namespace

std::vector<float> clustered(const ClusteredSpec& spec, uint64_t streamId) {
    const std::vector<float> centres = clusterCentres(spec);
    std::mt19937_64 rng(spec.seed ^ (0x9e3779b97f4a7c15ull * (streamId + 1)));
    std::normal_distribution<float> noise(0.f, spec.spread);
    std::uniform_int_distribution<int> pick(0, spec.clusters - 1);
    std::vector<float> x(size_t(spec.n) * spec.d);
    for (int64_t i = 0; i < spec.n; ++i) {
        const float* c = centres.data() + size_t(pick(rng)) * spec.d;
        for (int j = 0; j < spec.d; ++j) {
            x[size_t(i) * spec.d + j] = c[j] + noise(rng);
        }
    }
    return x;
}

std::vector<float> clusteredByRow(const ClusteredSpec& spec, uint64_t streamId, int threads) {
    const std::vector<float> centres = clusterCentres(spec);
    const uint64_t streamSeed = mix64(spec.seed ^ (0x9e3779b97f4a7c15ull * (streamId + 1)));
    std::vector<float> x(size_t(spec.n) * spec.d);
    auto fill = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            RowRng rng(mix64(streamSeed + 0xd1b54a32d192ed03ull * uint64_t(i)));
            const float* c = centres.data() + size_t(rng.next() % uint64_t(spec.clusters)) * spec.d;
            float* row = x.data() + size_t(i) * spec.d;
            for (int j = 0; j < spec.d; ++j) {
                row[j] = c[j] + spec.spread * rng.normal();
            }
        }
    };
    const int64_t workers = std::max<int64_t>(
            1,
            std::min<int64_t>(
                    threads > 0 ? threads : int64_t(std::thread::hardware_concurrency()),
                    spec.n / 4096 + 1));
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < workers; ++t) {
        pool.emplace_back(fill, spec.n * t / workers, spec.n * (t + 1) / workers);
    }
    for (std::thread& t : pool) {
        t.join();
    }
    return x;
}

std::vector<float> uniform(int64_t n, int d, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> x(size_t(n) * d);
    for (float& v : x) {
        v = unit(rng);
    }
    return x;
}

} // namespace datasets
} // namespace faiss_ext
