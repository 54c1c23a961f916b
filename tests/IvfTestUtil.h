// Helpers of the IVF suites: CPU reference indexes and result comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/IndexConfig.h>

#include "TestUtil.h"

namespace faiss_ext {
namespace test {

/// A GpuIndexIVFFlat configuration that forces the list scan `path`.
inline GpuIndexIVFFlatConfig forcedScan(IvfScanPath path) {
    GpuIndexIVFFlatConfig cfg;
    cfg.scanPath = path;
    return cfg;
}

/// A CPU IndexIVFFlat (owning its IndexFlat quantizer) whose centroids are the first
/// nlist rows of `centroids`: no k-means, so building it takes no time.
inline std::unique_ptr<faiss::IndexIVFFlat> cpuIvf(
        int d,
        int64_t nlist,
        faiss::MetricType metric,
        const float* centroids) {
    auto q = new faiss::IndexFlat(d, metric);
    q->add(nlist, centroids);
    auto index = std::make_unique<faiss::IndexIVFFlat>(q, d, size_t(nlist), metric);
    index->own_fields = true;
    index->is_trained = true;
    return index;
}

/// FAISS CPU pads missing results with +-FLT_MAX; faiss_ext (like faiss GPU) with
/// +-inf. Maps the former to the latter.
inline void infForMissing(
        std::vector<float>& D,
        const std::vector<int64_t>& I,
        faiss::MetricType m) {
    const float inf = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < D.size(); ++i) {
        if (I[i] == -1) {
            D[i] = m == faiss::METRIC_L2 ? inf : -inf;
        }
    }
}

/// Queries whose nprobe-th and (nprobe+1)-th closest centroids are too close to call:
/// float rounding in the coarse GEMM may legitimately probe another list for them.
inline std::vector<bool> coarseTies(
        const faiss::Index& quantizer,
        int64_t nq,
        const float* xq,
        int64_t nprobe) {
    std::vector<bool> tie(size_t(nq), false);
    if (nprobe >= quantizer.ntotal) {
        return tie;
    }
    const int64_t kk = nprobe + 1;
    std::vector<float> D(size_t(nq * kk));
    std::vector<int64_t> I(size_t(nq * kk));
    quantizer.search(nq, xq, kk, D.data(), I.data());
    for (int64_t q = 0; q < nq; ++q) {
        const float a = D[q * kk + nprobe - 1], b = D[q * kk + nprobe];
        tie[q] = std::fabs(a - b) <= 1e-4f * (std::fabs(a) + 1.f);
    }
    return tie;
}

/// compareKnn over the rows not marked in skip.
inline int64_t compareKnnRows(
        const std::vector<float>& refD,
        const std::vector<int64_t>& refI,
        const std::vector<float>& D,
        const std::vector<int64_t>& I,
        int64_t nq,
        int64_t k,
        const std::vector<bool>& skip,
        float relTol,
        float absTol) {
    std::vector<float> rD, gD;
    std::vector<int64_t> rI, gI;
    int64_t kept = 0;
    for (int64_t q = 0; q < nq; ++q) {
        if (skip[q]) {
            continue;
        }
        rD.insert(rD.end(), refD.begin() + q * k, refD.begin() + (q + 1) * k);
        rI.insert(rI.end(), refI.begin() + q * k, refI.begin() + (q + 1) * k);
        gD.insert(gD.end(), D.begin() + q * k, D.begin() + (q + 1) * k);
        gI.insert(gI.end(), I.begin() + q * k, I.begin() + (q + 1) * k);
        ++kept;
    }
    return compareKnn(rD, rI, gD, gI, kept, k, relTol, absTol);
}

/// Two results of the same distance computations (the same index searched two ways):
/// distances bitwise equal at every rank, and per row the same ids except for the
/// order of exactly equal distances and which of the ids tied at the k-th distance.
inline int64_t compareExact(
        const std::vector<float>& D1,
        const std::vector<int64_t>& I1,
        const std::vector<float>& D2,
        const std::vector<int64_t>& I2,
        int64_t nq,
        int64_t k,
        const std::vector<bool>& skip = {}) {
    int64_t bad = 0;
    for (int64_t q = 0; q < nq; ++q) {
        if (!skip.empty() && skip[q]) {
            continue;
        }
        std::string why;
        const float kth = D1[q * k + k - 1];
        std::multiset<int64_t> a, b;
        for (int64_t j = 0; j < k; ++j) {
            const float x = D1[q * k + j], y = D2[q * k + j];
            if (std::memcmp(&x, &y, sizeof(float)) != 0) {
                why = "distance at rank " + std::to_string(j) + ": " + std::to_string(x) + " vs " +
                        std::to_string(y);
                break;
            }
            if (x != kth || I1[q * k + j] == -1) {
                a.insert(I1[q * k + j]);
                b.insert(I2[q * k + j]);
            }
        }
        if (why.empty() && a != b) {
            why = "different ids";
        }
        if (!why.empty()) {
            if (bad < 5) {
                ADD_FAILURE() << "query " << q << ": " << why;
            }
            ++bad;
        }
    }
    return bad;
}

} // namespace test
} // namespace faiss_ext
