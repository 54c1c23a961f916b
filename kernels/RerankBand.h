// The error bound of one threshold-path key and the band of the re-rank built on it:
// which listed ids can still be among a query's k nearest by their exact FP32
// distance. Plain functions compiled for host and device, so that the CPU tests check
// the arithmetic the kernels run (ThresholdFilter.h: keyThresholds, rerankBandLimits).
#pragma once

#include <math.h>

#include "ThresholdFilter.h"

#include "HostDevice.h"

namespace faiss_ext {
namespace kernels {

/// The bound of one GEMM key's error (KeyErrorBound) for a query of squared norm qn
/// against base rows of squared norm at most maxBaseNorm: dotRel |q| B (twice for L2)
/// plus, for L2, normRel (B^2 + 2 |q| B); inner product (dotRel + normRel) |q| B.
FAISS_EXT_HD inline float keyErrorOf(KeyErrorBound bound, float qn, float maxBaseNorm, bool l2) {
    const float qb = sqrtf(fmaxf(qn, 0.f)) * sqrtf(maxBaseNorm);
    return l2 ? 2.f * bound.dotRel * qb + bound.normRel * (maxBaseNorm + 2.f * qb)
              : (bound.dotRel + bound.normRel) * qb;
}

/// Relative bound of rerankListed's FP32 rounding at dimension d: a lane sums
/// ceil(d / 32) terms, then five shuffle sums add the lanes; an L2 term rounds twice (q -
/// b, its square), an inner-product term at most once. So gamma_(ceil(d / 32) + 8) of
/// the sum of the terms' magnitudes (L2: the squared distance, at most (|q| + B)^2;
/// inner product: sum |q_j b_j| <= |q| B), doubled for margin. FP32's unit roundoff is
/// 2^-24.
FAISS_EXT_HD inline float rerankErrorRel(int d) {
    return float(2.0 * ((d + 31) / 32 + 8) / double(1 << 24));
}

/// A query's band limit: its listed ids whose stored key is above it cannot be among its
/// k nearest by rerankListed's distance. kthKey is the k-th smallest listed key (+inf
/// when fewer than k are listed); keyBound the bound of the main pass's keys (not the
/// sample's: the listed keys are the main pass's). With W = keyErrorOf(keyBound) plus
/// the re-rank's rounding, every listed id's re-ranked distance (less |q|^2 for L2) is
/// within W of its key, so the k ids of smallest key are re-ranked at most kthKey + W,
/// and an id whose key is above kthKey + 2 W at more than that: it is beaten by k others.
/// The limit is kthKey + 2 W rounded up (ties kept); W's own float rounding is within
/// the bounds' doubled margins.
FAISS_EXT_HD inline float rerankBandLimit(
        float kthKey,
        float qn,
        float maxBaseNorm,
        KeyErrorBound keyBound,
        float rerankRel,
        bool l2) {
    const float qb = sqrtf(fmaxf(qn, 0.f)) * sqrtf(maxBaseNorm);
    const float w = keyErrorOf(keyBound, qn, maxBaseNorm, l2) +
            rerankRel * (l2 ? fmaxf(qn, 0.f) + 2.f * qb + maxBaseNorm : qb);
    const double limit = double(kthKey) + 2.0 * double(w);
    const float up = float(limit);
    return double(up) < limit ? nextafterf(up, INFINITY) : up;
}

} // namespace kernels
} // namespace faiss_ext
