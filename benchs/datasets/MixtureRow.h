// One row of a Gaussian mixture draw (Mixture.h), shared by the host's threads
// (Mixture.cpp) and the GPU's (MixtureGpu.cu) so that both draw the same rows.
#pragma once

#include <cmath>
#include <cstdint>

#include "ByRow.h"

namespace faiss_ext {
namespace datasets {

/// The seed of a draw's row streams.
FAISS_EXT_ROW_HD inline uint64_t mixtureStreamSeed(uint64_t seed) {
    return mix64(seed ^ 0x5851f42d4c957f2dull);
}

/// A row's component: its generator's first draw against the cumulative weights (the
/// first component whose running weight exceeds it; the last one for rounding).
FAISS_EXT_ROW_HD inline int mixtureComponent(
        RowRng& rng,
        const double* cumulative,
        int components) {
    const double u = double(rng.next() >> 11) * (1.0 / 9007199254740992.0);
    int lo = 0, hi = components;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (cumulative[mid] <= u) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < components ? lo : components - 1;
}

/// One term of a row's value: v + l z, the product and the sum rounded apart (no fused
/// multiply-add on either side, so that the host and the GPU agree).
FAISS_EXT_ROW_HD inline float mixtureStep(float v, float l, float z) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(v, __fmul_rn(l, z));
#else
    return v + l * z;
#endif
}

/// A value as stored: with `bytes` rounded and clamped to [0, 255].
FAISS_EXT_ROW_HD inline float mixtureFinish(float v, bool bytes) {
    return bytes ? fminf(255.f, fmaxf(0.f, nearbyintf(v))) : v;
}

/// Value a of a row: mean[a], then factorRow[b] z(b) added for b = 0 .. a in order
/// (mixtureStep), then mixtureFinish.
template <typename Normals>
FAISS_EXT_ROW_HD inline float mixtureValue(
        float mean,
        const float* factorRow,
        int a,
        const Normals& z,
        bool bytes) {
    float v = mean;
    for (int b = 0; b <= a; ++b) {
        v = mixtureStep(v, factorRow[b], z(b));
    }
    return mixtureFinish(v, bytes);
}

} // namespace datasets
} // namespace faiss_ext
