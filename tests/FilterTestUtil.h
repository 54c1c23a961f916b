// Helpers of the filtered-search, range-search and remove_ids tests: one selector of
// every kind over an id space, and the comparison of range search results.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/IDSelector.h>
#include <gtest/gtest.h>

namespace faiss_ext {
namespace test {

/// A selector class faiss does not know: the ids that are 1 mod 3.
struct ThirdIds : faiss::IDSelector {
    bool is_member(int64_t id) const override {
        return id % 3 == 1;
    }
};

/// A selector and what it needs to stay valid.
struct NamedSelector {
    std::string name;
    std::unique_ptr<faiss::IDSelector> sel;
    std::unique_ptr<faiss::IDSelector> inner; ///< IDSelectorNot's operand
    std::vector<int64_t> ids;                 ///< IDSelectorArray's ids
    std::vector<uint8_t> bitmap;              ///< IDSelectorBitmap's bytes
};

/// One selector of every kind over ids drawn from `ids` (the ids the index stores):
/// a contiguous range, Array (30%), Batch (50%), Bitmap (10%), Not(range), a
/// subclass, a selection of 3 ids (fewer than k), and an empty selection.
inline std::vector<NamedSelector> selectorsOver(const std::vector<int64_t>& ids, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    const int64_t lo = sorted[sorted.size() / 4], hi = sorted[sorted.size() / 2];
    auto sample = [&](double frac) {
        std::vector<int64_t> out;
        std::bernoulli_distribution take(frac);
        for (int64_t id : ids) {
            if (take(rng)) {
                out.push_back(id);
            }
        }
        return out;
    };
    std::vector<NamedSelector> all;
    auto add = [&](std::string name, faiss::IDSelector* sel) {
        NamedSelector s;
        s.name = std::move(name);
        s.sel.reset(sel);
        all.push_back(std::move(s));
        return &all.back();
    };
    add("range", new faiss::IDSelectorRange(lo, hi));
    {
        NamedSelector s;
        s.name = "array";
        s.ids = sample(0.3);
        s.sel = std::make_unique<faiss::IDSelectorArray>(s.ids.size(), s.ids.data());
        all.push_back(std::move(s));
    }
    {
        const std::vector<int64_t> half = sample(0.5);
        add("batch", new faiss::IDSelectorBatch(half.size(), half.data()));
    }
    {
        NamedSelector s;
        s.name = "bitmap";
        s.bitmap.assign(size_t(sorted.back() / 8 + 1), 0);
        for (int64_t id : sample(0.1)) {
            s.bitmap[size_t(id / 8)] |= uint8_t(1u << (id % 8));
        }
        s.sel = std::make_unique<faiss::IDSelectorBitmap>(s.bitmap.size(), s.bitmap.data());
        all.push_back(std::move(s));
    }
    {
        NamedSelector s;
        s.name = "not";
        s.inner = std::make_unique<faiss::IDSelectorRange>(lo, hi);
        s.sel = std::make_unique<faiss::IDSelectorNot>(s.inner.get());
        all.push_back(std::move(s));
    }
    add("subclass", new ThirdIds());
    {
        const std::vector<int64_t> three(sorted.begin(), sorted.begin() + 3);
        add("three", new faiss::IDSelectorBatch(three.size(), three.data()));
    }
    add("empty", new faiss::IDSelectorRange(sorted.back() + 1, sorted.back() + 1));
    return all;
}

/// The ids 0 .. n-1.
inline std::vector<int64_t> iota(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        v[size_t(i)] = i;
    }
    return v;
}

/// Range results against a reference, per query as sets: an id found by one side only
/// is allowed when its distance lies within tol (relative) of the radius; the
/// distances of the common ids agree within tol. Queries marked in skip are not
/// compared. Returns the failing queries.
inline int64_t compareRange(
        const faiss::RangeSearchResult& ref,
        const faiss::RangeSearchResult& got,
        int64_t nq,
        float radius,
        float tol,
        const std::vector<bool>& skip = {}) {
    int64_t bad = 0;
    auto nearRadius = [&](float dist) {
        return std::fabs(dist - radius) <= tol * std::max(1.f, std::fabs(radius));
    };
    for (int64_t q = 0; q < nq; ++q) {
        if (!skip.empty() && skip[q]) {
            continue;
        }
        std::map<int64_t, float> a, b;
        for (size_t j = ref.lims[q]; j < ref.lims[q + 1]; ++j) {
            a[ref.labels[j]] = ref.distances[j];
        }
        for (size_t j = got.lims[q]; j < got.lims[q + 1]; ++j) {
            b[got.labels[j]] = got.distances[j];
        }
        std::string why;
        if (got.lims[q + 1] - got.lims[q] != b.size()) {
            why = "an id twice";
        }
        for (const auto& [id, dist] : a) {
            auto it = b.find(id);
            if (it == b.end()) {
                if (!nearRadius(dist)) {
                    why = "missing id " + std::to_string(id);
                }
            } else if (std::fabs(it->second - dist) > tol * std::max(1.f, std::fabs(dist))) {
                why = "distance of id " + std::to_string(id);
            }
        }
        for (const auto& [id, dist] : b) {
            if (!a.count(id) && !nearRadius(dist)) {
                why = "extra id " + std::to_string(id);
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

/// Radii of a query set that give no results, some, and many: from the reference
/// k-NN distances (L2: ascending; inner product: descending).
inline std::vector<float> radiiFrom(const std::vector<float>& knnD, int64_t nq, int k, bool ip) {
    std::vector<float> col10, colLast;
    for (int64_t q = 0; q < nq; ++q) {
        col10.push_back(knnD[size_t(q) * k + std::min(k - 1, 9)]);
        colLast.push_back(knnD[size_t(q) * k + k - 1]);
    }
    std::sort(col10.begin(), col10.end());
    std::sort(colLast.begin(), colLast.end());
    const float some = col10[col10.size() / 2];
    const float many = ip ? colLast.front() : colLast.back();
    const float none = ip ? 1e30f : 0.f;
    return {none, some, many};
}

} // namespace test
} // namespace faiss_ext
