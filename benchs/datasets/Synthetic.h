// Deterministic synthetic datasets for tests, the demo and benchmarks.
#pragma once

#include <cstdint>
#include <vector>

namespace faiss_ext {
namespace datasets {

struct ClusteredSpec {
    int64_t n = 0;        ///< vectors to generate
    int d = 0;            ///< dimension
    int clusters = 100;   ///< Gaussian blobs the vectors are drawn around
    float spread = 0.1f;  ///< blob standard deviation, relative to centre spacing
    uint64_t seed = 1234; ///< same spec and seed, same vectors on every machine
};

/// n x d row-major float vectors drawn around `clusters` centres uniform in [0, 1)^d.
/// Centres depend only on (d, clusters, seed), so base and query sets drawn with the
/// same seed but different `n` or `streamId` share their clusters.
std::vector<float> clustered(const ClusteredSpec& spec, uint64_t streamId = 0);

/// clustered()'s distribution (the same centres), drawn so that row i depends only on
/// (spec, streamId, i): `threads` threads (0: one per hardware thread) fill the rows in
/// parallel, and every machine and thread count gives the same vectors, as does any n
/// for the rows they share. Not clustered()'s numbers. For sets one thread draws too
/// slowly (100M x 128: 12.8G draws, minutes for clustered()).
std::vector<float> clusteredByRow(
        const ClusteredSpec& spec,
        uint64_t streamId = 0,
        int threads = 0);

/// n x d vectors uniform in [0, 1).
std::vector<float> uniform(int64_t n, int d, uint64_t seed);

} // namespace datasets
} // namespace faiss_ext
