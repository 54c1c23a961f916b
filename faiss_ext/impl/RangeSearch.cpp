#include <faiss_ext/impl/RangeSearch.h>

#include <algorithm>
#include <vector>

#include <faiss/impl/AuxIndexStructures.h>

#include <kernels/Distances.h>
#include <kernels/RangeSearch.h>

namespace faiss_ext {

namespace {

/// Bytes of one result on the device (distance and id).
constexpr size_t kResultBytes = sizeof(float) + sizeof(int64_t);

/// Turns per-query counts into result->lims and allocates the result arrays.
void allocateResult(faiss::RangeSearchResult* result, const std::vector<int64_t>& perQuery) {
    for (size_t q = 0; q < perQuery.size(); ++q) {
        result->lims[q] = size_t(perQuery[q]);
    }
    result->do_allocation();
}

/// Copies one batch of device results to the result arrays at `at`.
void copyResults(
        const GpuResources& res,
        const DeviceBuffer<float>& d,
        const DeviceBuffer<int64_t>& i,
        int64_t n,
        faiss::RangeSearchResult* result,
        size_t at) {
    static_assert(sizeof(*result->labels) == sizeof(int64_t), "64-bit labels");
    copyToHost(result->distances + at, d.data(), size_t(n), res.stream());
    copyToHost(reinterpret_cast<int64_t*>(result->labels) + at, i.data(), size_t(n), res.stream());
}

} // namespace

FlatRangeTiling planFlatRange(int64_t nq, int64_t nb, int d, size_t budgetBytes) {
    FAISS_THROW_IF_NOT_FMT(
            nq > 0 && nb > 0 && d > 0, "bad flat range shape nq=%lld nb=%lld d=%d", (long long)nq,
            (long long)nb, d);
    // Per query: the vector, its norm, its fill offset and (at most) one count per base tile.
    const size_t perQuery = size_t(d) * sizeof(float) + sizeof(float) + sizeof(int64_t);
    const int64_t minBase = std::min<int64_t>(nb, 256);
    for (int64_t qt = std::min<int64_t>(nq, 1024);; qt = (qt + 1) / 2) {
        const size_t fixed = size_t(qt) * perQuery;
        if (fixed < budgetBytes) {
            // A distance tile (4 bytes) and its worst-case fill (12) per entry, plus the
            // counts (8 bytes per query per tile).
            const size_t left = budgetBytes - fixed;
            int64_t bt = std::min<int64_t>(nb, int64_t(left / (size_t(qt) * (4 + kResultBytes))));
            bt = std::min<int64_t>(bt, (int64_t(1) << 30) / qt);
            while (bt >= minBase &&
                   size_t(qt) * bt * (4 + kResultBytes) +
                                   size_t(qt) * ((nb + bt - 1) / bt) * sizeof(int64_t) >
                           left) {
                bt -= std::max<int64_t>(1, bt / 8);
            }
            if (bt >= minBase) {
                return FlatRangeTiling{qt, bt};
            }
        }
        FAISS_THROW_IF_NOT_FMT(
                qt > 1, "range_search: temporary memory budget of %zu bytes is too small for d=%d",
                budgetBytes, d);
    }
}

void flatRangeSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* hostQueries,
        int64_t nq,
        float radius,
        faiss::RangeSearchResult* result) {
    cudaStream_t stream = res.stream();
    const bool l2 = in.metric == faiss::METRIC_L2;
    if (in.nb == 0) {
        allocateResult(result, std::vector<int64_t>(size_t(nq), 0));
        return;
    }
    const FlatRangeTiling t = planFlatRange(nq, in.nb, in.d, res.tempMemoryBytes());
    const int64_t nTiles = (in.nb + t.baseTile - 1) / t.baseTile;
    // counts[q * nTiles + tile]: results of query q in base tile `tile`.
    std::vector<int64_t> counts(size_t(nq) * nTiles);

    auto queries = res.alloc<float>(size_t(t.queryTile) * in.d);
    auto qNorms = res.alloc<float>(size_t(t.queryTile));
    auto dist = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
    auto tileCounts = res.alloc<int64_t>(size_t(t.queryTile) * nTiles);
    auto offsets = res.alloc<int64_t>(size_t(t.queryTile));

    kernels::RangeRowsArgs a;
    a.dist = dist.data();
    a.innerProduct = !l2;
    a.radius = radius;
    a.allow = in.allow;
    a.rowNorms = qNorms.data();
    // One pass over every (query tile, base tile); fill: the second pass.
    auto forEachTile = [&](auto&& body) {
        for (int64_t q0 = 0; q0 < nq; q0 += t.queryTile) {
            const int64_t m = std::min(t.queryTile, nq - q0);
            copyToDevice(queries.data(), hostQueries + q0 * in.d, size_t(m) * in.d, stream);
            if (l2) {
                kernels::rowSquaredNorms(queries.data(), m, in.d, qNorms.data(), stream);
            }
            body(q0, m);
        }
    };
    auto tileArgs = [&](int64_t m, int64_t tile) {
        const int64_t b0 = tile * t.baseTile;
        const int64_t nb = std::min(t.baseTile, in.nb - b0);
        flatDistanceTile(
                res, in, queries.data(), m, b0, nb, kernels::GemmProduct::kFloat32, nullptr,
                dist.data());
        kernels::RangeRowsArgs r = a;
        r.ldDist = nb;
        r.nrows = m;
        r.ncols = nb;
        r.colBias = l2 ? in.baseNorms + b0 : nullptr;
        r.idBase = b0;
        return r;
    };

    // Pass 1: counts.
    forEachTile([&](int64_t q0, int64_t m) {
        for (int64_t tile = 0; tile < nTiles; ++tile) {
            kernels::RangeRowsArgs r = tileArgs(m, tile);
            r.counts = tileCounts.data() + tile;
            r.ldCounts = nTiles;
            kernels::rangeCountRows(r, stream);
        }
        copyToHost(counts.data() + q0 * nTiles, tileCounts.data(), size_t(m) * nTiles, stream);
    });
    std::vector<int64_t> perQuery(size_t(nq), 0);
    for (int64_t q = 0; q < nq; ++q) {
        for (int64_t tile = 0; tile < nTiles; ++tile) {
            perQuery[q] += counts[q * nTiles + tile];
        }
    }
    allocateResult(result, perQuery);

    // Pass 2: the same tiles again, each one's results written compactly (rows in
    // order) and copied row by row to the result.
    std::vector<size_t> cursor(result->lims, result->lims + nq);
    std::vector<int64_t> rowOff;
    forEachTile([&](int64_t q0, int64_t m) {
        for (int64_t tile = 0; tile < nTiles; ++tile) {
            rowOff.assign(size_t(m), 0);
            int64_t total = 0;
            for (int64_t r = 0; r < m; ++r) {
                rowOff[r] = total;
                total += counts[(q0 + r) * nTiles + tile];
            }
            if (total == 0) {
                continue;
            }
            copyToDevice(offsets.data(), rowOff.data(), size_t(m), stream);
            auto outD = res.alloc<float>(size_t(total));
            auto outI = res.alloc<int64_t>(size_t(total));
            kernels::RangeRowsArgs r = tileArgs(m, tile);
            r.rowOffsets = offsets.data();
            r.outD = outD.data();
            r.outI = outI.data();
            kernels::rangeFillRows(r, stream);
            std::vector<float> hd = copyToHostVector(outD.data(), size_t(total), stream);
            std::vector<int64_t> hi = copyToHostVector(outI.data(), size_t(total), stream);
            for (int64_t row = 0; row < m; ++row) {
                const int64_t c = counts[(q0 + row) * nTiles + tile];
                std::copy_n(hd.data() + rowOff[row], c, result->distances + cursor[q0 + row]);
                std::copy_n(hi.data() + rowOff[row], c, result->labels + cursor[q0 + row]);
                cursor[q0 + row] += size_t(c);
            }
        }
    });
}

void ivfRangeSearch(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* hostQueries,
        int64_t nq,
        float radius,
        faiss::RangeSearchResult* result) {
    cudaStream_t stream = res.stream();
    const int d = in.coarse.d;
    const int nprobe = in.nprobe;
    // Per query: the vector, its coarse results (distance, list) and one count per probe.
    const size_t bytesPerQuery = size_t(d) * sizeof(float) + size_t(nprobe) * (kResultBytes + 8);
    const int64_t tile = std::max<int64_t>(
            1, std::min<int64_t>(nq, int64_t(res.tempMemoryBytes() / 4 / bytesPerQuery)));
    std::vector<int64_t> coarse(size_t(nq) * nprobe);
    std::vector<int64_t> counts(size_t(nq) * nprobe);

    auto queries = res.alloc<float>(size_t(tile) * d);
    auto coarseD = res.alloc<float>(size_t(tile) * nprobe);
    auto coarseI = res.alloc<int64_t>(size_t(tile) * nprobe);
    auto pairCounts = res.alloc<int64_t>(size_t(tile) * nprobe);

    kernels::IvfRangeArgs a;
    a.queries = queries.data();
    a.d = d;
    a.coarse = coarseI.data();
    a.nprobe = nprobe;
    a.listData = in.lists->deviceData();
    a.listIds = in.lists->deviceIds();
    a.listLen = in.lists->deviceLengths();
    a.allow = in.allow;
    a.listBitBase = in.lists->deviceSlotBase();
    a.innerProduct = in.metric == faiss::METRIC_INNER_PRODUCT;
    a.radius = radius;

    // Pass 1: coarse search (kept on the host for pass 2) and the counts.
    for (int64_t q0 = 0; q0 < nq; q0 += tile) {
        const int64_t m = std::min(tile, nq - q0);
        copyToDevice(queries.data(), hostQueries + q0 * d, size_t(m) * d, stream);
        FlatSearchInput cq = in.coarse;
        cq.queries = queries.data();
        cq.nq = m;
        flatSearch(res, cq, nprobe, coarseD.data(), coarseI.data());
        kernels::IvfRangeArgs r = a;
        r.queryBase = q0;
        r.pairBegin = q0 * nprobe;
        r.npairs = m * nprobe;
        r.counts = pairCounts.data();
        kernels::ivfRangeCount(r, stream);
        copyToHost(coarse.data() + q0 * nprobe, coarseI.data(), size_t(m) * nprobe, stream);
        copyToHost(counts.data() + q0 * nprobe, pairCounts.data(), size_t(m) * nprobe, stream);
    }
    std::vector<int64_t> perQuery(size_t(nq), 0);
    for (int64_t q = 0; q < nq; ++q) {
        for (int p = 0; p < nprobe; ++p) {
            perQuery[q] += counts[q * nprobe + p];
        }
    }
    allocateResult(result, perQuery);

    // Pass 2: per query tile, runs of (query, probe) pairs whose results fit what is
    // left of the budget; pairs are in result order, so each run is one copy.
    const size_t held = size_t(tile) * bytesPerQuery;
    const size_t outBudget = res.tempMemoryBytes() > held ? res.tempMemoryBytes() - held : 0;
    const int64_t maxRun = int64_t(outBudget / kResultBytes);
    std::vector<int64_t> pairOff;
    size_t cursor = 0;
    for (int64_t q0 = 0; q0 < nq; q0 += tile) {
        const int64_t m = std::min(tile, nq - q0);
        copyToDevice(queries.data(), hostQueries + q0 * d, size_t(m) * d, stream);
        copyToDevice(coarseI.data(), coarse.data() + q0 * nprobe, size_t(m) * nprobe, stream);
        const int64_t end = (q0 + m) * nprobe;
        for (int64_t w0 = q0 * nprobe; w0 < end;) {
            pairOff.clear();
            int64_t total = 0;
            int64_t w1 = w0;
            while (w1 < end && (w1 == w0 || total + counts[w1] <= maxRun)) {
                pairOff.push_back(total);
                total += counts[w1];
                ++w1;
            }
            FAISS_THROW_IF_NOT_FMT(
                    total <= maxRun,
                    "range_search: %lld results of one probed list exceed the temporary "
                    "memory budget of %zu bytes",
                    (long long)total, res.tempMemoryBytes());
            if (total > 0) {
                auto offs = res.alloc<int64_t>(pairOff.size());
                auto outD = res.alloc<float>(size_t(total));
                auto outI = res.alloc<int64_t>(size_t(total));
                copyToDevice(offs.data(), pairOff.data(), pairOff.size(), stream);
                kernels::IvfRangeArgs r = a;
                r.queryBase = q0;
                r.pairBegin = w0;
                r.npairs = w1 - w0;
                r.pairOffsets = offs.data();
                r.outD = outD.data();
                r.outI = outI.data();
                kernels::ivfRangeFill(r, stream);
                copyResults(res, outD, outI, total, result, cursor);
                cursor += size_t(total);
            }
            w0 = w1;
        }
    }
    FAISS_ASSERT(cursor == result->lims[nq]);
}

} // namespace faiss_ext
