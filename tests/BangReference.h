// CPU reference of the BANG greedy search: the kernels' algorithm run sequentially,
// with the same entry point, Bloom filter (hashes, and all tests of a parent's
// neighbours before their insertions), (distance, id) keys and worklist size, on
// distances from the kernels' own distance function (bangDistanceTable), or in PQ mode
// ADC distances formed with the kernels' arithmetic (bangPqReferenceDistances) and the
// exact re-rank of the final worklist (bangReferenceRerank).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <kernels/BangBloom.h>
#include <kernels/BangPq.h>

namespace faiss_ext {
namespace test {

struct BangReferenceResult {
    std::vector<uint64_t> keys; ///< final worklist, ascending (at most L)
    int iterations = 0;         ///< parents expanded
};

/// dist: the query's distance to each of the n base rows.
inline BangReferenceResult bangReferenceSearch(
        const std::vector<int32_t>& graph,
        int R,
        int32_t entry,
        const float* dist,
        int L) {
    using namespace kernels;
    std::vector<uint32_t> bloom(kBangBloomWords, 0);
    auto insert = [&](uint32_t id) {
        const uint32_t a = bangBloomHash1(id), b = bangBloomHash2(id);
        bloom[a >> 5] |= 1u << (a & 31);
        bloom[b >> 5] |= 1u << (b & 31);
    };
    std::vector<std::pair<uint64_t, bool>> list{{bangKey(dist[entry], entry), false}};
    insert(uint32_t(entry));
    BangReferenceResult r;
    while (true) {
        auto it = std::find_if(list.begin(), list.end(), [](const auto& e) { return !e.second; });
        if (it == list.end()) {
            break;
        }
        it->second = true;
        const int32_t parent = bangKeyId(it->first);
        ++r.iterations;
        std::vector<int32_t> fresh;
        for (int j = 0; j < R; ++j) {
            const int32_t id = graph[size_t(parent) * R + j];
            if (id >= 0 && !bangBloomTest(bloom.data(), uint32_t(id))) {
                fresh.push_back(id);
            }
        }
        for (int32_t id : fresh) {
            insert(uint32_t(id));
            list.push_back({bangKey(dist[id], id), false});
        }
        std::sort(list.begin(), list.end());
        if (int(list.size()) > L) {
            list.resize(size_t(L));
        }
    }
    for (const auto& e : list) {
        r.keys.push_back(e.first);
    }
    return r;
}

/// ADC distances of one query (d floats) to the n code rows (n x M) with the given
/// codebooks (M x 256 x d / M): the kernels' table entries and summation order
/// (kernels/BangPq.h), so equal to the kernels' bit for bit.
inline std::vector<float> bangPqReferenceDistances(
        const float* q,
        int d,
        int M,
        const float* centroids,
        const uint8_t* codes,
        int64_t n) {
    using namespace kernels;
    const int dsub = d / M;
    std::vector<float> table(size_t(M) * kBangPqCentroids);
    for (int m = 0; m < M; ++m) {
        for (int c = 0; c < kBangPqCentroids; ++c) {
            table[size_t(m) * kBangPqCentroids + c] = bangPqTableEntry(
                    q + size_t(m) * dsub, centroids + (size_t(m) * kBangPqCentroids + c) * dsub,
                    dsub);
        }
    }
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        out[size_t(i)] = bangPqDistance(table.data(), codes + size_t(i) * M, M);
    }
    return out;
}

/// PQ mode's end: the nodes of the final worklist `keys` re-keyed with their exact
/// distances (exact: the query's distance to every base row) and sorted, same tie rule
/// (distance, then id).
inline std::vector<uint64_t> bangReferenceRerank(
        const std::vector<uint64_t>& keys,
        const float* exact) {
    std::vector<uint64_t> out;
    for (uint64_t key : keys) {
        const int32_t id = kernels::bangKeyId(key);
        out.push_back(kernels::bangKey(exact[id], id));
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace test
} // namespace faiss_ext
