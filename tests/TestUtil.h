// Shared helpers for the test suites: device detection, seeds, result comparison.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <cuda_runtime_api.h>
#include <faiss/Index.h>
#include <gtest/gtest.h>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {
namespace test {

inline bool haveGpu() {
    static const bool have = GpuResources::deviceCount() > 0;
    return have;
}

/// Every GPU test starts with this: it skips (visibly) when there is no device.
#define FAISS_EXT_REQUIRE_GPU()                               \
    do {                                                      \
        if (!::faiss_ext::test::haveGpu()) {                  \
            GTEST_SKIP() << "no CUDA device on this machine"; \
        }                                                     \
    } while (0)

/// A seed taken from FAISS_EXT_TEST_SEED when set, else from the clock; printed so
/// a failure can be replayed.
inline uint64_t testSeed() {
    static const uint64_t seed = [] {
        const char* env = std::getenv("FAISS_EXT_TEST_SEED");
        uint64_t s = env ? std::stoull(env) : uint64_t(std::random_device{}());
        std::printf("FAISS_EXT_TEST_SEED=%llu\n", (unsigned long long)s);
        return s;
    }();
    return seed;
}

/// Whether the suite runs under compute-sanitizer (`scripts/gpu-check.sh --sanitize`
/// sets FAISS_EXT_SANITIZE=1), which slows kernels down tenfold or more.
inline bool underSanitizer() {
    const char* env = std::getenv("FAISS_EXT_SANITIZE");
    return env != nullptr && env[0] != '\0' && env[0] != '0';
}

/// How many random shapes a test loops over: `n`, or the first `small` of them under
/// compute-sanitizer.
inline int shapeCount(int n, int small = 2) {
    return underSanitizer() ? std::min(n, small) : n;
}

/// A size of a test (vectors, queries, lists, rounds): `n`, or `small` under
/// compute-sanitizer.
inline int64_t smallUnderSanitizer(int64_t n, int64_t small) {
    return underSanitizer() ? small : n;
}

/// Compares k-NN results against a reference, row by row.
/// - distances at each rank agree within relTol (relative, with absTol as a floor);
/// - an id that is not in the reference row is allowed only as a tie: its distance
///   equals the reference's k-th distance within the same tolerance;
/// - valid ids are unique within a row; -1 ids pair with the missing distance.
/// Returns the number of rows that failed (with the first few printed).
inline int64_t compareKnn(
        const std::vector<float>& refD,
        const std::vector<int64_t>& refI,
        const std::vector<float>& D,
        const std::vector<int64_t>& I,
        int64_t n,
        int64_t k,
        float relTol,
        float absTol) {
    int64_t bad = 0;
    auto close = [&](float a, float b) {
        if (std::isinf(a) || std::isinf(b)) {
            return a == b;
        }
        return std::fabs(a - b) <= std::max(absTol, relTol * std::fabs(b));
    };
    for (int64_t q = 0; q < n; ++q) {
        std::string why;
        std::unordered_set<int64_t> ref(refI.begin() + q * k, refI.begin() + (q + 1) * k);
        std::unordered_set<int64_t> seen;
        float kth = refD[q * k + k - 1];
        for (int64_t j = 0; j < k && why.empty(); ++j) {
            float d = D[q * k + j];
            int64_t id = I[q * k + j];
            if (id == -1 && refI[q * k + j] == -1) {
                // Both missing: FAISS CPU pads with +-FLT_MAX, faiss_ext with +-inf
                // (checked by the missing-result tests).
                continue;
            }
            if (!close(d, refD[q * k + j])) {
                why = "distance at rank " + std::to_string(j) + ": " + std::to_string(d) + " vs " +
                        std::to_string(refD[q * k + j]);
            } else if (id >= 0 && !seen.insert(id).second) {
                why = "duplicate id " + std::to_string(id);
            } else if (id != refI[q * k + j] && !ref.count(id) && !close(d, kth)) {
                why = "id " + std::to_string(id) + " at rank " + std::to_string(j) +
                        " is not in the reference and not a tie";
            }
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

/// What one search sees, and the index's size: equal before and after a failed call
/// when that call left the index unchanged.
struct SearchSnapshot {
    std::vector<float> D;
    std::vector<int64_t> I;
    int64_t ntotal;
    bool trained;
};

inline SearchSnapshot snapshotSearch(
        const faiss::Index& index,
        const std::vector<float>& query,
        int k) {
    SearchSnapshot s{
            std::vector<float>(k), std::vector<int64_t>(k), index.ntotal, index.is_trained};
    index.search(1, query.data(), k, s.D.data(), s.I.data());
    return s;
}

inline void expectSameSearch(const SearchSnapshot& a, const SearchSnapshot& b) {
    EXPECT_EQ(a.ntotal, b.ntotal);
    EXPECT_EQ(a.trained, b.trained);
    EXPECT_EQ(a.I, b.I);
    EXPECT_EQ(a.D, b.D);
}

/// Searches three queries whose middle one holds a NaN: that row must be all missing
/// (id -1, infinite distance) and the other two rows all found.
inline void expectNanQueryGivesMissing(const faiss::Index& index, int k, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> xq(3 * size_t(index.d));
    for (float& v : xq) {
        v = unit(rng);
    }
    xq[index.d + index.d / 2] = std::nanf("");
    std::vector<float> D(3 * size_t(k));
    std::vector<int64_t> I(3 * size_t(k));
    index.search(3, xq.data(), k, D.data(), I.data());
    for (int j = 0; j < k; ++j) {
        EXPECT_EQ(I[1 * k + j], -1);
        EXPECT_TRUE(std::isinf(D[1 * k + j]));
        EXPECT_GE(I[0 * k + j], 0);
        EXPECT_GE(I[2 * k + j], 0);
    }
}

/// Holds all free device memory but `keepBytes` (after emptying the stream-ordered
/// pool, whose cached blocks would otherwise serve the next allocation), so that a
/// larger allocation by the index fails. Released on destruction.
class DeviceMemoryHog {
   public:
    DeviceMemoryHog(const GpuResources& res, size_t keepBytes) {
        cudaMemPool_t pool;
        res.synchronize();
        size_t freeBytes = 0, totalBytes = 0;
        if (cudaDeviceGetDefaultMemPool(&pool, res.device()) != cudaSuccess ||
            cudaMemPoolTrimTo(pool, 0) != cudaSuccess ||
            cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess || freeBytes <= keepBytes ||
            cudaMalloc(&held_, freeBytes - keepBytes) != cudaSuccess) {
            held_ = nullptr;
        }
    }
    ~DeviceMemoryHog() {
        cudaFree(held_);
    }
    DeviceMemoryHog(const DeviceMemoryHog&) = delete;
    DeviceMemoryHog& operator=(const DeviceMemoryHog&) = delete;
    bool holding() const {
        return held_ != nullptr;
    }

   private:
    void* held_ = nullptr;
};

} // namespace test
} // namespace faiss_ext
