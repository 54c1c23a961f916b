// Recall against ground truth, and the demo's result table.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

namespace faiss_ext {
namespace bench {

/// Fraction of the true r nearest (first r of each ground-truth row of width gtK)
/// found among the first r results of each row of width k.
inline double recallAt(
        const std::vector<int64_t>& gt,
        int gtK,
        const std::vector<int64_t>& I,
        int k,
        int64_t nq,
        int r) {
    int64_t hit = 0;
    for (int64_t q = 0; q < nq; ++q) {
        std::unordered_set<int64_t> truth(gt.begin() + q * gtK, gt.begin() + q * gtK + r);
        for (int j = 0; j < r && j < k; ++j) {
            hit += truth.count(I[q * k + j]);
        }
    }
    return double(hit) / (double(nq) * r);
}

} // namespace bench
} // namespace faiss_ext
