// Mixture.h's rows drawn on the GPU, for the 100M-row sets of issue 15: 10M x 128 in
// 3.9 s on an H200 against 9.8 s on its 16 host threads.
#pragma once

#include <cstdint>
#include <vector>

#include "Mixture.h"

namespace faiss_ext {
namespace datasets {

/// sampleGaussianMixture(g, n, seed, bytes) drawn on the current CUDA device, chunkRows
/// rows at a time: the same per-row generators and the same arithmetic (products and sums
/// rounded apart, in the same order), so the same rows but where the device's logf /
/// sinf / cosf differ from the host's in the last bit (floats within ~1e-6 relative;
/// bytes equal but for a value that lands that close to a rounding boundary). Throws
/// std::runtime_error on a CUDA error, std::invalid_argument as sampleGaussianMixture, and
/// when a component's factor (d x d floats) and a block's normals do not fit the device's
/// shared memory (d above ~220 on an H100).
std::vector<float> sampleGaussianMixtureOnGpu(
        const GaussianMixture& g,
        int64_t n,
        uint64_t seed,
        bool bytes,
        int64_t chunkRows = int64_t(1) << 20);

} // namespace datasets
} // namespace faiss_ext
