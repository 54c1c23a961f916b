#include <faiss_ext/impl/BangPruneGpu.h>

#include <algorithm>
#include <climits>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangRows.h>
#include <faiss_ext/impl/ResourcesAccess.h>
#include <kernels/BangPrune.h>

namespace faiss_ext {

namespace {

/// One page's device arrays (kernels::BangPruneWork plus the segment offsets and, for
/// the second prune's gathered candidates, the ids).
struct PageBuffers {
    DeviceBuffer<int32_t> segments;
    DeviceBuffer<int32_t> ids;
    DeviceBuffer<uint64_t> keys;
    DeviceBuffer<uint64_t> keysAlt;
    DeviceBuffer<uint8_t> alive;
    DeviceBuffer<char> sortTemp;
    DeviceBuffer<int32_t> order;
    DeviceBuffer<int32_t> sortEnds;
    int longest = 0;

    PageBuffers(const GpuResources& res, const BangPrunePageRange& page, bool ownIds)
            : segments(res.alloc<int32_t>(size_t(page.end - page.begin) + 1)),
              ids(res.alloc<int32_t>(ownIds ? size_t(page.entries) : 0)),
              keys(res.alloc<uint64_t>(size_t(page.entries))),
              keysAlt(res.alloc<uint64_t>(size_t(page.entries))),
              alive(res.alloc<uint8_t>(size_t(page.entries))),
              sortTemp(res.alloc<char>(
                      kernels::bangPruneSortTempBytes(page.entries, page.end - page.begin))) {}

    /// Uploads the page's segment offsets: offsets[v] - offsets[begin] for v in
    /// [begin, end]; and, when a node has more than kBangPruneSharedSortMax entries,
    /// the ends of the segments the global sort sorts (BangPrunePage::sortEnds).
    void setSegments(
            const std::vector<int64_t>& offsets,
            const BangPrunePageRange& page,
            const GpuResources& res) {
        std::vector<int32_t> seg(size_t(page.end - page.begin) + 1);
        for (size_t s = 0; s < seg.size(); ++s) {
            seg[s] = int32_t(offsets[size_t(page.begin) + s] - offsets[size_t(page.begin)]);
        }
        FAISS_ASSERT(int64_t(seg.back()) == page.entries);
        copyToDevice(segments.data(), seg.data(), seg.size(), res.stream());
        longest = 0;
        for (size_t s = 0; s + 1 < seg.size(); ++s) {
            longest = std::max(longest, seg[s + 1] - seg[s]);
        }
        if (longest > kernels::kBangPruneSharedSortMax) {
            std::vector<int32_t> ends(seg.size() - 1);
            for (size_t s = 0; s < ends.size(); ++s) {
                const bool global = seg[s + 1] - seg[s] > kernels::kBangPruneSharedSortMax;
                ends[s] = global ? seg[s + 1] : seg[s];
            }
            sortEnds = res.alloc<int32_t>(ends.size());
            copyToDevice(sortEnds.data(), ends.data(), ends.size(), res.stream());
        }
    }

    /// The order of the page's nodes, as offsets from its first node (each once).
    void setOrder(
            const std::vector<int32_t>& mine,
            const BangPrunePageRange& page,
            const GpuResources& res) {
        FAISS_ASSERT(int64_t(mine.size()) == page.end - page.begin);
        order = res.alloc<int32_t>(mine.size());
        copyToDevice(order.data(), mine.data(), mine.size(), res.stream());
    }

    kernels::BangPrunePage page(
            const BangRows& vectors,
            const BangPrunePageRange& r,
            int64_t firstNode,
            const int32_t* pageIds) const {
        kernels::BangPrunePage p;
        p.vectors = vectors.floats();
        p.byteVectors = vectors.bytes();
        p.n = vectors.size();
        p.d = vectors.dim();
        p.v0 = firstNode + r.begin;
        p.nodes = int(r.end - r.begin);
        p.segments = segments.data();
        p.ids = pageIds;
        p.entries = int(r.entries);
        p.order = order.size() > 0 ? order.data() : nullptr;
        p.longest = longest;
        p.sortEnds = sortEnds.size() > 0 ? sortEnds.data() : nullptr;
        return p;
    }

    kernels::BangPruneWork work() {
        kernels::BangPruneWork w;
        w.keys = keys.data();
        w.keysAlt = keysAlt.data();
        w.alive = alive.data();
        w.sortTemp = sortTemp.data();
        w.sortTempBytes = sortTemp.size();
        return w;
    }
};

size_t sortTempBytes(int64_t entries, int64_t nodes) {
    return kernels::bangPruneSortTempBytes(entries, nodes);
}

/// Each page's nodes in the order of `order` (offsets from the first node of the pages'
/// span, each node of it once), as offsets from the page's first node; none when order
/// is null (id order).
std::vector<std::vector<int32_t>> pageOrders(
        const std::vector<int32_t>* order,
        const std::vector<BangPrunePageRange>& pages) {
    if (!order || pages.empty()) {
        return {};
    }
    std::vector<int64_t> bounds;
    bounds.reserve(pages.size() + 1);
    for (const BangPrunePageRange& p : pages) {
        bounds.push_back(p.begin);
    }
    bounds.push_back(pages.back().end);
    return splitOrderByRanges(*order, bounds);
}

} // namespace

std::vector<std::vector<int32_t>> splitOrderByRanges(
        const std::vector<int32_t>& order,
        const std::vector<int64_t>& bounds) {
    FAISS_ASSERT(!bounds.empty() && std::is_sorted(bounds.begin(), bounds.end()));
    std::vector<std::vector<int32_t>> out(bounds.size() - 1);
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].reserve(size_t(bounds[i + 1] - bounds[i]));
    }
    for (const int32_t v : order) {
        if (v >= bounds.front() && v < bounds.back()) {
            // v's range is the last one to start at or before v.
            const auto after = std::upper_bound(bounds.begin(), bounds.end(), int64_t(v));
            const size_t i = size_t(after - bounds.begin()) - 1;
            out[i].push_back(int32_t(v - bounds[i]));
        }
    }
    return out;
}

size_t bangPrunePageBytes(int64_t entries, int64_t nodes) {
    return size_t(entries) * (4 + 8 + 8 + 1) + (size_t(nodes) * 3 + 1) * 4 + 4096;
}

std::vector<BangPrunePageRange> planBangPrunePages(
        const std::vector<int64_t>& offsets,
        size_t budgetBytes,
        const std::function<size_t(int64_t entries, int64_t nodes)>& sortTempBytes) {
    FAISS_ASSERT(!offsets.empty());
    const int64_t n = int64_t(offsets.size()) - 1;
    auto entriesOf = [&](int64_t b, int64_t e) { return offsets[size_t(e)] - offsets[size_t(b)]; };
    auto arraysFit = [&](int64_t b, int64_t e) {
        const int64_t entries = entriesOf(b, e);
        return entries <= kernels::kBangPruneMaxPageEntries &&
                e - b <= kernels::kBangPruneMaxPageNodes &&
                bangPrunePageBytes(entries, e - b) <= budgetBytes;
    };
    std::vector<BangPrunePageRange> pages;
    int64_t begin = 0;
    while (begin < n) {
        // The longest run of nodes whose arrays fit, one node at least.
        int64_t end = begin + 1;
        while (end < n && arraysFit(begin, end + 1)) {
            ++end;
        }
        // With the sort's storage: halved until it fits too.
        while (true) {
            const int64_t entries = entriesOf(begin, end);
            FAISS_ASSERT(entries >= 0);
            FAISS_THROW_IF_NOT_FMT(
                    entries <= kernels::kBangPruneMaxPageEntries,
                    "GpuIndexBang build: node %lld has %lld candidates to prune (reverse "
                    "edges included), more than the GPU prune's %lld",
                    (long long)begin, (long long)entries,
                    (long long)kernels::kBangPruneMaxPageEntries);
            const size_t bytes =
                    bangPrunePageBytes(entries, end - begin) + sortTempBytes(entries, end - begin);
            if (bytes <= budgetBytes) {
                break;
            }
            FAISS_THROW_IF_NOT_FMT(
                    end - begin > 1,
                    "GpuIndexBang build: node %lld has %lld candidates to prune (reverse "
                    "edges included); they need %zu bytes of temporary device memory, more "
                    "than GpuResourcesConfig::tempMemoryBytes = %zu",
                    (long long)begin, (long long)entries, bytes, budgetBytes);
            end = begin + (end - begin) / 2;
        }
        pages.push_back({begin, end, entriesOf(begin, end)});
        begin = end;
    }
    return pages;
}

namespace {

void checkPruneSmem(const GpuResources& res, int d) {
    const size_t smem = kernels::bangPruneSmemBytes(d);
    FAISS_THROW_IF_NOT_FMT(
            smem <= res.maxSharedMemoryPerBlock(),
            "GpuIndexBang build: d=%d needs %zu bytes of shared memory per block for the "
            "prune, the device allows %zu",
            d, smem, res.maxSharedMemoryPerBlock());
}

} // namespace

void pruneCandidatesInto(
        const GpuResources& res,
        const BangRows& vectors,
        const BangDeviceCandidates& candidates,
        int R,
        float alpha,
        int64_t firstNode,
        const std::vector<int32_t>* order,
        int32_t* graph) {
    const int64_t n = vectors.size();
    FAISS_ASSERT(
            n >= 1 && n < INT_MAX && R >= 1 && firstNode >= 0 &&
            firstNode + candidates.size() <= n);
    FAISS_ASSERT(!order || int64_t(order->size()) == candidates.size());
    FAISS_ASSERT(candidates.offsets.front() == 0);
    FAISS_ASSERT(size_t(candidates.offsets.back()) == candidates.ids.size());
    checkPruneSmem(res, vectors.dim());
    const cudaStream_t stream = res.stream();
    const std::vector<BangPrunePageRange> pages =
            planBangPrunePages(candidates.offsets, res.tempMemoryBytes(), sortTempBytes);
    const std::vector<std::vector<int32_t>> orders = pageOrders(order, pages);
    for (size_t i = 0; i < pages.size(); ++i) {
        const BangPrunePageRange& r = pages[i];
        PageBuffers b(res, r, false);
        b.setSegments(candidates.offsets, r, res);
        if (order) {
            b.setOrder(orders[i], r, res);
        }
        const int32_t* pageIds = candidates.ids.data() + candidates.offsets[size_t(r.begin)];
        kernels::bangPrunePage(
                b.page(vectors, r, firstNode, pageIds), b.work(), R, alpha, false, graph, stream);
    }
}

void pruneWithReverseEdges(
        const GpuResources& res,
        const BangRows& vectors,
        int R,
        float alpha,
        int64_t firstNode,
        const std::vector<int32_t>* order,
        int32_t* graph,
        const Progress& progress) {
    const int64_t n = vectors.size();
    FAISS_ASSERT(n >= 1 && n < INT_MAX && R >= 1 && firstNode >= 0 && firstNode < n);
    FAISS_ASSERT(!order || int64_t(order->size()) == n);
    checkPruneSmem(res, vectors.dim());
    const cudaStream_t stream = res.stream();

    // Reverse edges: node u's list is inIds[inOffsets[u] .. inOffsets[u + 1]).
    DeviceBuffer<int32_t> degree = res.alloc<int32_t>(size_t(n));
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(degree.data(), 0, degree.bytes(), stream));
    kernels::bangCountInEdges(graph, n, R, firstNode, degree.data(), stream);
    const std::vector<int32_t> inDegree = copyToHostVector(degree.data(), size_t(n), stream);
    // The second prune's entries: each node's row (R) and its reverse edges.
    std::vector<int64_t> inOffsets(size_t(n) + 1, 0), offsets(size_t(n) + 1, 0);
    for (int64_t v = 0; v < n; ++v) {
        FAISS_ASSERT(inDegree[size_t(v)] >= 0 && inDegree[size_t(v)] < n);
        inOffsets[size_t(v) + 1] = inOffsets[size_t(v)] + inDegree[size_t(v)];
        offsets[size_t(v) + 1] = offsets[size_t(v)] + R + inDegree[size_t(v)];
    }
    FAISS_ASSERT(inOffsets.back() <= n * R);
    DeviceBuffer<int64_t> inOffsetsDev = res.alloc<int64_t>(inOffsets.size());
    copyToDevice(inOffsetsDev.data(), inOffsets.data(), inOffsets.size(), stream);
    DeviceBuffer<int32_t> inIds = res.alloc<int32_t>(size_t(inOffsets.back()));
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(degree.data(), 0, degree.bytes(), stream));
    kernels::bangFillInEdges(
            graph, n, R, firstNode, inOffsetsDev.data(), degree.data(), inIds.data(), stream);
    progress.reportAfter(stream, "prune: reverse edges listed", 0.5);

    // Second prune: out-edges plus reverse edges, copied when at most R, else pruned.
    // Written over graph in place: a page's gather has read its own rows (and no others)
    // before its prune writes them, and the reverse edges are already built.
    const std::vector<BangPrunePageRange> pages =
            planBangPrunePages(offsets, res.tempMemoryBytes(), sortTempBytes);
    const std::vector<std::vector<int32_t>> orders = pageOrders(order, pages);
    for (size_t i = 0; i < pages.size(); ++i) {
        const BangPrunePageRange& r = pages[i];
        PageBuffers b(res, r, true);
        b.setSegments(offsets, r, res);
        if (order) {
            b.setOrder(orders[i], r, res);
        }
        kernels::bangGatherOutAndInEdges(
                graph, R, inOffsetsDev.data(), inIds.data(), r.begin, int(r.end - r.begin),
                b.segments.data(), b.ids.data(), stream);
        kernels::bangPrunePage(
                b.page(vectors, r, 0, b.ids.data()), b.work(), R, alpha, true, graph, stream);
    }
    progress.reportAfter(stream, "prune: out and reverse edges pruned", 1.0);
}

DeviceBuffer<int32_t> pruneCandidateGraphOnDevice(
        const GpuResources& res,
        const BangRows& vectors,
        BangDeviceCandidates candidates,
        int R,
        float alpha,
        const Progress& progress,
        const int32_t* keptGraph,
        int64_t firstNode,
        const std::vector<int32_t>* order) {
    const int64_t n = vectors.size();
    FAISS_ASSERT(
            n >= 1 && firstNode >= 0 && firstNode < n && candidates.size() == n - firstNode &&
            (firstNode == 0 || keptGraph != nullptr));
    FAISS_ASSERT(!order || firstNode == 0);
    DeviceBuffer<int32_t> graph = res.alloc<int32_t>(size_t(n) * R);
    // The kept rows as they are; the first prune: RobustPrune of every other node's
    // candidates into graph.
    if (firstNode > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                graph.data(), keptGraph, size_t(firstNode) * R * sizeof(int32_t),
                cudaMemcpyDeviceToDevice, res.stream()));
    }
    pruneCandidatesInto(res, vectors, candidates, R, alpha, firstNode, order, graph.data());
    // The reverse edges do not read the candidates: their memory (the largest array of a
    // first build's prune, n x ~73 ids) goes back to the pool, stream-ordered.
    candidates.ids = DeviceBuffer<int32_t>();
    progress.reportAfter(res.stream(), "prune: candidates pruned", 0.4);
    pruneWithReverseEdges(res, vectors, R, alpha, firstNode, order, graph.data(), progress);
    return graph;
}

std::vector<int32_t> pruneCandidateGraphGpu(
        const GpuResources& res,
        const BangRows& vectors,
        const BangCandidateLists& candidates,
        int R,
        float alpha,
        const std::vector<int32_t>* order) {
    BangDeviceCandidates c;
    c.offsets = candidates.offsets;
    c.ids = res.alloc<int32_t>(candidates.ids.size());
    GpuResourcesAccess::pinnedStaging(res).toDevice(
            c.ids.data(), candidates.ids.data(), c.ids.bytes(), res.stream());
    const DeviceBuffer<int32_t> graph = pruneCandidateGraphOnDevice(
            res, vectors, std::move(c), R, alpha, Progress(false, ""), nullptr, 0, order);
    std::vector<int32_t> out(graph.size());
    GpuResourcesAccess::pinnedStaging(res).toHost(
            out.data(), graph.data(), graph.bytes(), res.stream());
    return out;
}

} // namespace faiss_ext
