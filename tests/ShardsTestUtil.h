// What the sharded / replicated index tests share: the device layouts they run on
// (two parts on device 0, so that any GPU machine runs the logic, and two devices),
// the data and one search.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <faiss/Index.h>
#include <gtest/gtest.h>

#include <faiss_ext/GpuIndexParts.h>

#include "Synthetic.h"
#include "TestUtil.h"

namespace faiss_ext {
namespace test {

struct PartsLayout {
    std::vector<int> devices;
    bool threaded;
    std::string name;

    int devicesNeeded() const {
        int most = 0;
        for (int device : devices) {
            most = std::max(most, device + 1);
        }
        return most;
    }
    GpuPartsConfig config() const {
        GpuPartsConfig c;
        c.devices = devices;
        c.threaded = threaded;
        c.tempMemoryBytes = size_t(256) << 20;
        return c;
    }
};

inline std::vector<PartsLayout> partsLayouts() {
    return {{{0, 0}, true, "TwoOnDevice0"},
            {{0, 0}, false, "TwoOnDevice0InTurn"},
            {{0, 1}, true, "TwoDevices"}};
}

/// Skips without a GPU, or with fewer devices than the layout names.
#define FAISS_EXT_REQUIRE_LAYOUT(layout)                                                  \
    do {                                                                                  \
        FAISS_EXT_REQUIRE_GPU();                                                          \
        if (::faiss_ext::GpuResources::deviceCount() < (layout).devicesNeeded()) {        \
            GTEST_SKIP() << "needs " << (layout).devicesNeeded() << " CUDA devices, has " \
                         << ::faiss_ext::GpuResources::deviceCount();                     \
        }                                                                                 \
    } while (0)

struct Knn {
    std::vector<float> D;
    std::vector<int64_t> I;
};

/// k-NN of nq queries, the outputs pre-filled with garbage.
inline Knn knnOf(const faiss::Index& index, const std::vector<float>& xq, int64_t nq, int k) {
    Knn r{std::vector<float>(size_t(nq * k), 1234.5f), std::vector<int64_t>(size_t(nq * k), 777)};
    index.search(nq, xq.data(), k, r.D.data(), r.I.data());
    return r;
}

/// Rows of `got` that differ from `ref` beyond ties (compareKnn).
inline int64_t knnMismatches(const Knn& ref, const Knn& got, int64_t nq, int k) {
    return compareKnn(ref.D, ref.I, got.D, got.I, nq, k, 1e-4f, 1e-4f);
}

inline std::vector<float> clusteredVectors(int64_t n, int d, uint64_t seed, uint64_t stream) {
    datasets::ClusteredSpec spec{n, d, 20, 0.1f, seed};
    return datasets::clustered(spec, stream);
}

} // namespace test
} // namespace faiss_ext
