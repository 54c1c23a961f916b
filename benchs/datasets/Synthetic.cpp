#include "Synthetic.h"

#include "ByRow.h"

#include <algorithm>
#include <cmath>
#include <random>

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
            RowRng rng(rowSeed(streamSeed, i));
            const float* c = centres.data() + size_t(rng.next() % uint64_t(spec.clusters)) * spec.d;
            float* row = x.data() + size_t(i) * spec.d;
            for (int j = 0; j < spec.d; ++j) {
                row[j] = c[j] + spec.spread * rng.normal();
            }
        }
    };
    fillRowsInParallel(spec.n, threads, fill);
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
