// What GpuIndexShards and GpuIndexReplicas share: where their parts live, who owns the
// parts' GpuResources, and how a part is made.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <faiss/impl/ThreadedIndex.h>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

/// Where the parts (shards or replicas) of an index live.
struct GpuPartsConfig {
    /// The CUDA device of each part, one part per entry. A device may repeat: every
    /// part gets its own GpuResources (stream, cuBLAS handle, pinned staging), so
    /// several parts on one device run side by side.
    std::vector<int> devices;
    /// GpuResourcesConfig::tempMemoryBytes of every part's resources.
    size_t tempMemoryBytes = size_t(1) << 30;
    /// One host thread per part (faiss's ThreadedIndex `threaded`); false calls the
    /// parts one after the other from the caller's thread.
    bool threaded = true;
};

/// Makes the index of part `part` on its resources: an empty one (trained and filled
/// through the wrapper) or one already filled (a loaded shard). Every part must be of
/// one type, dimension and metric.
using GpuPartFactory = std::function<std::unique_ptr<GpuIndex>(GpuResources& resources, int part)>;

/// Owns the GpuResources of the parts, one per entry of GpuPartsConfig::devices, and
/// makes the calls the wrappers need beyond faiss's. A base of GpuIndexShards and
/// GpuIndexReplicas declared before faiss's wrapper, so the resources are made before
/// and destroyed after the parts the wrapper owns.
class GpuPartResources {
   public:
    /// Throws for an empty device list or a device that does not exist, before any
    /// resources are made.
    explicit GpuPartResources(const GpuPartsConfig& config);
    ~GpuPartResources();

    GpuPartResources(const GpuPartResources&) = delete;
    GpuPartResources& operator=(const GpuPartResources&) = delete;

    /// The resources of part `part` (throws outside [0, parts)).
    GpuResources& partResources(int part) const;

    const GpuPartsConfig& partsConfig() const {
        return config_;
    }

   protected:
    using Wrapper = faiss::ThreadedIndex<faiss::Index>;

    /// Makes one part per resources with `make`, hands each to `wrapper` (which must
    /// own its fields) and takes the wrapper's metric from the parts. Throws for a null
    /// part or parts of different types.
    void addParts_(Wrapper& wrapper, const GpuPartFactory& make) const;
    /// Part `part` of the wrapper (throws outside [0, count)).
    static GpuIndex& part_(const Wrapper& wrapper, int part);
    /// The checks of one GpuIndex's add / add_with_ids (n > 0, non-null, finite
    /// vectors, ids not -1, trained), made on the host before any part is called, so
    /// that a refused call leaves every part as it was. Host arrays only.
    void checkAdd_(
            const Wrapper& wrapper,
            int64_t n,
            const float* x,
            const int64_t* ids,
            const char* what) const;
    /// The checks of one GpuIndex's search, before any part is called. Host arrays only.
    void checkSearch_(
            const Wrapper& wrapper,
            int64_t n,
            const float* x,
            int64_t k,
            const float* distances,
            const int64_t* labels) const;
    /// train on every part, except that GpuIndexIVFFlat parts share one quantizer:
    /// part 0 is trained and its centroids given to the others. The parts must be empty.
    void trainParts_(Wrapper& wrapper, int64_t n, const float* x) const;

   private:
    /// Throws unless p is host memory.
    void checkHost_(const void* p, const char* what) const;

    GpuPartsConfig config_;
    std::vector<std::unique_ptr<GpuResources>> resources_;
};

/// Checks a parts configuration (the first check of GpuPartResources), against
/// `deviceCount` devices.
void checkPartsConfig(const GpuPartsConfig& config, int deviceCount);

} // namespace faiss_ext
