#include <faiss_ext/impl/IvfSelfKnn.h>

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangRows.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/KMeans.h>
#include <faiss_ext/utils/MemorySpace.h>
#include <kernels/Distances.h>
#include <kernels/GatherRows.h>
#include <kernels/IvfSelfKnn.h>
#include <kernels/Select.h>

namespace faiss_ext {

namespace {

/// An exact FP32 search on the tiles path (L2), for each vector's list and each query's
/// probes: no path or product chosen by the search's size.
FlatSearchInput exactL2(
        const float* queries,
        int64_t nq,
        const float* base,
        const float* norms,
        int64_t nb,
        int d) {
    FlatSearchInput in;
    in.queries = queries;
    in.nq = nq;
    in.base = base;
    in.baseNorms = norms;
    in.nb = nb;
    in.d = d;
    in.metric = faiss::METRIC_L2;
    in.precision = GpuFlatPrecision::kFloat32;
    in.path = FlatSearchPath::kTiles;
    return in;
}

/// Sorts the (lists[i], values[i]) pairs by list, stably, leaving values in list order,
/// and returns where each list's pairs start (host, nlist + 1; startsDev: nlist + 1
/// device scratch). The lists (in [0, nlist)) are consumed.
std::vector<int64_t> groupByList(
        const GpuResources& res,
        DeviceBuffer<int64_t> lists,
        DeviceBuffer<int64_t>& values,
        int64_t nlist,
        int64_t* startsDev) {
    cudaStream_t stream = res.stream();
    const int64_t count = int64_t(lists.size());
    auto listsAlt = res.alloc<int64_t>(size_t(count));
    auto valuesAlt = res.alloc<int64_t>(size_t(count));
    auto temp = res.alloc<char>(kernels::sortByListTempBytes(count, nlist));
    const kernels::SortedByList sorted = kernels::sortByList(
            lists.data(), listsAlt.data(), values.data(), valuesAlt.data(), count, nlist,
            temp.data(), temp.size(), stream);
    kernels::listStarts(sorted.lists, count, nlist, startsDev, stream);
    if (sorted.values != values.data()) {
        std::swap(values, valuesAlt);
    }
    return copyToHostVector(startsDev, size_t(nlist) + 1, stream);
}

/// nlist k-means centroids of the n rows trainX (host or device memory), on the device.
/// k-means runs on the host (faiss::Clustering, its assignments on the device), as
/// GpuIndexIVFFlat::train: device rows are copied there first.
FlatStorage trainCentroids(
        const GpuResources& res,
        const float* trainX,
        int64_t n,
        int d,
        int64_t nlist,
        size_t pageBytes,
        const Progress& progress) {
    std::vector<float> host;
    if (memorySpaceOf(trainX, res.device(), "ivfSelfKnn trainX") == MemorySpace::kDevice) {
        host = copyToHostVector(trainX, size_t(n) * d, res.stream());
        trainX = host.data();
    }
    FlatStorage centroids(res, d);
    centroids.append(
            nlist,
            gpuKMeans(
                    res, d, nlist, n, trainX, ivfKMeansParameters(faiss::METRIC_L2),
                    faiss::METRIC_L2, pageBytes, progress)
                    .data());
    return centroids;
}

/// The nprobe nearest lists of each of rows i0 .. i0 + m - 1, nearest first (m x nprobe,
/// device), searched in pages of pageBytes of float rows (rows stored as bytes are
/// converted a page at a time; float rows are searched in the same pages, so that both
/// storages give the same lists).
DeviceBuffer<int64_t> nearestLists(
        const GpuResources& res,
        const BangRowsView& rows,
        int64_t i0,
        int64_t m,
        const FlatStorage& centroids,
        int nprobe,
        size_t pageBytes) {
    const int d = rows.dim();
    const int64_t page =
            std::max<int64_t>(1, std::min<int64_t>(m, int64_t(pageBytes / (size_t(d) * 4))));
    auto lists = res.alloc<int64_t>(size_t(m) * nprobe);
    auto unused = res.alloc<float>(size_t(page) * nprobe);
    auto converted = res.alloc<float>(rows.isBytes() ? size_t(page) * d : 0);
    for (int64_t p0 = 0; p0 < m; p0 += page) {
        const int64_t pm = std::min(page, m - p0);
        const float* queries = converted.data();
        if (rows.isBytes()) {
            rows.toDeviceFloats(i0 + p0, pm, converted.data());
        } else {
            queries = rows.floats() + size_t(i0 + p0) * d;
        }
        flatSearch(
                res,
                exactL2(queries, pm, centroids.vectors(), centroids.norms(), centroids.size(), d),
                nprobe, unused.data(), lists.data() + size_t(p0) * nprobe);
    }
    return lists;
}

/// The n vectors in the order of their nearest centroid's list: rows (floats, or bytes
/// as stored), squared norms and original ids, where each list starts (host, nlist + 1)
/// and the longest list's length.
struct SortedLists {
    DeviceBuffer<float> rows;
    DeviceBuffer<uint8_t> byteRows;
    DeviceBuffer<float> norms;
    DeviceBuffer<int64_t> ids;
    std::vector<int64_t> starts;
    int64_t longest = 1;
};

SortedLists sortByNearestCentroid(
        const GpuResources& res,
        const BangRowsView& rows,
        const FlatStorage& centroids,
        size_t pageBytes,
        int64_t* startsDev) {
    cudaStream_t stream = res.stream();
    const int64_t n = rows.size();
    const int d = rows.dim();
    const int64_t nlist = centroids.size();
    SortedLists s;
    s.ids = res.alloc<int64_t>(size_t(n));
    kernels::repeatedRowIds(0, n, 1, s.ids.data(), stream);
    s.starts = groupByList(
            res, nearestLists(res, rows, 0, n, centroids, 1, pageBytes), s.ids, nlist, startsDev);
    for (int64_t l = 0; l < nlist; ++l) {
        s.longest = std::max(s.longest, s.starts[size_t(l) + 1] - s.starts[size_t(l)]);
    }
    if (rows.isBytes()) {
        s.byteRows = res.alloc<uint8_t>(size_t(n) * d);
        kernels::gatherRows(rows.bytes(), s.ids.data(), n, d, s.byteRows.data(), stream);
    } else {
        s.rows = res.alloc<float>(size_t(n) * d);
        kernels::gatherRows(rows.floats(), s.ids.data(), n, d, s.rows.data(), stream);
    }
    s.norms = res.alloc<float>(size_t(n));
    kernels::gatherRows(rows.norms(), s.ids.data(), n, 1, s.norms.data(), stream);
    return s;
}

/// One page's queries q0 .. q0 + m - 1, once for each of their nprobe nearest lists:
/// first each query in its nearest list, in list order, then each in its other lists,
/// in list order (stably: by id within a list). starts (host, 2 nlist + 1): where the
/// pairs of "list" l start, l < nlist the nearest lists' pairs of list l, l >= nlist the
/// other pairs of list l - nlist. Searching in that order, a query's later lists are
/// searched with its nearest list's k-th as a bound, which leaves few candidates.
struct PagePairs {
    DeviceBuffer<int64_t> queries;
    std::vector<int64_t> starts;
};

PagePairs probePairs(
        const GpuResources& res,
        const BangRowsView& rows,
        int64_t q0,
        int64_t m,
        const FlatStorage& centroids,
        int nprobe,
        size_t pageBytes,
        int64_t* startsDev) {
    DeviceBuffer<int64_t> lists = nearestLists(res, rows, q0, m, centroids, nprobe, pageBytes);
    kernels::markLaterProbes(lists.data(), m, nprobe, centroids.size(), res.stream());
    PagePairs p;
    p.queries = res.alloc<int64_t>(size_t(m) * nprobe);
    kernels::repeatedRowIds(q0, m, nprobe, p.queries.data(), res.stream());
    p.starts = groupByList(res, std::move(lists), p.queries, 2 * centroids.size(), startsDev);
    return p;
}

/// Searches each list for the page's queries that probe it, a chunk of at most
/// ivfSelfKnnChunkRows at a time, and merges the results into the running best (runD,
/// runI: the page's m rows of k): the queries' nearest lists first, then their others
/// with each query's k-th running key as the selection's bound.
void searchPageLists(
        const GpuResources& res,
        const BangRowsView& vectors,
        int k,
        const SortedLists& sorted,
        const PagePairs& pairs,
        int64_t q0,
        kernels::GemmProduct product,
        float* runD,
        int32_t* runI) {
    cudaStream_t stream = res.stream();
    const int d = vectors.dim();
    const int64_t nlist = int64_t(sorted.starts.size()) - 1;
    FAISS_ASSERT(int64_t(pairs.starts.size()) == 2 * nlist + 1);
    int64_t most = 0;
    for (int64_t l = 0; l < 2 * nlist; ++l) {
        most = std::max(most, pairs.starts[size_t(l) + 1] - pairs.starts[size_t(l)]);
    }
    const int64_t rows =
            std::min(ivfSelfKnnChunkRows(d, k, sorted.longest, res.tempMemoryBytes()), most);
    auto chunkQ = res.alloc<float>(size_t(rows) * d);
    auto chunkD = res.alloc<float>(size_t(rows) * k);
    auto chunkI = res.alloc<int64_t>(size_t(rows) * k);
    auto bounds = res.alloc<float>(size_t(rows));
    auto keys = res.alloc<float>(size_t(rows) * sorted.longest);
    // Lists stored as bytes are multiplied as floats, a list at a time.
    const bool bytes = vectors.isBytes();
    auto listFloats = res.alloc<float>(bytes ? size_t(sorted.longest) * d : 0);
    for (int64_t pl = 0; pl < 2 * nlist; ++pl) {
        const bool nearest = pl < nlist;
        const int64_t l = nearest ? pl : pl - nlist;
        const int64_t start = sorted.starts[size_t(l)];
        const int64_t len = sorted.starts[size_t(l) + 1] - start;
        const int64_t end = pairs.starts[size_t(pl) + 1];
        if (len == 0) {
            continue; // an empty list (k-means left a centroid without vectors)
        }
        const bool shortRows = len <= kernels::kShortSelectMaxCols;
        // Only keys below a query's running k-th can enter its best k (on a tie the
        // running entry stays first): the short path's row bound.
        const bool bounded = !nearest && shortRows;
        const float* listRows = bytes ? listFloats.data() : sorted.rows.data() + size_t(start) * d;
        if (bytes && pairs.starts[size_t(pl)] < end) {
            kernels::bytesToFloats(
                    sorted.byteRows.data() + size_t(start) * d, size_t(len) * d, listFloats.data(),
                    stream);
        }
        for (int64_t c0 = pairs.starts[size_t(pl)]; c0 < end; c0 += rows) {
            const int64_t mc = std::min(rows, end - c0);
            const int64_t* queries = pairs.queries.data() + c0;
            if (bytes) {
                kernels::gatherRows(vectors.bytes(), queries, mc, d, chunkQ.data(), stream);
            } else {
                kernels::gatherRows(vectors.floats(), queries, mc, d, chunkQ.data(), stream);
            }
            if (bounded) {
                kernels::runningBounds(runD, k, queries, q0, mc, bounds.data(), stream);
            }
            // The keys |b|^2 - 2 q.b of the chunk's queries against the list (|q|^2 is the
            // same for all of a query's lists, so the merge compares keys), then each
            // row's k smallest: a block radix-selects a whole row of at most
            // kShortSelectMaxCols (measured at 10M x 128: 18.8 s for the stage against
            // 20.0 s with the streaming block selection; benchs/NOTES.md).
            flatProductTile(
                    res, faiss::METRIC_L2, chunkQ.data(), mc, listRows, len, d, product,
                    keys.data());
            kernels::SelectRowsArgs sel;
            sel.dist = keys.data();
            sel.ldDist = len;
            sel.nrows = mc;
            sel.ncols = len;
            sel.colBias = sorted.norms.data() + start;
            sel.rowBound = bounded ? bounds.data() : nullptr;
            sel.k = k;
            sel.outD = chunkD.data();
            sel.outI = chunkI.data();
            sel.ldOut = k;
            sel.path = shortRows ? kernels::SelectPath::kShort : kernels::SelectPath::kAuto;
            kernels::selectRowsMin(sel, stream);
            kernels::mergeListResults(
                    chunkD.data(), chunkI.data(), mc, k, sorted.ids.data() + start, queries, q0,
                    runD, runI, stream);
        }
    }
}

} // namespace

size_t ivfSelfKnnBytesPerPageQuery(int k, int nprobe) {
    return size_t(nprobe) * 4 * sizeof(int64_t) + size_t(k) * sizeof(float);
}

int64_t ivfSelfKnnPageQueries(int64_t n, int k, int nprobe, int64_t nlist, size_t pageBytes) {
    FAISS_THROW_IF_NOT_FMT(
            n >= 1 && k >= 1 && nprobe >= 1 && nlist >= 1,
            "ivfSelfKnnPageQueries: bad shape n=%lld k=%d nprobe=%d nlist=%lld", (long long)n, k,
            nprobe, (long long)nlist);
    const int64_t fit = int64_t(pageBytes / ivfSelfKnnBytesPerPageQuery(k, nprobe));
    const int64_t floor = (kIvfSelfKnnPairsPerList * nlist + nprobe - 1) / nprobe;
    // CUB sorts at most INT_MAX pairs at once.
    return std::min({n, std::max(fit, floor), int64_t(INT_MAX / nprobe)});
}

size_t ivfSelfKnnBytesPerChunkRow(int d, int k, int64_t listLength) {
    return size_t(d + 1) * sizeof(float) + size_t(k) * (sizeof(float) + sizeof(int64_t)) +
            size_t(listLength) * sizeof(float);
}

int64_t ivfSelfKnnChunkRows(int d, int k, int64_t listLength, size_t tempMemoryBytes) {
    const int64_t fit = int64_t(tempMemoryBytes / 2 / ivfSelfKnnBytesPerChunkRow(d, k, listLength));
    FAISS_THROW_IF_NOT_FMT(
            fit >= 1,
            "temporary memory budget of %zu bytes is too small for one query's list search at "
            "d=%d, k=%d",
            tempMemoryBytes, d, k);
    return fit;
}

size_t ivfSelfKnnPeakBytes(
        int64_t n,
        int d,
        bool bytes,
        int k,
        int64_t nlist,
        int nprobe,
        size_t pageBytes,
        size_t tempMemoryBytes) {
    const size_t N = size_t(n);
    nprobe = int(std::min<int64_t>(nprobe, nlist));
    const size_t page = size_t(ivfSelfKnnPageQueries(n, k, nprobe, nlist, pageBytes)) *
            ivfSelfKnnBytesPerPageQuery(k, nprobe);
    const size_t lists = size_t(nlist) * (size_t(d) + 1) * sizeof(float) +
            (2 * size_t(nlist) + 1) * sizeof(int64_t);
    // The sort of the rows by list: the lists and the ids, double-buffered.
    const size_t sorting = lists + N * 4 * sizeof(int64_t) + tempMemoryBytes;
    // The pages, beside the ids found and the sorted rows, norms and ids; byte rows
    // convert a page of the nearest lists' queries (pageBytes) and a list (counted as
    // half the temporaries: no more than the chunk's keys while a chunk holds d rows).
    const size_t rowBytes = bytes ? size_t(d) : size_t(d) * sizeof(float);
    const size_t sortedRows = N * (rowBytes + sizeof(float) + sizeof(int64_t));
    const size_t converted =
            bytes ? std::min(N * size_t(d) * 4, pageBytes) + tempMemoryBytes / 2 : 0;
    const size_t pages = lists + N * size_t(k) * sizeof(int32_t) + sortedRows + page + converted +
            tempMemoryBytes;
    const size_t kMeans = lists + pageBytes + tempMemoryBytes;
    return std::max({sorting, pages, kMeans});
}

DeviceBuffer<int32_t> ivfSelfKnn(
        const GpuResources& res,
        const BangRowsView& vectors,
        const float* trainX,
        int k,
        int64_t nlist,
        int nprobe,
        kernels::GemmProduct product,
        size_t pageBytes,
        const Progress& progress) {
    const int64_t n = vectors.size();
    const int d = vectors.dim();
    FAISS_THROW_IF_NOT_FMT(
            n >= 1 && n <= INT_MAX && nlist >= 1 && nlist <= n && k >= 1 && nprobe >= 1,
            "ivfSelfKnn: bad shape n=%lld nlist=%lld k=%d nprobe=%d", (long long)n,
            (long long)nlist, k, nprobe);
    FAISS_THROW_IF_NOT_FMT(
            product == kernels::GemmProduct::kFloat32 || product == kernels::GemmProduct::kTF32,
            "ivfSelfKnn multiplies FP32 rows: kFloat32 or kTF32, not GemmProduct %d", int(product));
    cudaStream_t stream = res.stream();
    nprobe = int(std::min<int64_t>(nprobe, nlist));
    const int64_t pageQueries = ivfSelfKnnPageQueries(n, k, nprobe, nlist, pageBytes);

    const FlatStorage centroids =
            trainCentroids(res, trainX, n, d, nlist, pageBytes, progress.part(0, 0.4));
    auto startsDev = res.alloc<int64_t>(2 * size_t(nlist) + 1); // nlist + 1 for the rows
    const SortedLists sorted =
            sortByNearestCentroid(res, vectors, centroids, pageBytes, startsDev.data());
    progress.reportAfter(stream, "vectors sorted into their lists", 0.45);

    auto ids = res.alloc<int32_t>(size_t(n) * k);
    const int64_t pages = (n + pageQueries - 1) / pageQueries;
    const Progress pageProgress = progress.part(0.45, 1);
    for (int64_t q0 = 0; q0 < n; q0 += pageQueries) {
        const int64_t m = std::min(pageQueries, n - q0);
        const PagePairs pairs =
                probePairs(res, vectors, q0, m, centroids, nprobe, pageBytes, startsDev.data());
        auto runD = res.alloc<float>(size_t(m) * k);
        int32_t* runI = ids.data() + size_t(q0) * k;
        kernels::fillMissingRunning(runD.data(), runI, m * k, stream);
        searchPageLists(res, vectors, k, sorted, pairs, q0, product, runD.data(), runI);
        pageProgress.step("lists searched, page", q0 / pageQueries + 1, pages);
    }
    return ids;
}

} // namespace faiss_ext
