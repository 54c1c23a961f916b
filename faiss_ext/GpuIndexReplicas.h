// faiss::IndexReplicas over faiss_ext indexes, one per part of a GpuPartsConfig, owning
// their GpuResources and the indexes.
#pragma once

#include <cstdint>

#include <faiss/IndexReplicas.h>

#include <faiss_ext/GpuIndexParts.h>

namespace faiss_ext {

/// The same data on several GPU indexes (the replicas): train and add go to every
/// replica, a search's queries are split into one slice per replica (one host thread
/// per replica when threaded). Owns the replicas and their GpuResources.
///
/// GpuIndexIVFFlat replicas share one quantizer (train runs k-means once); add_with_ids
/// gives the ids to every replica (for those that take ids). Every call checks its
/// arguments as one GpuIndex does before any replica is called, so a refused call
/// leaves every replica as it was; a failure inside one replica (device memory
/// exhausted) leaves those that succeeded changed. Host arrays only. Per-call
/// SearchParameters are refused by FAISS 1.7.3's IndexReplicas: set a knob on each
/// replica (replica(i)). Not for concurrent calls from several host threads.
class GpuIndexReplicas : private GpuPartResources, public faiss::IndexReplicas {
   public:
    /// One replica per device of `parts`, each made by `make` (gpu_multiple.h).
    GpuIndexReplicas(const GpuPartsConfig& parts, const GpuPartFactory& make);
    ~GpuIndexReplicas() override;

    /// Replica i (in [0, count())).
    GpuIndex& replica(int i) const {
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
    /// Empties every replica; the index stays trained.
    void reset() override;
};

} // namespace faiss_ext
