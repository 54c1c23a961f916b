// faiss::IndexShards over faiss_ext indexes, one per part of a GpuPartsConfig, owning
// their GpuResources and the indexes.
#pragma once

#include <cstdint>

#include <faiss/IndexShards.h>

#include <faiss_ext/GpuIndexParts.h>

namespace faiss_ext {

/// A data set split over several GPU indexes (the shards), searched as one: each
/// search runs on every shard (one host thread per shard when threaded) and the shards'
/// top-k are merged by faiss::IndexShards. Owns the shards and their GpuResources.
///
/// Ids: shards that take ids (GpuIndexIVFFlat) keep the ids given to add_with_ids, or
/// ntotal + i from add (faiss's successive_ids false). The others (GpuIndexFlat,
/// GpuIndexBang) number their vectors from 0 and search shifts shard i's ids by the
/// sizes of the shards before it (successive_ids true), so as in faiss they are filled
/// by one add() into the empty index, which gives shard i the i-th contiguous slice.
///
/// Every call checks its arguments as one GpuIndex does before any shard is called, so
/// a refused call leaves every shard as it was; a failure inside one shard (device
/// memory exhausted) leaves the shards that succeeded changed. Host arrays only.
/// Per-call SearchParameters are refused by FAISS 1.7.3's IndexShards: set a knob on
/// each shard (shard(i), e.g. GpuIndexIVFFlat::nprobe). Not for concurrent calls from
/// several host threads.
class GpuIndexShards : private GpuPartResources, public faiss::IndexShards {
   public:
    /// One shard per device of `parts`, each made by `make` (gpu_multiple.h has the
    /// factories from a configuration, or give one that loads each shard's file).
    GpuIndexShards(const GpuPartsConfig& parts, const GpuPartFactory& make);
    ~GpuIndexShards() override;

    /// Shard i (in [0, count())).
    GpuIndex& shard(int i) const {
        return part_(*this, i);
    }
    using GpuPartResources::partResources;
    using GpuPartResources::partsConfig;

    void train(int64_t n, const float* x) override;
    void add(int64_t n, const float* x) override;
    void add_with_ids(int64_t n, const float* x, const int64_t* ids) override;
    void search(
            int64_t n,
            const float* x,
            int64_t k,
            float* distances,
            int64_t* labels,
            const faiss::SearchParameters* params = nullptr) const override;
    /// Empties every shard; the index stays trained.
    void reset() override;
};

} // namespace faiss_ext
