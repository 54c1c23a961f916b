// Range search on the device (GpuIndex::range_search): exact over a flat base, or over
// the probed lists of an IVF index, each in two passes (count, then fill) whose
// temporaries stay within the resources' temporary budget.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/IvfSearch.h>

namespace faiss {
struct RangeSearchResult;
}

namespace faiss_ext {

/// Query and base tile of the flat range search: the distance tile and a worst-case
/// fill (every entry a result) fit the budget with the tile's queries and counts.
struct FlatRangeTiling {
    int64_t queryTile = 0;
    int64_t baseTile = 0;
};
FlatRangeTiling planFlatRange(int64_t nq, int64_t nb, int d, size_t budgetBytes);

/// Every base row within radius of each of the nq host queries (in.queries and in.nq
/// are ignored; in.allow filters), into result (result->nq == nq, lims allocated, as a
/// new faiss::RangeSearchResult). Ids are base row numbers, per query ascending.
void flatRangeSearch(
        const GpuResources& res,
        const FlatSearchInput& in,
        const float* hostQueries,
        int64_t nq,
        float radius,
        faiss::RangeSearchResult* result);

/// Every vector within radius of each host query in its nprobe probed lists (as
/// faiss::IndexIVF::range_search), in probe order then list order.
void ivfRangeSearch(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* hostQueries,
        int64_t nq,
        float radius,
        faiss::RangeSearchResult* result);

} // namespace faiss_ext
