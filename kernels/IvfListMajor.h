// Host entry points of the list-major IVF scan: the (query, probe) pairs of a batch
// grouped by list on the device, then one product per (list tile, query group) that
// reads each probed list once for up to 16 of the queries that probe it, 32 with the
// tensor-core keys (distances, or L2 keys for IvfKeyRerank.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Device scratch of ivfGroupProbesByList for nlist lists and `pairs` (query, probe)
/// pairs: counts, starts, cursors, per-list work, an item counter and the grouped pairs.
size_t ivfGroupScratchBytes(int64_t nlist, int64_t pairs);

/// Most queries in a work item's group: the CUDA-core product's, and the tensor-core
/// keys' (IvfListMajorArgs::tensorKeys), whose mma steps take two tiles of 16 queries
/// against each vector read, so that a list probed by many queries is read half as often.
constexpr int kIvfGroupMax = 16;
constexpr int kIvfTensorKeysGroupMax = 32;

/// The batch's probes grouped by list, in scratch memory carved by ivfGroupProbesByList.
struct IvfProbeGroups {
    const int* listStart = nullptr; ///< nlist + 1: first grouped pair of each list
    const int* pairs = nullptr;     ///< q * nprobe + p, grouped by list
    const int* workStart = nullptr; ///< nlist + 1: first work item of each list
    int* nextItem = nullptr;        ///< the product's item counter, 0 after grouping
    int maxGroup = kIvfGroupMax;    ///< most queries in a work item's group
};

/// How ivfGroupProbesByList runs: kAuto picks one block for small batches over at most
/// 5119 lists (its counts in shared memory, one launch), else a counting sort over the
/// grid (five launches and a memset). Both give the same groups; the order of a list's
/// pairs is not fixed on either.
enum class IvfGroupPath {
    kAuto,
    kOneBlock,
    kKernels,
};

/// Groups the nq x nprobe probes of `coarse` (-1: none) by list; work items of a list
/// probed by c queries: ceil(c / g) groups x ceil(length / 256) tiles, with g the
/// smallest multiple of 4 up to maxGroup (kIvfGroupMax, or kIvfTensorKeysGroupMax for a
/// product with tensorKeys) that holds c (maxGroup above).
IvfProbeGroups ivfGroupProbesByList(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        int64_t nlist,
        const int64_t* listLen,
        int maxGroup,
        void* scratch,
        size_t scratchBytes,
        cudaStream_t stream,
        IvfGroupPath path = IvfGroupPath::kAuto);

/// Writes every probed vector's distance (L2: squared; inner product: minus the
/// product), computed with the same FP32 operations in the same order as the
/// per-query scan, to
///   distances[q * ldDistances + vectorOffsets[q * (nprobe + 1) + p] + v]
/// for vector v of the list of query q's probe p.
struct IvfListMajorArgs {
    const float* queries = nullptr; ///< nq x d
    int64_t nq = 0;
    int d = 0;
    int nprobe = 0;
    int64_t nlist = 0;
    const float* const* listData = nullptr;
    /// The lists' byte copy (IvfStore.h), read instead of listData where set (not null):
    /// the same values, a quarter of the bytes.
    const uint8_t* const* listBytes = nullptr;
    const int64_t* listLen = nullptr;
    IvfProbeGroups groups;
    const int* vectorOffsets = nullptr; ///< ivfChunkOffsets with chunkLen 1
    float* distances = nullptr;
    int64_t ldDistances = 0;
    bool innerProduct = false;
    /// Filtered search (null: none): vectors whose bit (listBitBase[l] + position, as in
    /// IvfScanArgs) is clear get +inf, never a candidate.
    const uint32_t* allow = nullptr;
    const int64_t* listBitBase = nullptr;
    /// L2 keys instead of distances (innerProduct false): |x|^2 - 2 q.x, one FMA a
    /// component and query, for ivfKeyRerank (IvfKeyRerank.h) to re-rank; filtered
    /// vectors get +inf. Each query's rowMaxNorms entry (zeroed by the caller) is raised
    /// to at least the largest |x|^2 the product summed for it.
    bool l2Keys = false;
    float* rowMaxNorms = nullptr;
    /// With l2Keys, on float lists (listBytes null) and compute capability 8.0 and up: the
    /// keys of groups of 8 or more queries on the tensor cores (3xTF32; the only product
    /// of groups above kIvfGroupMax, which groups.maxGroup allows only with it), within
    /// keyErrorBound(d, GemmProduct::kTF32x3).dotRel of 2 |q| |x| (ThresholdFilter.h)
    /// instead of the FP32 product's ivfKeyErrorRel(d) (IvfKeyBand.h).
    bool tensorKeys = false;
};
void ivfListMajorDistances(const IvfListMajorArgs& args, int smCount, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
