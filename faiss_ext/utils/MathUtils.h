// Integer helpers of sizes and layouts, usable in host and device code (constexpr;
// kernels are compiled with --expt-relaxed-constexpr).
#pragma once

namespace faiss_ext {

/// Smallest power of two >= v (v >= 1).
constexpr int nextPow2(int v) {
    int p = 1;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

/// ceil(a / b) for a >= 0, b > 0.
template <typename T>
constexpr T divUp(T a, T b) {
    return (a + b - 1) / b;
}

/// a rounded up to a multiple of b (a >= 0, b > 0).
template <typename T>
constexpr T roundUp(T a, T b) {
    return divUp(a, b) * b;
}

} // namespace faiss_ext
