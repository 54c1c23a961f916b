#include <faiss_ext/impl/ArgChecks.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/HelperThreads.h>

namespace faiss_ext {

void checkVectorsArg(int64_t n, const float* x, const char* what) {
    FAISS_THROW_IF_NOT_FMT(n > 0, "%s: n=%lld, must be > 0", what, (long long)n);
    FAISS_THROW_IF_NOT_FMT(x != nullptr, "%s: null vector pointer", what);
}

void checkSearchArgs(
        int64_t n,
        const float* x,
        int64_t k,
        const float* distances,
        const int64_t* labels) {
    FAISS_THROW_IF_NOT_FMT(n > 0, "search: n=%lld, must be > 0", (long long)n);
    FAISS_THROW_IF_NOT_MSG(x != nullptr, "search: null query pointer");
    FAISS_THROW_IF_NOT_MSG(
            distances != nullptr && labels != nullptr,
            "search: null output pointer (distances or labels)");
    FAISS_THROW_IF_NOT_FMT(
            k >= 1 && k <= kMaxSearchK, "search: k=%lld is outside [1, %lld]", (long long)k,
            (long long)kMaxSearchK);
}

void checkFinite(int64_t n, int d, const float* x, const char* what) {
    std::atomic<int64_t> firstBad{n}; // the first row with a non-finite component, or n
    // Rows [i0, i1): lowers firstBad to the first such row there.
    auto checkRows = [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1 && i < firstBad.load(std::memory_order_relaxed); ++i) {
            const float* v = x + i * d;
            for (int j = 0; j < d; ++j) {
                if (!std::isfinite(v[j])) {
                    int64_t cur = firstBad.load();
                    while (i < cur && !firstBad.compare_exchange_weak(cur, i)) {
                    }
                    return;
                }
            }
        }
    };
    // Above 2^20 components, chunks of ~2^16 go to the helper threads too.
    if (int64_t(n) * d <= (int64_t(1) << 20)) {
        checkRows(0, n);
    } else {
        const int64_t rows = std::max<int64_t>(1, (int64_t(1) << 16) / d);
        runChunks((n + rows - 1) / rows, [&](int64_t c) {
            checkRows(c * rows, std::min(n, (c + 1) * rows));
        });
    }
    const int64_t bad = firstBad.load();
    FAISS_THROW_IF_NOT_FMT(
            bad == n, "%s: vector %lld has a NaN or infinite component", what, (long long)bad);
}

} // namespace faiss_ext
