// Small searches replayed from CUDA graphs. A search of a few queries is bound by the
// host: it issues a dozen kernels, a cuBLAS call and their stream-ordered temporaries
// while the GPU waits on each. A search shape seen a second time is captured once
// (stream capture: kernels, cuBLAS, the temporaries as graph memory nodes) and then
// runs as one graph launch, its queries and results copied through buffers the graph
// owns: device buffers for device arrays, pinned host buffers (and their transfers in
// the graph) for host arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

/// Shapes an index holds as graphs at most; their temporaries together stay within
/// the temp budget (SearchGraphs drops the least recently used to make room).
constexpr size_t kSearchGraphsHeld = 16;
/// One shape's temporaries take at most this share of the budget: a few of the largest
/// fit beside each other. (It was 1/16, all 16 shapes at once: the list-major scan's
/// distance buffer over SIFT's skewed lists, 200 MB at batch 1024 nprobe 4, then never
/// ran from a graph, and its 20 launches cost ~0.1 ms of a 0.3 ms call; benchs/NOTES.md.)
constexpr size_t kSearchGraphBudgetShare = 4;

/// Whether a search whose temporaries take tempBytes may be held as a graph.
inline bool searchGraphFits(const GpuResources& res, size_t tempBytes) {
    return tempBytes <= res.tempMemoryBytes() / kSearchGraphBudgetShare;
}

class SearchGraphs {
   public:
    /// The device work of one search: reads nq x d queries at x, writes nq x k
    /// results; everything on the resources' stream, no host synchronisation.
    using Work = std::function<void(const float* x, float* distances, int64_t* labels)>;

    /// At most `capacity` shapes are remembered (captured or seen once); the least
    /// recently used one goes first.
    explicit SearchGraphs(size_t capacity = kSearchGraphsHeld);
    ~SearchGraphs();
    SearchGraphs(const SearchGraphs&) = delete;
    SearchGraphs& operator=(const SearchGraphs&) = delete;

    /// Runs work on res.stream(): directly the first time `key` is seen, from a graph
    /// captured the second time and replayed after. The key must name everything the
    /// work's launches depend on (shape, plan, device pointers, contents version). If
    /// the capture fails (work that synchronises, say), the key runs directly from
    /// then on.
    /// tempBytes: the device temporaries the work allocates (searchGraphFits), which
    /// the graph holds.
    void run(
            const GpuResources& res,
            const std::vector<int64_t>& key,
            size_t tempBytes,
            int64_t nq,
            int d,
            int k,
            const float* x,
            float* distances,
            int64_t* labels,
            const Work& work);

    /// As run, for queries x (nq x d) and results (nq x k) in pageable host memory: a
    /// held shape's graph also holds pinned copies of them and their transfers, so that
    /// a replay is a host copy in, one graph launch, one synchronisation and a host
    /// copy out. Returns false, having done nothing, where the shape is not held (its
    /// first sighting, a failed capture): the caller then searches as usual. Returns
    /// true once the results are in distances and labels.
    bool runHost(
            const GpuResources& res,
            const std::vector<int64_t>& key,
            size_t tempBytes,
            int64_t nq,
            int d,
            int k,
            const float* x,
            float* distances,
            int64_t* labels,
            const Work& work);

    /// Number of shapes held as graphs.
    size_t graphCount() const;
    /// Their temporaries' device bytes.
    size_t heldBytes() const;

    /// Forgets every shape (waits for the stream first: a graph may still run) and
    /// returns the graphs' memory to the device.
    void clear();

   private:
    struct Entry;
    /// The entry of key (the host flag is part of it: the two kinds of graph differ),
    /// inserted if new; `seen` says whether it was there.
    Entry& entry_(const std::vector<int64_t>& key, bool host, cudaStream_t stream, bool& seen);
    /// Drops the least recently used entry other than `keep` (heldOnly: of those holding
    /// a graph), waiting for the stream first where it holds one; false if none is left.
    bool dropOldest_(const Entry* keep, bool heldOnly, cudaStream_t stream);
    size_t heldBytes_() const; ///< heldBytes with mutex_ held
    void capture_(const GpuResources& res, Entry& e, int64_t nq, int d, int k, const Work& work);
    /// The entry of key as a graph ready to replay: inserted on its first sighting,
    /// captured on its second; null where it is not (first sighting, failed capture).
    /// Called with mutex_ held.
    Entry* held_(
            const GpuResources& res,
            const std::vector<int64_t>& key,
            size_t tempBytes,
            bool host,
            int64_t nq,
            int d,
            int k,
            const Work& work);
    void releaseGraphMemory_();

    size_t capacity_;
    uint64_t clock_ = 0;
    std::vector<std::unique_ptr<Entry>> entries_;
    cudaStream_t stream_ = nullptr; ///< the stream of the graphs held (clear waits on it)
    int device_ = 0;
    mutable std::mutex mutex_;
};

} // namespace faiss_ext
