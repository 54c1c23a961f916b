#include <faiss_ext/impl/BangPrune.h>

#include <algorithm>

#include <faiss/impl/FaissAssert.h>

#include <kernels/BangPrune.h>

namespace faiss_ext {

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
float bangL2Sqr(const float* a, const float* b, int d) {
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < d; ++j) {
        const float t = a[j] - b[j];
        s += t * t;
    }
    return s;
}

namespace {

/// The distinct valid ids of `ids` (excluding `self`) with their distances to self,
/// sorted by (distance, id).
std::vector<BangCandidate> sortedCandidates(
        const float* x,
        int d,
        int64_t self,
        const int32_t* ids,
        size_t count) {
    std::vector<int32_t> u;
    u.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (ids[i] >= 0 && ids[i] != self) {
            u.push_back(ids[i]);
        }
    }
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    std::vector<BangCandidate> c(u.size());
    const float* xs = x + size_t(self) * d;
    for (size_t i = 0; i < u.size(); ++i) {
        c[i] = {bangL2Sqr(xs, x + size_t(u[i]) * d, d), u[i]};
    }
    std::sort(c.begin(), c.end());
    return c;
}

} // namespace

std::vector<int32_t> robustPrune(
        const float* x,
        int d,
        const std::vector<BangCandidate>& cand,
        float alpha,
        int R) {
    std::vector<int32_t> out;
    out.reserve(size_t(std::max(R, 0)));
    const size_t walk =
            std::min(cand.size(), size_t(kernels::kBangPruneWalkPerEdge) * size_t(std::max(R, 0)));
    std::vector<char> alive(walk, 1);
    for (size_t i = 0; i < walk && int(out.size()) < R; ++i) {
        if (!alive[i]) {
            continue;
        }
        out.push_back(cand[i].second);
        const float* xi = x + size_t(cand[i].second) * d;
        for (size_t j = i + 1; j < walk; ++j) {
            if (alive[j] &&
                alpha * bangL2Sqr(xi, x + size_t(cand[j].second) * d, d) <= cand[j].first) {
                alive[j] = 0;
            }
        }
    }
    return out;
}

std::vector<int32_t> pruneCandidateGraph(
        const float* x,
        int64_t n,
        int d,
        const BangCandidateLists& candidates,
        int R,
        float alpha) {
    FAISS_ASSERT(candidates.size() == n);
    // Pass 1: RobustPrune of every node's candidates.
    std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t v = 0; v < n; ++v) {
        const int64_t b = candidates.offsets[v], e = candidates.offsets[v + 1];
        out[v] = robustPrune(
                x, d, sortedCandidates(x, d, v, candidates.ids.data() + b, size_t(e - b)), alpha,
                R);
    }

    // Reverse edges, as lists sorted by id (so the result does not depend on threads).
    std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0);
    for (int64_t v = 0; v < n; ++v) {
        for (int32_t u : out[v]) {
            ++start[size_t(u) + 1];
        }
    }
    for (int64_t v = 0; v < n; ++v) {
        start[v + 1] += start[v];
    }
    std::vector<int32_t> in(static_cast<size_t>(start[n]));
    {
        std::vector<int64_t> cursor(start.begin(), start.end() - 1);
        for (int64_t v = 0; v < n; ++v) {
            for (int32_t u : out[v]) {
                in[size_t(cursor[u]++)] = int32_t(v);
            }
        }
    }

    // Pass 2: out-edges plus reverse edges; RobustPrune again where they exceed R.
    std::vector<int32_t> graph(size_t(n) * R, -1);
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t v = 0; v < n; ++v) {
        std::vector<int32_t> ids(out[v]);
        ids.insert(ids.end(), in.begin() + start[v], in.begin() + start[v + 1]);
        std::vector<BangCandidate> c = sortedCandidates(x, d, v, ids.data(), ids.size());
        int32_t* row = graph.data() + size_t(v) * R;
        if (int(c.size()) <= R) {
            for (size_t i = 0; i < c.size(); ++i) {
                row[i] = c[i].second;
            }
        } else {
            std::vector<int32_t> kept = robustPrune(x, d, c, alpha, R);
            std::copy(kept.begin(), kept.end(), row);
        }
    }
    return graph;
}

} // namespace faiss_ext
