// Host entry points of the IVF list scan stage and of its work decomposition.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// The candidate slots a scan runs, as a work list (device memory): only the slots that
/// hold vectors are launched, however many the longest lists would need.
struct IvfSlotList {
    /// Items in the list (zeroed by ivfChunkOffsets).
    int* count = nullptr;
    /// (query << 32) | slot, in no particular order; room for nq * chunksPerQuery.
    int64_t* items = nullptr;
    /// Per query: its slots times k, the candidates the merge reads.
    int* rowCandidates = nullptr;
    /// 0: a slot per chunk counted; > 0: slots are windows of this many of the counted
    /// units (the list-major path counts vectors).
    int64_t window = 0;
    int k = 0;
};

/// For each query q < nq: offsets[q * (nprobe + 1) + p] = number of chunks of chunkLen
/// vectors in the lists probed before probe p (list coarse[q * nprobe + p]; -1 is an
/// empty probe). offsets[q * (nprobe + 1) + nprobe] is the query's chunk count. Appends
/// each query's slots to `slots` (at least one a query, so that every query's results
/// are written; a slot past its chunks reads as empty).
void ivfChunkOffsets(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        const int64_t* listLen,
        int64_t chunkLen,
        int* offsets,
        const IvfSlotList& slots,
        cudaStream_t stream);

/// The per-query path's kernel (IvfScanArgs::queryKernel). kAuto (0, the default) lets
/// ivfScan choose by ivfQueryScanKernel's rule; kBlock and kWarp force one, for the tests
/// and benchmarks that compare them.
enum class IvfQueryScanKernel : int {
    kAuto = 0,
    kBlock, ///< a block per (query, chunk), block-wide selection in shared memory
    kWarp,  ///< a warp per (query, chunk), WarpSelect in registers (nextPow2(k) <= 32)
};

/// kAuto takes the warp kernel from this many probes in a scan (nq * nprobe, a lower
/// bound of the work items): below it a block's 8 warps on one chunk finish a short work
/// list sooner than one warp (H100, SIFT, k 10, `bench_ivf_paths --sift --query-kernels`:
/// warp / block 0.86-0.97 from 512 probes, 1.03-1.12 at 256 and fewer; benchs/NOTES.md,
/// thirty-sixth session).
constexpr int64_t kQueryWarpScanMinProbes = 512;
/// kAuto takes the warp kernel only for chunks of at most this many vectors (128 a lane):
/// the planner sizes chunks for blocks, and a warp alone on a chunk of a long list (up to
/// 32768 vectors at large batches) would hold up the end of the scan. Chunks of up to
/// 1024 vectors were measured (the warp kernel faster); the bound itself was not.
constexpr int64_t kQueryWarpScanMaxChunk = 4096;
/// kAuto takes the warp kernel only while the block's staged queries (a padded query a
/// warp) fit in the shared memory every kernel gets without opting in.
constexpr size_t kQueryWarpScanMaxSmem = 48 * 1024;

/// One list scan: every (query, candidate slot) pair of the work list selects the k best
/// of the slot's vectors (a chunk of a probed list; on the list-major path a window of
/// the query's distance row), a thread block per pair, or a warp per pair when distances
/// are precomputed and nextPow2(k) <= kMaxWarpSelectK (its selection in registers up to
/// kMaxWarpRegisterSelectK, in shared memory above) or on the per-query path when
/// ivfQueryScanKernel says so, over the work list's pairs only.
struct IvfScanArgs {
    const float* queries = nullptr; ///< nq x d, row-major
    int64_t nq = 0;
    int d = 0;
    const int64_t* coarse = nullptr; ///< nq x nprobe probed lists
    int nprobe = 0;
    const int* offsets = nullptr;           ///< from ivfChunkOffsets
    const float* const* listData = nullptr; ///< per list, IvfStore.h layout
    const int64_t* const* listIds = nullptr;
    const int64_t* listLen = nullptr;
    int64_t chunkLen = 0;       ///< a multiple of 32
    int64_t chunksPerQuery = 0; ///< candidate slots per query (>= every query's chunk count)
    /// The work list ivfChunkOffsets filled (its length and items).
    const int* slotCount = nullptr;
    const int64_t* slotItems = nullptr;
    /// Size the grid (IvfScanImpl.cuh, workersFor): the work list's expected length
    /// and the device's SMs.
    int64_t expectedItems = 0;
    int smCount = 0;
    int k = 0;
    bool innerProduct = false;
    /// List-major path: distances precomputed by ivfListMajorDistances are read instead
    /// of computed (the query's probe p starts at vectorOffsets[q * (nprobe + 1) + p] in
    /// its row), and candidate slot c of a query is the window [c chunkLen, (c + 1)
    /// chunkLen) of its row, whatever lists it spans (offsets unused); null for the
    /// per-query path.
    const float* distances = nullptr;
    int64_t ldDistances = 0;
    const int* vectorOffsets = nullptr;
    /// Filtered search (null: none): a device bitmap over list slots (kernels/IdFilter.h):
    /// position p of list l is bit listBitBase[l] + p; vectors whose bit is clear are
    /// never candidates. The per-query path tests it; on the list-major path the product
    /// wrote +inf for them.
    const uint32_t* allow = nullptr;
    const int64_t* listBitBase = nullptr; ///< nlist entries, multiples of 32
    /// nq x (chunksPerQuery * k): slot c of query q holds the k best keys of its chunk
    /// c, ascending (L2: squared distance; IP: minus the inner product), with the
    /// stored ids; missing results are +inf with id -1. Only the work list's slots are
    /// written (IvfSlotList::rowCandidates says how many a query has).
    float* candD = nullptr;
    int64_t* candI = nullptr;
    /// The per-query path's kernel (ignored on the list-major path).
    IvfQueryScanKernel queryKernel = IvfQueryScanKernel::kAuto;
};
void ivfScan(const IvfScanArgs& args, cudaStream_t stream);

/// The kernel the per-query path runs for these arguments: a.queryKernel if forced (kWarp
/// with nextPow2(k) > kMaxWarpRegisterSelectK throws), else kWarp when nextPow2(k) <=
/// kMaxWarpRegisterSelectK, nq * nprobe >= kQueryWarpScanMinProbes, chunkLen <=
/// kQueryWarpScanMaxChunk and ivfQueryWarpScanSmemBytes(d) <= kQueryWarpScanMaxSmem,
/// kBlock otherwise.
IvfQueryScanKernel ivfQueryScanKernel(const IvfScanArgs& a);

/// Shared memory one scan block needs.
size_t ivfScanSmemBytes(int d, int k);

/// Shared memory one block of the per-query warp kernel needs (its warps' queries).
size_t ivfQueryWarpScanSmemBytes(int d);

} // namespace kernels
} // namespace faiss_ext
