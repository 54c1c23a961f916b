// Base of the faiss_ext GPU indexes: argument checks, device scope, paging of host
// arrays through bounded device memory, and the one device-search entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <faiss/Index.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/utils/MemorySpace.h>

namespace faiss {
struct IDSelector;
struct RangeSearchResult;
} // namespace faiss

namespace faiss_ext {

class IdFilterCache;
class SearchGraphs;

/// A faiss::Index whose data lives on one GPU. train, add, add_with_ids and search
/// take host or device memory, as FAISS's GPU indexes do: each array is located with
/// cudaPointerGetAttributes; device arrays (of the index's device, or managed memory)
/// are read and written in place, host arrays go through device pages. Device inputs
/// are read on resources().stream(): the work that wrote them must be complete (or
/// ordered before that stream). searchDevice takes device memory only and does not wait.
///
/// `verbose` (faiss::Index's) prints the phases of train and add (the Bang graph
/// build) with the fraction done and the elapsed time.
class GpuIndex : public faiss::Index {
   public:
    GpuIndex(GpuResources& resources, int d, faiss::MetricType metric, GpuIndexConfig config);
    ~GpuIndex() override;

    void train(int64_t n, const float* x) override;
    void add(int64_t n, const float* x) override;
    void add_with_ids(int64_t n, const float* x, const int64_t* ids) override;
    /// Each of x, distances and labels in host or device memory: host arrays are
    /// copied through device pages of at most config().pageBytes, each page searched by
    /// searchDevice (whose rule for non-finite queries applies); device arrays are read
    /// and written in place (all three on the device: one searchDevice call). Returns
    /// once the results are written.
    void search(
            int64_t n,
            const float* x,
            int64_t k,
            float* distances,
            int64_t* labels,
            const faiss::SearchParameters* params = nullptr) const override;

    /// As faiss: every stored vector within `radius` of each query (L2: squared distance
    /// < radius; inner product: > radius), with params->sel filtering as in search.
    /// Host arrays. Two passes over device memory bounded by the temporary budget: one
    /// counts each query's results, the other writes them. Results of a query are in
    /// no particular order. An index that cannot (GpuIndexBang) throws.
    void range_search(
            int64_t n,
            const float* x,
            float radius,
            faiss::RangeSearchResult* result,
            const faiss::SearchParameters* params = nullptr) const override;

    /// As faiss: removes the stored vectors whose ids sel selects and returns how many.
    /// GpuIndexFlat renumbers the rest (ids stay 0 .. ntotal - 1, as faiss::IndexFlat),
    /// GpuIndexIVFFlat keeps their ids, GpuIndexBang marks tombstones (see its class).
    size_t remove_ids(const faiss::IDSelector& sel) override;

    /// The device-search entry: n queries x (n x d), results distances and labels (n x
    /// k each) all in device memory of resources().device(). Refuses n < 0, k outside
    /// [1, kMaxSearchK] (an index may allow less) and an untrained index. params->sel
    /// (any faiss::IDSelector) filters the results: only vectors whose ids it selects
    /// are returned, k of them whenever k exist (IVF: in the probed lists); each index
    /// takes its knobs from its own SearchParameters subclass (or its defaults when
    /// params is null or a plain faiss::SearchParameters), checked and clamped once per
    /// call. A query with a NaN or infinite component gets only missing results (ids
    /// -1, distances +inf for L2, -inf for inner product); the other queries are
    /// unaffected. Runs on resources().stream()
    /// without host synchronisation; n = 0 does nothing. Virtual so that a layer over an index (a
    /// wrapper that routes or shards searches) can take the calls of search() too.
    virtual void searchDevice(
            int64_t n,
            const float* x,
            int64_t k,
            float* distances,
            int64_t* labels,
            const faiss::SearchParameters* params = nullptr) const;

    GpuResources& resources() const {
        return res_;
    }
    const GpuIndexConfig& config() const {
        return config_;
    }
    /// Device memory the index holds (stored vectors and structures, not temporaries).
    virtual size_t deviceMemoryBytes() const = 0;

    /// Whether add_with_ids takes the caller's ids (GpuIndexIVFFlat); the others number
    /// their vectors 0 .. ntotal - 1 themselves.
    bool acceptsIds() const {
        return supportsAddWithIds_();
    }

    /// Small searches without an ID selector run from a CUDA graph once their shape has
    /// been seen twice: one launch instead of the kernels, temporaries and copies of
    /// such a search, which are much of its time. Where host arrays come in and go
    /// out, the graph holds the copies too (through pinned buffers of its own): the
    /// call is then a host copy in, one launch, one synchronisation and a host copy
    /// out. Which searches: GpuIndexIVFFlat's of at most 1024 queries, GpuIndexFlat's
    /// of one to a few queries against a large base (its radix path); GpuIndexBang's
    /// none. At most 16 shapes are held, each one's temporaries at most a quarter of
    /// the resources' temp budget (a larger shape runs kernel by kernel) and all of
    /// theirs together at most the budget (the least recently used go first); a change
    /// of the contents drops them. false: every search issues its kernels one by one. A
    /// runtime setting (not saved with the index).
    bool useSearchGraphs = true;

    /// Number of search shapes held as CUDA graphs now (useSearchGraphs).
    size_t searchGraphCount() const;
    /// Device bytes the held graphs' temporaries take (at most the temp budget).
    size_t searchGraphBytes() const;

   protected:
    /// n > 0 finite host vectors (train copies device vectors to the host first).
    /// Default: nothing to learn.
    virtual void trainImpl_(int64_t n, const float* x);
    /// n > 0 finite vectors in host or device memory (copies use cudaMemcpyDefault;
    /// searches of them go through search()); host ids, null for sequential ids. Must
    /// leave the index unchanged if it throws.
    virtual void addImpl_(int64_t n, const float* x, const int64_t* ids) = 0;
    /// Whether add_with_ids is meaningful (faiss::IndexFlat refuses it too).
    virtual bool supportsAddWithIds_() const {
        return false;
    }
    /// n > 0 device queries, k in [1, kMaxSearchK], trained, device set: resolves the index's knobs
    /// from params and writes n x k results to device memory.
    virtual void searchImpl_(
            int64_t n,
            const float* xDevice,
            int k,
            float* distancesDevice,
            int64_t* labelsDevice,
            const faiss::SearchParameters* params) const = 0;
    /// n > 0 host queries, finite radius, device set: fills result (see range_search).
    /// Default: refuses.
    virtual void rangeSearchImpl_(
            int64_t n,
            const float* x,
            float radius,
            faiss::RangeSearchResult* result,
            const faiss::SearchParameters* params) const;
    /// Device set: removes what sel selects, returns the count; must leave the index
    /// unchanged if it throws. Default: refuses.
    virtual size_t removeIdsImpl_(const faiss::IDSelector& sel);
    /// A search that may be held as a CUDA graph (useSearchGraphs): everything the
    /// launches of searchImpl_(n, ..., k, ..., params) depend on (shape, resolved knobs,
    /// device pointers, contentsVersion()), and the temporary device bytes its graph
    /// holds. An empty key: it may not (a selector, a size, a path that waits on the
    /// device).
    struct SearchGraphShape {
        std::vector<int64_t> key;
        size_t tempBytes = 0;
    };
    /// Default: an empty key.
    virtual SearchGraphShape searchGraphShape_(
            int64_t n,
            int k,
            const faiss::SearchParameters* params) const;

    /// Where p lives (throws for memory of another device; `what` names it).
    MemorySpace memorySpace(const void* p, const char* what) const;
    /// Throws if p points to device (or managed) memory.
    void checkHostPointer(const void* p, const char* what) const;

    /// The selector bitmaps of this index's filtered searches (impl/IdFilter.h).
    IdFilterCache& filterCache() const {
        return *filterCache_;
    }
    /// Every change of the stored vectors, their ids or the quantizer calls this
    /// (forgets the cached selector bitmap, advances contentsVersion()).
    void contentsChanged();
    /// Advances at every contentsChanged(): what a cached search plan must match.
    uint64_t contentsVersion() const {
        return contentsVersion_;
    }

    GpuResources& res_;
    GpuIndexConfig config_;

   private:
    std::unique_ptr<IdFilterCache> filterCache_;
    std::unique_ptr<SearchGraphs> graphs_;
    uint64_t contentsVersion_ = 0;
    /// searchImpl_, then the rule for non-finite queries: a search's device work, on
    /// res_.stream() (what a search graph holds).
    void searchKernels_(
            int64_t n,
            const float* x,
            int k,
            float* distances,
            int64_t* labels,
            const faiss::SearchParameters* params) const;
    /// checkFinite of n vectors, on the device for device memory.
    void checkVectorsFinite_(int64_t n, const float* x, bool onDevice, const char* what) const;
};

} // namespace faiss_ext
