// kernels::selectRowsMin's three paths (warp: one warp per (row, segment), the
// selection in registers for k <= kMaxWarpRowSelectK; block: a streaming block per
// (row, segment); short: one block sorts a whole (row, segment)) against a host
// reference on the same total order: selectKey(value, position), value first (-0.0
// before +0.0, -inf first), then position. Ids and distance bits must match exactly,
// ties included. The warp path also with a column bias, and on segments that start
// 16-byte aligned (read a float4 at a time: segLen 32, 1000, 4096) and that do not
// (one value at a time: 31, 33). The short path also with a row bound, and with many
// rows (its other block shapes). Every path with a column count per row. The radix select
// (kernels/RadixSelect.h) against the same order up to which ties it keeps.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <kernels/RadixSelect.h>
#include <kernels/Select.h>

#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

uint32_t floatBits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof(u));
    return u;
}

/// The device's selectKey (kernels/BlockSelect.cuh) on the host.
uint64_t hostSelectKey(float v, int position) {
    uint32_t u = floatBits(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return (uint64_t(u) << 32) | uint32_t(position);
}

/// The rows' contents, one kind a row.
enum class RowKind {
    kUniform,     ///< distinct values in [-1, 1)
    kTies,        ///< values in {0, 1, 2, 3}: long runs of equal keys but for the position
    kNonFinite,   ///< ties mixed with NaN of both signs, +inf and -inf
    kFewFinite,   ///< about 2% finite (fewer than k in most segments), the rest +inf / NaN
    kSignedZeros, ///< -0.0 and +0.0 (distinct keys, equal floats) and a few 1.0
    kNothing,     ///< +inf and NaN only: every result missing
    kDescending,  ///< each value beats all before it: the threshold tightens every step
};
constexpr int kRowKinds = 7;

float rowValue(RowKind kind, int64_t col, int64_t ncols, std::mt19937_64& rng) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    std::uniform_int_distribution<int> small(0, 3);
    const int r = int(rng() % 100);
    switch (kind) {
        case RowKind::kUniform:
            return uniform(rng);
        case RowKind::kTies:
            return float(small(rng));
        case RowKind::kNonFinite:
            return r < 10 ? nan : r < 15 ? -nan : r < 25 ? inf : r < 30 ? -inf : float(small(rng));
        case RowKind::kFewFinite:
            return r < 2 ? float(small(rng)) : r < 60 ? inf : r < 80 ? nan : -nan;
        case RowKind::kSignedZeros:
            return r < 45 ? 0.f : r < 90 ? -0.f : 1.f;
        case RowKind::kNothing:
            return r < 50 ? inf : nan;
        case RowKind::kDescending:
            return float(ncols - col) * 0.25f;
    }
    return 0.f;
}

} // namespace

TEST(GpuSelectRows, EveryPathMatchesHostKeyOrder) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    GpuResources res;
    cudaStream_t stream = res.stream();
    const float inf = std::numeric_limits<float>::infinity();
    constexpr int64_t kIdBase = 1000;

    // Few rows, and (the short path only) more than kShortSelectMaxBlocks (row, segment)s,
    // in segments of each of its block shapes (at most 2048, 4096 and 8192 columns). Under
    // compute-sanitizer: the fewest such rows (7 of each kind, 3 segments a row), and
    // shorter segments of the same shapes.
    const int64_t manyPerKind = smallUnderSanitizer(20, 7);
    int shape = -1;
    for (const auto& [segLen, rowsPerKind] : std::vector<std::pair<int64_t, int64_t>>{
                 {1, 2},
                 {31, 2},
                 {32, 2},
                 {33, 2},
                 {1000, 2},
                 {4096, 2},
                 {1000, manyPerKind},
                 {smallUnderSanitizer(4096, 2049), manyPerKind},
                 {smallUnderSanitizer(6000, 4097), manyPerKind}}) {
        ++shape;
        // Three segments, the last one short (one column where segLen is 1).
        const int64_t ncols = 2 * segLen + (segLen + 1) / 2;
        const int64_t nseg = (ncols + segLen - 1) / segLen;
        const int64_t nrows = rowsPerKind * kRowKinds;
        const bool manyRows = nrows * nseg > kernels::kShortSelectMaxBlocks;
        std::vector<float> dist(size_t(nrows * ncols));
        for (int64_t r = 0; r < nrows; ++r) {
            for (int64_t c = 0; c < ncols; ++c) {
                dist[size_t(r * ncols + c)] = rowValue(RowKind(r % kRowKinds), c, ncols, rng);
            }
        }
        // Rows r and r + kRowKinds: the same kind, ids from idBase and from inIds.
        std::vector<int64_t> ids(size_t(nrows * ncols));
        for (auto& id : ids) {
            id = int64_t(rng() % 1000000000);
        }
        // A column bias with ties and signed zeros of its own.
        std::vector<float> bias(static_cast<size_t>(ncols));
        for (auto& b : bias) {
            const float choices[] = {0.f, -0.f, 0.25f, 2.f};
            b = choices[rng() % 4];
        }
        auto dDist = res.alloc<float>(dist.size());
        auto dIds = res.alloc<int64_t>(ids.size());
        auto dBias = res.alloc<float>(bias.size());
        copyToDevice(dDist.data(), dist.data(), dist.size(), stream);
        copyToDevice(dIds.data(), ids.data(), ids.size(), stream);
        copyToDevice(dBias.data(), bias.data(), bias.size(), stream);
        // Row bounds: none (+inf), a value of the row itself, 0 and -inf (nothing).
        std::vector<float> bound(static_cast<size_t>(nrows));
        for (int64_t r = 0; r < nrows; ++r) {
            const float choices[] = {inf, dist[size_t(r * ncols + (r * 7) % ncols)], 0.f, -inf};
            bound[size_t(r)] = choices[(r / kRowKinds) % 4];
        }
        // On the device with a stride of 3 (ldRowBound), as the flat search reads them
        // from its candidate rows; NaN between them.
        constexpr int64_t kBoundLd = 3;
        std::vector<float> strided(bound.size() * kBoundLd, std::nanf(""));
        for (size_t r = 0; r < bound.size(); ++r) {
            strided[r * kBoundLd] = bound[r];
        }
        auto dBound = res.alloc<float>(strided.size());
        copyToDevice(dBound.data(), strided.data(), strided.size(), stream);
        // Columns per row (the IVF merge's candidate counts): none, inside the first, the
        // second or the last segment, and all.
        std::vector<int> rowCols(static_cast<size_t>(nrows));
        for (int64_t r = 0; r < nrows; ++r) {
            const int64_t choices[] = {
                    0, 1 + int64_t(rng() % segLen), segLen + int64_t(rng() % segLen), ncols - 1,
                    ncols};
            rowCols[size_t(r)] = int(std::max<int64_t>(0, choices[(r + shape) % 5]));
        }
        auto dRowCols = res.alloc<int>(rowCols.size());
        copyToDevice(dRowCols.data(), rowCols.data(), rowCols.size(), stream);

        // The warp path at every k it takes; the others at a spread of k up to the most.
        // Under compute-sanitizer the warp path at one k of each capacity (1, 2, 4, 8,
        // 16, 32), the others at the least, the least above the warp path's and the most.
        std::vector<int> warpKs, otherKs{1, 3, 16, 32, 33, 100, 1000, kernels::kMaxSelectK};
        for (int k = 1; k <= kernels::kMaxWarpRowSelectK; ++k) {
            warpKs.push_back(k);
        }
        if (underSanitizer()) {
            warpKs = {1, 2, 3, 8, 13, 32};
            otherKs = {1, 33, kernels::kMaxSelectK};
        }
        std::vector<std::pair<kernels::SelectPath, int>> runs;
        for (int k : warpKs) {
            if (!manyRows) {
                runs.emplace_back(kernels::SelectPath::kWarp, k);
            }
        }
        for (kernels::SelectPath p : {kernels::SelectPath::kShort, kernels::SelectPath::kBlock}) {
            for (int k : otherKs) {
                if (p == kernels::SelectPath::kShort || !manyRows) {
                    runs.emplace_back(p, k);
                }
            }
        }
        for (size_t run = 0; run < runs.size(); ++run) {
            const auto& [path, k] = runs[run];
            // idBase, inIds, a bias, a bias and a row bound (as the Bang build's k-NN and
            // the flat search's later base tiles call it), inIds with columns per row (as
            // the IVF merge calls it). Under compute-sanitizer every other variant,
            // alternating from one k to the next and from one shape to the next: each
            // variant of each path still runs on every shape.
            const int variants = 5;
            for (int variant = 0; variant < variants; ++variant) {
                if (underSanitizer() && (int(run) + variant + shape) % 2 != 0) {
                    continue;
                }
                const bool withIds = variant == 1 || variant == 4;
                const bool withBias = variant == 2 || variant == 3;
                const bool withBound = variant == 3;
                const bool withRowCols = variant == 4;
                SCOPED_TRACE(
                        "segLen=" + std::to_string(segLen) + " rows=" + std::to_string(nrows) +
                        " k=" + std::to_string(k) + " path=" + std::to_string(int(path)) +
                        (withIds ? " inIds" : " idBase") + (withBias ? " bias" : "") +
                        (withBound ? " bound" : "") + (withRowCols ? " rowCols" : ""));
                // The values selected from: dist, plus the bias where there is one.
                auto value = [&](int64_t r, int64_t c) {
                    const float v = dist[size_t(r * ncols + c)];
                    return withBias ? v + bias[size_t(c)] : v;
                };
                const int64_t ldOut = nseg * k;
                // Garbage in the outputs: every entry must be written.
                std::vector<float> garbageD(size_t(nrows * ldOut), 12345.f);
                std::vector<int64_t> garbageI(size_t(nrows * ldOut), 777);
                auto outD = res.alloc<float>(garbageD.size());
                auto outI = res.alloc<int64_t>(garbageI.size());
                copyToDevice(outD.data(), garbageD.data(), garbageD.size(), stream);
                copyToDevice(outI.data(), garbageI.data(), garbageI.size(), stream);

                kernels::SelectRowsArgs a;
                a.dist = dDist.data();
                a.ldDist = ncols;
                a.nrows = nrows;
                a.ncols = ncols;
                a.segLen = segLen;
                a.inIds = withIds ? dIds.data() : nullptr;
                a.colBias = withBias ? dBias.data() : nullptr;
                a.rowBound = withBound ? dBound.data() : nullptr;
                a.ldRowBound = kBoundLd;
                a.rowCols = withRowCols ? dRowCols.data() : nullptr;
                a.ldIds = ncols;
                a.idBase = kIdBase;
                a.k = k;
                a.outD = outD.data();
                a.outI = outI.data();
                a.ldOut = ldOut;
                a.path = path;
                kernels::selectRowsMin(a, stream);
                const auto D = copyToHostVector(outD.data(), garbageD.size(), stream);
                const auto I = copyToHostVector(outI.data(), garbageI.size(), stream);

                int64_t bad = 0;
                for (int64_t r = 0; r < nrows; ++r) {
                    for (int64_t s = 0; s < nseg; ++s) {
                        const int64_t c0 = s * segLen;
                        const int64_t cols = withRowCols ? rowCols[size_t(r)] : ncols;
                        const int64_t c1 = std::min(cols, c0 + segLen);
                        std::vector<uint64_t> keys;
                        for (int64_t c = c0; c < c1; ++c) {
                            const float v = value(r, c);
                            // NaN and +inf are never selected, nor what a bound excludes.
                            if (v < inf && (!withBound || v < bound[size_t(r)])) {
                                keys.push_back(hostSelectKey(v, int(c - c0)));
                            }
                        }
                        const size_t found = std::min(keys.size(), size_t(k));
                        std::partial_sort(keys.begin(), keys.begin() + found, keys.end());
                        for (int j = 0; j < k; ++j) {
                            float wantD = inf;
                            int64_t wantI = -1;
                            if (size_t(j) < found) {
                                const int64_t c = c0 + int64_t(uint32_t(keys[size_t(j)]));
                                wantD = value(r, c);
                                wantI = withIds ? ids[size_t(r * ncols + c)] : kIdBase + c;
                            }
                            const size_t at = size_t(r * ldOut + s * k + j);
                            if (floatBits(D[at]) != floatBits(wantD) || I[at] != wantI) {
                                if (bad < 5) {
                                    ADD_FAILURE() << "row " << r << " (kind " << r % kRowKinds
                                                  << ") segment " << s << " rank " << j << ": got ("
                                                  << D[at] << ", " << I[at] << ") want (" << wantD
                                                  << ", " << wantI << ")";
                                }
                                ++bad;
                            }
                        }
                    }
                }
                ASSERT_EQ(bad, 0);
            }
        }
    }
}

// A merge of a running best with new candidates: columns [0, prefix) sorted ascending
// (+inf and NaN last, ties among them and with later columns), declared through
// sortedPrefix, give bit for bit the results of the same call without it, on every
// path that takes the shape.
TEST(GpuSelectRows, SortedPrefixGivesTheSameResults) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    GpuResources res;
    cudaStream_t stream = res.stream();
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t nrows = 6;
    for (int k : {1, 10, 32, 33, 100, 1000, kernels::kMaxSelectK}) {
        for (int64_t extra : {int64_t(0), int64_t(1), int64_t(3000)}) {
            const int64_t ncols = k + extra;
            std::vector<float> dist(size_t(nrows * ncols));
            std::vector<int64_t> ids(dist.size());
            for (auto& id : ids) {
                id = int64_t(rng() % 1000000);
            }
            for (int64_t r = 0; r < nrows; ++r) {
                // Values on a coarse grid, so that ties are common.
                float* row = dist.data() + r * ncols;
                for (int64_t c = 0; c < ncols; ++c) {
                    row[c] = float(rng() % 64) * 0.25f;
                }
                // In key order: -0.0 before +0.0.
                auto keyLess = [](float x, float y) {
                    return hostSelectKey(x, 0) < hostSelectKey(y, 0);
                };
                std::sort(row, row + k, keyLess);
                // Rows 2 and 3 end their prefix with +inf and NaN (a best list of fewer
                // than k); row 4 holds -inf and -0.0 too.
                if (r == 2 || r == 3) {
                    for (int64_t c = k / 2; c < k; ++c) {
                        row[c] = r == 2 || c + 1 < k ? inf : std::nanf("");
                    }
                }
                if (r == 4) {
                    row[0] = -inf;
                    if (k > 1) {
                        row[1] = -0.f;
                    }
                    std::sort(row, row + k, keyLess);
                }
            }
            auto dDist = res.alloc<float>(dist.size());
            auto dIds = res.alloc<int64_t>(ids.size());
            copyToDevice(dDist.data(), dist.data(), dist.size(), stream);
            copyToDevice(dIds.data(), ids.data(), ids.size(), stream);
            auto run = [&](kernels::SelectPath path, int64_t prefix) {
                auto outD = res.alloc<float>(size_t(nrows) * k);
                auto outI = res.alloc<int64_t>(size_t(nrows) * k);
                kernels::SelectRowsArgs a;
                a.dist = dDist.data();
                a.ldDist = ncols;
                a.nrows = nrows;
                a.ncols = ncols;
                a.inIds = dIds.data();
                a.ldIds = ncols;
                a.k = k;
                a.sortedPrefix = prefix;
                a.outD = outD.data();
                a.outI = outI.data();
                a.ldOut = k;
                a.path = path;
                kernels::selectRowsMin(a, stream);
                auto D = copyToHostVector(outD.data(), size_t(nrows) * k, stream);
                std::vector<uint32_t> bits(D.size());
                std::transform(D.begin(), D.end(), bits.begin(), floatBits);
                return std::make_pair(
                        bits, copyToHostVector(outI.data(), size_t(nrows) * k, stream));
            };
            std::vector<kernels::SelectPath> paths{kernels::SelectPath::kBlock};
            if (k <= kernels::kMaxWarpRowSelectK) {
                paths.push_back(kernels::SelectPath::kWarp);
            }
            if (ncols <= kernels::kShortSelectMaxCols) {
                paths.push_back(kernels::SelectPath::kShort);
            }
            const auto want = run(kernels::SelectPath::kBlock, 0);
            for (kernels::SelectPath path : paths) {
                for (int64_t prefix : {int64_t(0), int64_t(k / 2), int64_t(k)}) {
                    SCOPED_TRACE(
                            "k=" + std::to_string(k) + " ncols=" + std::to_string(ncols) +
                            " path=" + std::to_string(int(path)) +
                            " prefix=" + std::to_string(prefix));
                    const auto got = run(path, prefix);
                    EXPECT_EQ(got.first, want.first);
                    EXPECT_EQ(got.second, want.second);
                }
            }
        }
    }
}

TEST(GpuSelectRows, ForcedPathsOutsideTheirRangeThrow) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int64_t ncols = kernels::kShortSelectMaxCols + 1;
    auto dist = res.alloc<float>(size_t(ncols));
    auto outD = res.alloc<float>(64);
    auto outI = res.alloc<int64_t>(64);
    kernels::SelectRowsArgs a;
    a.dist = dist.data();
    a.ldDist = ncols;
    a.nrows = 1;
    a.ncols = ncols;
    a.k = 64;
    a.outD = outD.data();
    a.outI = outI.data();
    a.ldOut = 64;
    a.path = kernels::SelectPath::kShort; // one segment longer than the short path takes
    EXPECT_THROW(kernels::selectRowsMin(a, res.stream()), faiss::FaissException);
    a.path = kernels::SelectPath::kWarp; // k above the warp path's
    EXPECT_THROW(kernels::selectRowsMin(a, res.stream()), faiss::FaissException);
}

TEST(GpuSelectRows, RadixSelectMatchesHostKeyOrderUpToTies) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    GpuResources res;
    cudaStream_t stream = res.stream();
    const float inf = std::numeric_limits<float>::infinity();
    struct Case {
        int64_t ncols;
        int k;
        bool bias;
        bool filter;
        int blocksPerRow;
        int rowsPerKind = 1;
    };
    const Case cases[] = {
            {1, 1, false, false, 1},
            {1, 7, true, false, 4},
            {1000, 1, false, false, 264},
            {1000, 100, true, true, 3},
            {1000, 2048, false, true, 264},
            {70000, 1, true, false, 264},
            {70000, 10, false, true, 264},
            {70000, 33, true, true, 1},
            {70000, 1024, true, false, 50},
            {300000, 100, true, true, 264},
            {300000, 2048, false, false, 264},
            // Many rows of one block each: every pass's last block is the only one.
            {8000, 1024, false, false, 1, 60},
            {5000, 100, true, true, 2, 40},
            {3000, 300, false, true, 1, 30},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(
                "ncols=" + std::to_string(c.ncols) + " k=" + std::to_string(c.k) +
                (c.bias ? " bias" : "") + (c.filter ? " filter" : "") +
                " blocksPerRow=" + std::to_string(c.blocksPerRow) +
                " rows=" + std::to_string(kRowKinds * c.rowsPerKind));
        const int64_t nrows = kRowKinds * c.rowsPerKind;
        std::vector<float> dist(size_t(nrows * c.ncols));
        for (int64_t r = 0; r < nrows; ++r) {
            for (int64_t col = 0; col < c.ncols; ++col) {
                dist[size_t(r * c.ncols + col)] =
                        rowValue(RowKind(r % kRowKinds), col, c.ncols, rng);
            }
        }
        // Small biases keep the kinds' ties (0.0 + 0.5 ties with 0.0 + 0.5).
        std::vector<float> bias(size_t(c.ncols));
        for (auto& b : bias) {
            b = float(rng() % 3) * 0.5f;
        }
        std::vector<uint32_t> words(size_t((c.ncols + 31) / 32));
        for (auto& w : words) {
            w = uint32_t(rng());
        }
        auto allowed = [&](int64_t col) {
            return !c.filter || ((words[size_t(col >> 5)] >> (col & 31)) & 1u);
        };
        auto value = [&](int64_t r, int64_t col) {
            const float v = dist[size_t(r * c.ncols + col)];
            return c.bias ? v + bias[size_t(col)] : v;
        };
        auto dDist = res.alloc<float>(dist.size());
        auto dBias = res.alloc<float>(bias.size());
        auto dWords = res.alloc<uint32_t>(words.size());
        copyToDevice(dDist.data(), dist.data(), dist.size(), stream);
        copyToDevice(dBias.data(), bias.data(), bias.size(), stream);
        copyToDevice(dWords.data(), words.data(), words.size(), stream);
        std::vector<float> garbageD(size_t(nrows * c.k), 12345.f);
        std::vector<int64_t> garbageI(size_t(nrows * c.k), 777);
        auto outD = res.alloc<float>(garbageD.size());
        auto outI = res.alloc<int64_t>(garbageI.size());
        copyToDevice(outD.data(), garbageD.data(), garbageD.size(), stream);
        copyToDevice(outI.data(), garbageI.data(), garbageI.size(), stream);
        const size_t scratchBytes = kernels::radixSelectScratchBytes(nrows, c.k);
        auto scratch = res.alloc<char>(scratchBytes);

        kernels::RadixSelectArgs a;
        a.dist = dDist.data();
        a.ldDist = c.ncols;
        a.nrows = nrows;
        a.ncols = c.ncols;
        a.colBias = c.bias ? dBias.data() : nullptr;
        a.allow = c.filter ? dWords.data() : nullptr;
        a.k = c.k;
        a.outD = outD.data();
        a.outI = outI.data();
        a.ldOut = c.k;
        kernels::radixSelectRowsMin(a, scratch.data(), scratchBytes, c.blocksPerRow, stream);
        const auto D = copyToHostVector(outD.data(), garbageD.size(), stream);
        const auto I = copyToHostVector(outI.data(), garbageI.size(), stream);

        int64_t bad = 0;
        auto fail = [&](int64_t r, int j, const std::string& what) {
            if (bad++ < 5) {
                ADD_FAILURE() << "row " << r << " (kind " << r % kRowKinds << ") rank " << j << ": "
                              << what << " got (" << D[size_t(r * c.k + j)] << ", "
                              << I[size_t(r * c.k + j)] << ")";
            }
        };
        for (int64_t r = 0; r < nrows; ++r) {
            std::vector<uint64_t> keys; // value key only: ties may come in any order
            for (int64_t col = 0; col < c.ncols; ++col) {
                const float v = value(r, col);
                if (allowed(col) && v < inf) {
                    keys.push_back(hostSelectKey(v, 0));
                }
            }
            const size_t found = std::min(keys.size(), size_t(c.k));
            std::partial_sort(keys.begin(), keys.begin() + found, keys.end());
            std::vector<bool> seen(size_t(c.ncols), false);
            for (int j = 0; j < c.k; ++j) {
                const float d = D[size_t(r * c.k + j)];
                const int64_t id = I[size_t(r * c.k + j)];
                if (size_t(j) >= found) {
                    if (!(d == inf && id == -1)) {
                        fail(r, j, "want a missing result (+inf, -1)");
                    }
                    continue;
                }
                if (hostSelectKey(d, 0) != keys[size_t(j)]) {
                    fail(r, j, "distance out of key order");
                } else if (id < 0 || id >= c.ncols || seen[size_t(id)] || !allowed(id)) {
                    fail(r, j, "id not a fresh allowed column");
                } else if (floatBits(value(r, id)) != floatBits(d)) {
                    fail(r, j, "the id's value differs");
                } else {
                    seen[size_t(id)] = true;
                }
            }
        }
        ASSERT_EQ(bad, 0);
    }
}
