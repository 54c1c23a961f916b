#include <faiss_ext/impl/ArgChecks.h>

#include <atomic>
#include <cmath>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/HostTeam.h>

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
    std::atomic<int64_t> firstBad{n};
#pragma omp parallel for if (n * d > (1 << 20)) num_threads(searchTeamThreads())
    for (int64_t i = 0; i < n; ++i) {
        const float* v = x + i * d;
        for (int j = 0; j < d; ++j) {
            if (!std::isfinite(v[j])) {
                int64_t cur = firstBad.load();
                while (i < cur && !firstBad.compare_exchange_weak(cur, i)) {
                }
                break;
            }
        }
    }
    int64_t bad = firstBad.load();
    FAISS_THROW_IF_NOT_FMT(
            bad == n, "%s: vector %lld has a NaN or infinite component", what, (long long)bad);
}

} // namespace faiss_ext
