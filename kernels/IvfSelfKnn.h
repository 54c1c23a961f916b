// Host entry points of the per-list k-NN of a set against itself (impl/IvfSelfKnn.h;
// plain C++: no device code here): the (list, query) pairs grouped by list, and each
// list's results merged into its queries' running best.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// out[p] = first + p / repeat for p < n * repeat (device): the query of each of n
/// queries' `repeat` probes, query-major (repeat 1: the ids first .. first + n - 1).
void repeatedRowIds(int64_t first, int64_t n, int repeat, int64_t* out, cudaStream_t stream);

/// out[p] = int32(in[p]) for p < count (device): ids below 2^31, -1 staying -1.
void narrowIds(const int64_t* in, int64_t count, int32_t* out, cudaStream_t stream);

/// runD[p] = +inf and runI[p] = -1 for p < count (device): running best lists that hold
/// nothing yet.
void fillMissingRunning(float* runD, int32_t* runI, int64_t count, cudaStream_t stream);

/// lists[q * nprobe + j] += nlist for every j >= 1 of n queries' nprobe nearest lists
/// (device, nearest first): a query's nearest list l stays l, its others become nlist +
/// l, so that a sort by list puts every query's nearest list before any of its others.
void markLaterProbes(int64_t* lists, int64_t n, int nprobe, int64_t nlist, cudaStream_t stream);

/// bounds[r] = runD[(queryIds[r] - q0) * k + k - 1] for r < m: the k-th running key of
/// each of m queries (+inf while it has fewer than k).
void runningBounds(
        const float* runD,
        int k,
        const int64_t* queryIds,
        int64_t q0,
        int64_t m,
        float* bounds,
        cudaStream_t stream);

/// Where sortByList left the sorted arrays: in the first or the alternate buffers.
struct SortedByList {
    int64_t* lists = nullptr;
    int64_t* values = nullptr;
};

/// Scratch bytes sortByList needs for `count` pairs.
size_t sortByListTempBytes(int64_t count, int64_t nlist);

/// Sorts `count` (list, value) pairs by list (lists[i] in [0, nlist)), stably: CUB's
/// radix sort over the bits of nlist - 1, each array double-buffered with its *Alt.
SortedByList sortByList(
        int64_t* lists,
        int64_t* listsAlt,
        int64_t* values,
        int64_t* valuesAlt,
        int64_t count,
        int64_t nlist,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream);

/// starts[l] (l <= nlist) = the first i with sortedLists[i] >= l, over `count` sorted
/// lists: list l's pairs are [starts[l], starts[l + 1]).
void listStarts(
        const int64_t* sortedLists,
        int64_t count,
        int64_t nlist,
        int64_t* starts,
        cudaStream_t stream);

/// Merges the k results of m queries against one list (resD / resI, m x k, best first,
/// ids local to the list, -1 / +inf where missing) into each query's running best:
/// query queryIds[r] owns row queryIds[r] - q0 of runD / runI (k each, best first),
/// local id j is global id listIds[j] (below 2^31: runI holds int32). The queries must
/// be distinct (a query probes a list once). On equal distances the running entries
/// stay first. k <= 2048.
void mergeListResults(
        const float* resD,
        const int64_t* resI,
        int64_t m,
        int k,
        const int64_t* listIds,
        const int64_t* queryIds,
        int64_t q0,
        float* runD,
        int32_t* runI,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
