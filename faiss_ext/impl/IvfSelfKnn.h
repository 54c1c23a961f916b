// Each of n device vectors' approximate k nearest among themselves (the Bang build's
// first candidates), as a GEMM per IVF list: the vectors sorted by list once, then pages
// of queries whose probes are grouped by list, so that a list's queries of a page are
// one exact search (cuBLAS GEMM + k-selection) against its rows. The IVF-Flat search
// this replaces scanned each list for ~11K-25K queries with a kernel built for ~78 and
// ran at 5-7% of the FP32 rate (benchs/NOTES.md, eighteenth session).
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/Progress.h>
#include <kernels/OperandSplit.h>

namespace faiss_ext {

struct BangRowsView;

/// Device bytes each query of a page holds at most: 32 a probe (the probed list and the
/// query id, sorted double-buffered; before the sort the probes' lists and distances
/// take 12, after it the sorted query ids 8) and 4 for each of its running k best
/// distances (their ids are kept in place in the output).
size_t ivfSelfKnnBytesPerPageQuery(int k, int nprobe);

/// (query, probe) pairs a page gives each list at the least, on average: whatever
/// pageBytes says, a page holds kIvfSelfKnnPairsPerList x nlist / nprobe queries. Each
/// list's product and selection of a page is one launch each, and a launch of a few
/// hundred rows leaves most of the GPU idle: at 10M x 128 (3162 lists, 4 probes) pages
/// of 256 MiB (~880 pairs a list) took 9.6 s, pages of this floor (4 pages) ~6.0 s,
/// one page 4.9 s (H100, benchs/NOTES.md, thirtieth session). At 100M x 128 the floor
/// is a 4 GiB page.
constexpr int64_t kIvfSelfKnnPairsPerList = 4096;

/// Queries a page takes: as many as pageBytes holds, and at least the floor above; at
/// most n (and INT_MAX / nprobe pairs, CUB's limit of one sort).
int64_t ivfSelfKnnPageQueries(int64_t n, int k, int nprobe, int64_t nlist, size_t pageBytes);

/// Device bytes each query row of a list's search holds: its gathered vector, its
/// selection bound, its k results (distance and id) and its keys against a list of
/// listLength rows.
size_t ivfSelfKnnBytesPerChunkRow(int d, int k, int64_t listLength);

/// Rows one list's search takes at most (listLength: the longest list's): as many as
/// half of tempMemoryBytes holds. Throws if one row does not fit.
int64_t ivfSelfKnnChunkRows(int d, int k, int64_t listLength, size_t tempMemoryBytes);

/// An upper bound on the device memory ivfSelfKnn takes at its peak, its n x k int32 ids
/// included: the rows sorted by list (their norms and ids; bytes: the rows are stored
/// as bytes, with their float conversions), the centroids, the lists' starts, plus a
/// page (ivfSelfKnnPageQueries) and the temporaries (tempMemoryBytes), or during the
/// sort of the rows its four id arrays; its k-means pages by pageBytes.
size_t ivfSelfKnnPeakBytes(
        int64_t n,
        int d,
        bool bytes,
        int k,
        int64_t nlist,
        int nprobe,
        size_t pageBytes,
        size_t tempMemoryBytes);

/// Ids of approximately the k nearest of the n vectors `vectors` (device rows, floats or
/// bytes: the same ids) to each of them, itself included, in device memory: n x k int32
/// (n <= INT_MAX), best
/// first, -1 where the probed lists hold fewer than k. Lists: k-means (gpuKMeans,
/// GpuIndexIVFFlat's parameters) of nlist centroids on trainX (the same rows, host or
/// device memory), each vector in its nearest centroid's list; a vector's neighbours
/// come from its nprobe nearest lists, searched with `product`: kFloat32 (exact
/// distances) or kTF32 (tensor cores, 2-3x the rate: near neighbours may trade places).
/// In pages of ivfSelfKnnPageQueries; each page's (query, list) pairs are sorted by list
/// and each list's queries searched against its rows in chunks of ivfSelfKnnChunkRows
/// (a GEMM of their keys, then each row's k smallest), their results merged into the
/// queries' running best; each vector's lists are found in pages of pageBytes of float
/// rows. Deterministic.
/// A vector's list is among its probes (so its row holds it) unless its two nearest
/// centroids tie within the rounding of two GEMMs of different shapes and nprobe is 1.
/// Reports the k-means, the sorted lists and each page to `progress`.
DeviceBuffer<int32_t> ivfSelfKnn(
        const GpuResources& res,
        const BangRowsView& vectors,
        const float* trainX,
        int k,
        int64_t nlist,
        int nprobe,
        kernels::GemmProduct product,
        size_t pageBytes,
        const Progress& progress);

} // namespace faiss_ext
