// The band of the list-major key path's exact re-rank (IvfKeyRerank.h): which keys
// |x|^2 - 2 q.x can still belong to a query's k nearest by the exact FP32 distance.
// Plain functions compiled for host and device, so that the CPU tests check the
// arithmetic the kernel runs.
#pragma once

#include <math.h>

#include "HostDevice.h"

namespace faiss_ext {
namespace kernels {

/// Relative rounding bound of the key path's FP32 sums at dimension d, doubled for
/// margin: the key's two accumulators of about d / 2 products, the norm's of d squares
/// and the two adds that join them; the exact distance's two accumulators of d / 2
/// squared differences (a rounding each before its FMA) and their add; |q|^2 over d
/// squares. Each is within gamma_(d + 8) = (d + 8) u / (1 - (d + 8) u) of its terms'
/// magnitudes, u = 2^-24.
FAISS_EXT_HD inline double ivfKeyErrorRel(int d) {
    return 2.0 * (double(d) + 8.0) / double(1 << 24);
}

/// A query's band limit: a vector whose key is above it is beaten by k others on the exact
/// distance. kthKey is the k-th smallest key the query's row holds (+inf when it holds
/// fewer than k finite keys: every finite key is listed), qn its |q|^2, maxNorm an upper
/// bound of |x|^2 over the row, dotRel the relative bound of the keys' dot products (of
/// 2 |q| |x|): ivfKeyErrorRel(d) for the FP32 product, larger for the tensor cores'. With
/// rel = ivfKeyErrorRel(d) and r = max(rel, dotRel):
/// - each key is within W = rel maxNorm + r 2 |q| sqrt(maxNorm) of |x|^2 - 2 q.x, so the
///   k smallest keys belong to vectors at exact distance at most
///   T = max(kthKey + qn, 0) + W + rel qn (|q|^2's own rounding), and FP32 distances at
///   most T (1 + rel);
/// - a vector with key above max(kthKey, -qn) + 2 W + 2 rel (qn + T) has an exact
///   distance above T (1 + 2 rel), and an FP32 distance above T (1 + rel).
/// Computed in double and rounded up to the next float (equal keys are listed).
FAISS_EXT_HD inline float ivfKeyBandLimit(
        float kthKey,
        float qn,
        float maxNorm,
        int d,
        double dotRel) {
    if (!(kthKey < INFINITY)) {
        return INFINITY;
    }
    const double rel = ivfKeyErrorRel(d);
    const double q = fmax(double(qn), 0.0);
    const double b = fmax(double(maxNorm), 0.0);
    const double w = rel * b + fmax(rel, dotRel) * 2.0 * sqrt(q * b);
    const double t = fmax(double(kthKey) + q, 0.0) + w + rel * q;
    const double limit = fmax(double(kthKey), -q) + 2.0 * w + 2.0 * rel * (q + t);
    const float up = float(limit);
    return double(up) < limit ? nextafterf(up, INFINITY) : up;
}

} // namespace kernels
} // namespace faiss_ext
