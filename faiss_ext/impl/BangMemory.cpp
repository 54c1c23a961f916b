#include <faiss_ext/impl/BangMemory.h>

#include <algorithm>
#include <initializer_list>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangInnerProduct.h>
#include <faiss_ext/impl/BangRows.h>
#include <faiss_ext/impl/IvfSelfKnn.h>
#include <kernels/BangPq.h>

namespace faiss_ext {

BangMemoryEstimate estimateBangMemory(
        int64_t n,
        int d,
        faiss::MetricType metric,
        const GpuIndexBangConfig& config,
        size_t tempMemoryBytes) {
    FAISS_THROW_IF_NOT_FMT(n >= 1, "estimateMemory: n=%lld must be >= 1", (long long)n);
    const BangBuildConfig& b = config.build;
    const size_t N = size_t(n);
    const int w = bangStoredDim(d, config.pqSubquantizers, metric);
    const size_t M = size_t(bangStoredPqM(config.pqSubquantizers, metric));
    const bool onHost = config.vectorPlacement == BangVectorPlacement::kHost;
    const size_t R = size_t(b.graphDegree);
    const size_t temp = tempMemoryBytes, pageBytes = config.pageBytes;
    // kAuto counts floats (an upper bound): bytes only where the data turns out so.
    const bool bytes = config.vectorStorage == BangVectorStorage::kBytes &&
            bangBytesApply(config.pqSubquantizers, metric);

    // The built index (BangGraph): rows (floats or bytes) and norms (or the rows in host
    // memory), the entry hubs' rows and norms, the graph, the PQ codes and codebooks.
    const size_t rows = N * size_t(w) * (bytes ? 1 : 4), norms = N * 4;
    const size_t entryHubs = size_t(bangEntryHubCount(n)) * size_t(w + 1) * 4;
    const size_t graph = N * R * 4;
    const size_t pq = M > 0 ? N * M + size_t(kernels::kBangPqCentroids) * size_t(w) * 4 : 0;
    BangMemoryEstimate e;
    e.deviceBytes = (onHost ? 0 : rows + norms) + entryHubs + graph + pq;
    e.hostBytes = onHost ? rows : 0;

    // The build (BangBuild.cpp), stage by stage, each beside the work state's rows.
    const size_t base = rows + norms + entryHubs;
    const size_t K1 = n > 1 ? size_t(std::min<int64_t>(b.candidates, n - 1)) + 1 : 0;
    const int64_t H = bangHubCount(n, b.hubs);
    const size_t hubK = size_t(std::min<int64_t>(kBangHubsPerNode, H));
    const size_t hubHubK = size_t(std::min<int64_t>(kBangHubsPerHub + 1, H));
    auto page = [&](size_t k) { // one page of exact k-NN distances (knnIds)
        return std::min(N, std::max<size_t>(1, pageBytes / std::max<size_t>(1, k * 4))) * k * 4;
    };
    const size_t offsets = (N + 1) * 8;
    const size_t nn = N * K1 * 4; // int32 ids
    // Byte rows that a GEMM or a search reads as floats are converted a page at a time:
    // a page of pageBytes (the hubs' queries, the medoid's base), all of them for the
    // exact k-NN, a pass's range of queries.
    const size_t floatRows = N * size_t(w) * 4;
    const size_t convertedPage = bytes ? std::min(floatRows, pageBytes) : 0;
    // Candidates: the k-NN, exact (int64 ids, then narrowed) or from sqrt(n) IVF lists
    // (ivfSelfKnn: a copy of the rows sorted by list, pages of ivfSelfKnnPageQueries).
    const int64_t lists = bangCandidateLists(n, b.candidateLists);
    const size_t knn = base +
            (lists == 0 ? (bytes ? floatRows : 0) + 2 * nn + nn + page(K1) + temp
                        : ivfSelfKnnPeakBytes(
                                  n, w, bytes, int(K1), lists, b.candidateProbes, pageBytes, temp));
    // Then each vector's nearest hubs, the hubs' nearest hubs and the first lists.
    const size_t firstLists = 4 * (N * (K1 + hubK) + size_t(H) * hubHubK) + offsets;
    const size_t hubs = base + nn + N * hubK * 8 + size_t(H) * size_t(w + 1) * 4 +
            size_t(H) * hubHubK * 8 + page(std::max(hubK, hubHubK)) + convertedPage + firstLists +
            temp;
    // A prune: its candidate lists and the graph it writes, then (the candidates freed)
    // in-degrees, reverse edges (at most n R) and their offsets; pages of temporaries.
    auto prune = [&](size_t candidates, size_t kept) {
        return base + kept + graph + temp + std::max(candidates, N * 4 + offsets + N * R * 4);
    };
    // A refinement pass, beside the graph it starts from and the one it writes: its
    // nodes searched and their lists made and pruned a range at a time (bangPassNodes);
    // then, the graph it started from freed, the reverse edges and the second prune over
    // the whole new graph.
    const size_t range = size_t(bangPassNodes(n, b, temp));
    const size_t passRanges = base + 2 * graph +
            range * (bangPassBytesPerNode(b) + (bytes ? size_t(w) * 4 : 0)) + temp;
    const size_t passReverse = base + graph + N * 4 + offsets + N * R * 4 + temp;
    // PQ mode trains on the built graph's state (k-means pages) and uploads the codes.
    const size_t pqTrain = M > 0 ? base + graph + pq + pageBytes + temp : 0;
    e.buildDeviceBytes = std::max(
            {knn, hubs, prune(firstLists, 0),
             b.passes > 0 ? std::max(passRanges, passReverse) : size_t(0), pqTrain, e.deviceBytes});

    // Host: the caller's host rows are read in place (inner product: transformed into a
    // new array); the IVF lists' k-means copies its sample (faiss::Clustering: at most
    // 256 rows a centroid, with their assignments); then each node's nearest hub, the
    // prune order and the lists' offsets, the PQ codes; the host placement's copy comes
    // once the rows above are freed.
    const size_t hostRows = metric == faiss::METRIC_INNER_PRODUCT ? size_t(n) * w * 4 : 0;
    const size_t kMeansSample =
            lists > 0 ? std::min(N, size_t(256) * size_t(lists)) * (size_t(w) * 4 + 12) : 0;
    e.buildHostBytes = std::max(
            {hostRows + kMeansSample, hostRows + N * (8 + 4 + 4) + 3 * offsets + N * M,
             e.hostBytes + N * M});
    return e;
}

} // namespace faiss_ext
