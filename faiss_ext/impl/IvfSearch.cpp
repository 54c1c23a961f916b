#include <faiss_ext/impl/IvfSearch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <kernels/Distances.h>
#include <kernels/IvfCoarseFused.h>
#include <kernels/IvfKeyBand.h>
#include <kernels/IvfKeyRerank.h>
#include <kernels/IvfListMajor.h>
#include <kernels/IvfMerge.h>
#include <kernels/IvfScan.h>
#include <kernels/Select.h>
#include <kernels/ThresholdFilter.h>

namespace faiss_ext {

namespace {

constexpr size_t kCandBytes = sizeof(float) + sizeof(int64_t);
constexpr int64_t kMaxChunk = 32768;
/// Queries a tile holds at most. It was the per-query scan grid's y limit; the scan now
/// runs a 1-D work list, and the cap stays because the planner's measured choices (the
/// list-major windows, the sharing rule) were made with tiles of at most this many.
constexpr int64_t kMaxTileQueries = 65535;
/// Auto picks the list-major scan from this many queries per non-empty list on average
/// (at d = 128; it falls as sqrt(128 / d) above): below it a list tile is shared by too
/// few queries to repay the distance buffer's write and read. Measured after the
/// product's loads were trimmed (H100, k 10, both paths forced, bench_ivf_paths,
/// benchs/results/ivf_paths_h100_2026-11-26c.md): per-query / list-major time on 1M x
/// 128 blobs (nlist 4096) 0.84-0.97 at sharing 0.2-0.5, 1.11-1.19 at 1, 1.46-1.58 at 2-2.4;
/// on 500K x 768 blobs (nlist 2048) 0.82 at 0.1, 1.34 at 0.2, 1.12-3.24 at 0.5. The rule
/// takes 0.75 (0.31 at d = 768). It was 1.5 before the loads were trimmed, when
/// compare_peers' 768-d set lost with list-major at 0.25-0.5.
constexpr double kListMajorMinSharing = 0.75;
/// IvfScanPath::kAuto's list-major scan writes L2 keys (one FP32 instruction a component
/// and query instead of two) from this dimension, batch and expected row of keys a query
/// (nprobe x the mean list length), where the product's savings repay the re-rank: it
/// reads each query's ~k + a few listed vectors scattered across the lists' interleaved
/// blocks, and at small batches its warp a query waits on the row's loads. Measured
/// (H200, k 10, the paths forced, bench_ivf_paths, benchs/NOTES.md): at d 128 keys lose
/// 13-21% (1M x 128 blobs); at d 768 (500K x 768 blobs and the clustered768 shape, nlist
/// 2048, rows of ~244 nprobe keys) exact / keys time is 0.63-0.70 at batch 10000 nprobe
/// 1, 1.00-1.08 at nprobe 4, 1.14-1.20 from nprobe 16; at batch 1024 0.79-0.88, 0.93-1.01,
/// 1.07-1.19; at batches 16 and 128 0.75-1.02 at every nprobe. With the keys' product on
/// the tensor cores in groups of up to 32 (clustered768 shape): 0.54 at batch 10000 nprobe
/// 1, 1.17 at nprobe 4 (976 keys a query: the rule's one loss), 1.36-1.65 from nprobe 16 at
/// batches 1024-10000, 0.94 at batch 1024 nprobe 4, 0.62-0.96 at batches 16 and 128.
constexpr int kListMajorKeysMinDim = 256;
constexpr int64_t kListMajorKeysMinQueries = 1024;
constexpr double kListMajorKeysMinRowKeys = 2048;
/// List-major candidate slots are windows of a query's distance row, a warp (or for
/// k > 256 a block) selecting over each. Every window costs a selection of k, k
/// candidates written and merged (one window a query needs no merge); only the windows
/// a row holds are launched (the scan's work list), but the merge's rows are sized by
/// the longest possible row. Above k = kMaxWarpRegisterSelectK that cost dominates:
/// windows are as long as the batch allows while it keeps kListMajorWindowsPerSm of
/// them an SM to spread the selections over, within [kListMajorMinWindow, kListMajorMaxWindow]
/// columns. Measured (H100, 1M x 128 clustered, nlist 4096, list-major forced, benchs/NOTES.md): at
/// k 100 one window a query against windows of 2048 is 0.32 -> 0.28 ms at batch 1024 nprobe 4
/// and 3.2 -> 1.9 ms at batch 10000 nprobe 16, while batch 128 (nprobe 64-256) is fastest with
/// 10-17 windows a query. Up to k = 32 the merge is cheap and windows stay at the minimum: one
/// window a query at k 10 left the longest rows to single warps (the SIFT and 768-d peers
/// at batch 10000 nprobe 16 ran 17-24% slower). The cap bounds one warp's serial work
/// when a single list holds much of the data.
constexpr int64_t kListMajorMinWindow = 2048;
constexpr int64_t kListMajorMaxWindow = 65536;
constexpr int64_t kListMajorWindowsPerSm = 12;

/// Columns of one list-major window for nq queries whose longest row is maxRowVectors.
int64_t listMajorWindow(int64_t nq, int k, int64_t maxRowVectors, int smCount) {
    if (nextPow2(k) <= kernels::kMaxWarpRegisterSelectK) {
        return kListMajorMinWindow;
    }
    const int64_t wanted = kListMajorWindowsPerSm * std::max(smCount, 1);
    const int64_t windowsPerQuery = std::max<int64_t>(1, wanted / nq);
    const int64_t window = (maxRowVectors + windowsPerQuery - 1) / windowsPerQuery;
    return std::clamp((window + 31) / 32 * 32, kListMajorMinWindow, kListMajorMaxWindow);
}

/// Sum over the nprobe lists with the most chunks of their chunk counts. Chunk counts
/// grow with length, so those are the first nprobe of the descending lengths.
int64_t maxChunksOfProbes(const std::vector<int64_t>& lengthsDesc, int nprobe, int64_t chunk) {
    int64_t sum = 0;
    for (int i = 0; i < nprobe; ++i) {
        sum += (lengthsDesc[size_t(i)] + chunk - 1) / chunk;
    }
    return std::max<int64_t>(sum, 1);
}

/// GpuFlatPrecision::kAuto's coarse search takes 3xTF32 from this many queries: it
/// halves the batch's coarse GEMM (H100, 10000 x 4096 x 128: cuBLAS FP32 0.32 ms, 3xTF32
/// ~0.15 ms with the operand splits; benchs/NOTES.md), while below ~1000 queries the
/// GEMM is a few microseconds and the splits' launches would cost as much.
constexpr int64_t kCoarseTF32x3MinQueries = 1024;

} // namespace

GpuFlatPrecision ivfCoarsePrecision(
        const GpuResources& res,
        const FlatSearchInput& coarse,
        int nprobe) {
    if (coarse.precision != GpuFlatPrecision::kAuto) {
        return coarse.precision;
    }
    // Only where the tiles path runs, or the rerank path would (which an explicit
    // precision turns back into the tiles path; the threshold path's kAuto is already on
    // tensor cores, with a re-rank), and the splits of a query tile (as planFlatSearch sets it
    // aside) and of the centroids take at most a quarter of the budget.
    const size_t splitRow = kernels::splitRowBytes(kernels::GemmProduct::kTF32x3, coarse.d);
    const size_t splitBytes = size_t(std::min(coarse.nq, kMaxFlatQueryTile) + coarse.nb) * splitRow;
    const FlatSearchPath path = flatSearchPathFor(res, coarse, nprobe);
    const bool tf32x3 = res.computeCapabilityMajor() >= 8 && coarse.nq >= kCoarseTF32x3MinQueries &&
            splitBytes <= res.tempMemoryBytes() / 4 &&
            (path == FlatSearchPath::kTiles || path == FlatSearchPath::kRerank);
    return tf32x3 ? GpuFlatPrecision::kTF32x3 : GpuFlatPrecision::kFloat32;
}

size_t ivfScanSharedBytes(int d, int k) {
    return kernels::ivfScanSmemBytes(d, k);
}

IvfSearchPlan planIvfSearch(const IvfPlanInput& in) {
    FAISS_THROW_IF_NOT_FMT(
            in.nq > 0 && in.k >= 1 && in.k <= kernels::kMaxSelectK && in.nprobe >= 1 &&
                    in.listLengthsDescending != nullptr &&
                    size_t(in.nprobe) <= in.listLengthsDescending->size(),
            "bad IVF search shape nq=%lld k=%d nprobe=%d", (long long)in.nq, in.k, in.nprobe);
    const std::vector<int64_t>& lengths = *in.listLengthsDescending;
    const int64_t kp = nextPow2(in.k);
    const int64_t maxLen = lengths.front();
    // Lists after the first empty one are empty.
    const int64_t nonEmpty =
            std::lower_bound(lengths.begin(), lengths.end(), int64_t(0), std::greater<int64_t>()) -
            lengths.begin();
    const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t(0));
    const double avgLen = double(total) / double(std::max<int64_t>(nonEmpty, 1));

    IvfSearchPlan p;
    if (in.chunkOverride > 0) {
        p.chunkLen = in.chunkOverride;
    } else {
        // Enough blocks to fill the device several times over, but chunks long enough
        // that their k candidates are few beside the vectors they summarise.
        const double work = double(in.nq) * in.nprobe * avgLen;
        const double target = 8.0 * std::max(in.smCount, 1);
        const int64_t minChunk = std::max<int64_t>(256, 4 * kp);
        int64_t c = int64_t(work / target);
        c = std::min(std::max(c, minChunk), std::max(kMaxChunk, minChunk));
        p.chunkLen = (c + 255) / 256 * 256;
    }
    // Temporaries of one query (and the list-major scan's per-batch part) for a chunk
    // count and a scan path.
    const int64_t maxRowVectors = maxChunksOfProbes(lengths, in.nprobe, 1);
    // Candidate slots per query: chunks of the probed lists, or on the list-major path
    // windows of the query's distance row.
    auto slotsFor = [&](int64_t chunk, bool listMajor) {
        return listMajor ? std::max<int64_t>(1, (maxRowVectors + chunk - 1) / chunk)
                         : maxChunksOfProbes(lengths, in.nprobe, chunk);
    };
    const int64_t listMajorChunk = in.chunkOverride > 0
            ? in.chunkOverride
            : listMajorWindow(std::min(in.nq, kMaxTileQueries), in.k, maxRowVectors, in.smCount);
    // The list-major product writes L2 keys where the re-rank can serve the search (L2, k
    // at most a warp's lanes, the block's queries in shared memory), when forced, or under
    // kAuto where they pay (kListMajorKeysMin*).
    const bool keysPay = in.d >= kListMajorKeysMinDim && in.nq >= kListMajorKeysMinQueries &&
            in.nprobe * avgLen >= kListMajorKeysMinRowKeys;
    const bool keys = in.metric == faiss::METRIC_L2 && in.k <= kernels::kKeyRerankMaxK &&
            kernels::ivfKeyRerankSmemBytes(in.d) <= in.maxSmemPerBlock &&
            (in.scanPath == IvfScanPath::kListMajorKeys ||
             (in.scanPath == IvfScanPath::kAuto && keysPay));
    // The fused coarse search's candidates, wherever it may run (the tile's precision
    // and the device decide later, ivfCoarsePathFor).
    const size_t coarseFused = in.coarsePath != IvfCoarsePath::kGemm &&
                    nextPow2(in.nprobe) <= kernels::kCoarseFusedMaxK
            ? ivfCoarseFusedBytesPerQuery(int64_t(lengths.size()), in.nprobe)
            : 0;
    auto perQuery = [&](int64_t chunks, bool listMajor) {
        size_t bytes = size_t(chunks) * in.k * kCandBytes // candidates
                + size_t(chunks) * sizeof(int64_t)        // work list
                + sizeof(int)                             // its candidate count
                + size_t(in.nprobe) * kCandBytes          // coarse results
                + coarseFused                             // fused coarse candidates
                + size_t(in.nprobe + 1) * sizeof(int);    // chunk offsets
        if (listMajor) {
            bytes += size_t(maxRowVectors) * sizeof(float) // distance buffer
                    + size_t(in.nprobe + 1) * sizeof(int)  // vector offsets
                    + size_t(in.nprobe) * sizeof(int)      // grouped probes
                    + (keys ? sizeof(float) : 0);          // the row's largest |x|^2
        }
        return bytes;
    };
    // The grouping's per-list arrays and CUB's scratch, whatever the tile.
    const size_t fixedListMajor = kernels::ivfGroupScratchBytes(int64_t(lengths.size()), 0);
    auto budgetFor = [&](bool listMajor) {
        const size_t fixed = listMajor ? fixedListMajor : 0;
        return in.budgetBytes > fixed ? in.budgetBytes - fixed : 0;
    };
    switch (in.scanPath) {
        case IvfScanPath::kAuto: {
            // List-major pays when a tile of queries shares lists: on average at least
            // kListMajorMinSharing queries per non-empty list within one tile (fewer above
            // d = 128, as measured: the per-query scan's re-reads of the lists grow with d
            // while list-major's fixed costs, the grouping and the selection, do not).
            const size_t bytes = perQuery(slotsFor(listMajorChunk, true), true);
            const int64_t tile =
                    std::min<int64_t>({in.nq, int64_t(budgetFor(true) / bytes), kMaxTileQueries});
            const double minSharing = kListMajorMinSharing * std::sqrt(128.0 / std::max(in.d, 128));
            // A single query shares nothing, however many lists it probes.
            p.listMajor = tile >= 2 &&
                    double(tile) * in.nprobe / double(std::max<int64_t>(nonEmpty, 1)) >= minSharing;
            break;
        }
        case IvfScanPath::kPerQuery:
            p.listMajor = false;
            break;
        case IvfScanPath::kListMajor:
        case IvfScanPath::kListMajorKeys:
            p.listMajor = true;
            break;
    }
    p.listMajorKeys = p.listMajor && keys;
    if (p.listMajor) {
        p.maxRowVectors = maxRowVectors;
        p.chunkLen = listMajorChunk;
    }
    const size_t budget = budgetFor(p.listMajor);
    p.chunksPerQuery = slotsFor(p.chunkLen, p.listMajor);
    // One query must fit: longer chunks (fewer candidates) until it does.
    const int64_t longest = p.listMajor ? maxRowVectors : maxLen;
    while (perQuery(p.chunksPerQuery, p.listMajor) > budget && in.chunkOverride == 0 &&
           p.chunkLen < longest) {
        p.chunkLen *= 2;
        p.chunksPerQuery = slotsFor(p.chunkLen, p.listMajor);
    }
    p.candidatesPerQuery = p.chunksPerQuery * in.k;
    // Each probed list's last chunk may be partial; the list-major windows cut the row.
    p.expectedSlotsPerQuery = p.listMajor ? in.nprobe * avgLen / double(p.chunkLen) + 1.0
                                          : in.nprobe * (avgLen / double(p.chunkLen) + 1.0);
    p.bytesPerQuery = perQuery(p.chunksPerQuery, p.listMajor);
    FAISS_THROW_IF_NOT_FMT(
            p.bytesPerQuery <= budget,
            "temporary memory budget of %zu bytes is too small for nprobe=%d k=%d "
            "(one query needs %zu bytes with chunks of %lld vectors%s)",
            in.budgetBytes, in.nprobe, in.k, p.bytesPerQuery, (long long)p.chunkLen,
            p.listMajor ? " on the list-major scan" : "");
    FAISS_THROW_IF_NOT_FMT(
            p.candidatesPerQuery <= INT32_MAX, "%lld candidates per query is too many",
            (long long)p.candidatesPerQuery);
    FAISS_THROW_IF_NOT_FMT(
            p.maxRowVectors <= INT32_MAX,
            "%lld probed vectors per query is too many for the list-major scan",
            (long long)p.maxRowVectors);
    // The work list's items are counted in int.
    p.queryTile = std::min<int64_t>(
            {in.nq, int64_t(budget / p.bytesPerQuery), kMaxTileQueries,
             INT32_MAX / p.chunksPerQuery});
    p.bytes = p.bytesPerQuery * size_t(p.queryTile) + (p.listMajor ? fixedListMajor : 0);

    if (in.queryKernel == kernels::IvfQueryScanKernel::kWarp) {
        FAISS_THROW_IF_NOT_FMT(
                nextPow2(in.k) <= kernels::kMaxWarpRegisterSelectK,
                "the per-query warp scan selects at most k=%d; k=%d",
                kernels::kMaxWarpRegisterSelectK, in.k);
        FAISS_THROW_IF_NOT_FMT(
                kernels::ivfQueryWarpScanSmemBytes(in.d) <= in.maxSmemPerBlock,
                "the per-query warp scan needs %zu bytes of shared memory at d=%d; the "
                "device allows %zu per block",
                kernels::ivfQueryWarpScanSmemBytes(in.d), in.d, in.maxSmemPerBlock);
    }
    p.queryKernel = in.queryKernel;

    if (in.coarsePath == IvfCoarsePath::kFused) {
        FAISS_THROW_IF_NOT_FMT(
                nextPow2(in.nprobe) <= kernels::kCoarseFusedMaxK,
                "the fused coarse search keeps at most %d lists a query; nprobe=%d",
                kernels::kCoarseFusedMaxK, in.nprobe);
        FAISS_THROW_IF_NOT_FMT(
                in.d <= kernels::kCoarseFusedMaxDim &&
                        kernels::coarseFusedSmemBytes(in.d) <= in.maxSmemPerBlock,
                "the fused coarse search takes d <= %d within the device's shared memory "
                "(%zu bytes at d=%d; the device allows %zu per block)",
                kernels::kCoarseFusedMaxDim, kernels::coarseFusedSmemBytes(in.d), in.d,
                in.maxSmemPerBlock);
    }
    p.coarsePath = in.coarsePath;

    p.fastMergeSmemBytes = kernels::ivfMergeFastSmemBytes(p.candidatesPerQuery);
    const bool fits = p.fastMergeSmemBytes <= in.maxSmemPerBlock;
    switch (in.mergePath) {
        case IvfMergePath::kAuto:
            p.fastMerge = nextPow2(in.k) > kernels::kMaxWarpRowSelectK && fits &&
                    p.candidatesPerQuery <= kFastMergeMaxCandidates;
            break;
        case IvfMergePath::kFast:
            FAISS_THROW_IF_NOT_FMT(
                    fits,
                    "the fast merge path needs %zu bytes of shared memory for %lld "
                    "candidates per query (nprobe=%d k=%d); the device allows %zu per block",
                    p.fastMergeSmemBytes, (long long)p.candidatesPerQuery, in.nprobe, in.k,
                    in.maxSmemPerBlock);
            p.fastMerge = true;
            break;
        case IvfMergePath::kHeap:
            p.fastMerge = false;
            break;
    }
    return p;
}

namespace {

/// A tile's list-major rows: each query's vector offsets, its distances (or keys) and
/// for the keys the largest |x|^2 of its row. They live until the keys are re-ranked,
/// after the merge.
struct ListMajorRows {
    DeviceBuffer<int> vecOffsets;
    DeviceBuffer<float> distances;
    DeviceBuffer<float> maxNorms;
    /// The keys' relative bound of their dot products (IvfKeyRerankArgs::dotRel).
    float keyDotRel = 0.f;
};

/// The list-major scan of one tile: groups the probes by list, fills the distance
/// buffer, then runs the per-chunk selection over it.
ListMajorRows listMajorDistances(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* queries,
        int64_t m,
        const IvfSearchPlan& plan,
        const int64_t* coarse,
        kernels::IvfSlotList slots,
        kernels::IvfScanArgs scan) {
    cudaStream_t stream = res.stream();
    const int nprobe = in.nprobe;
    ListMajorRows rows{
            res.alloc<int>(size_t(m) * (nprobe + 1)),
            res.alloc<float>(size_t(m) * plan.maxRowVectors),
            res.alloc<float>(plan.listMajorKeys ? size_t(m) : 0)};
    // Vectors are counted; the slots are windows of the row.
    slots.window = plan.chunkLen;
    kernels::ivfChunkOffsets(
            coarse, m, nprobe, in.lists->deviceLengths(), 1, rows.vecOffsets.data(), slots, stream);
    if (plan.listMajorKeys) {
        FAISS_EXT_CUDA_CHECK(
                cudaMemsetAsync(rows.maxNorms.data(), 0, size_t(m) * sizeof(float), stream));
    }
    const size_t scratchBytes = kernels::ivfGroupScratchBytes(in.lists->nlist(), m * nprobe);
    auto scratch = res.alloc<char>(scratchBytes);

    kernels::IvfListMajorArgs lm;
    lm.queries = queries;
    lm.nq = m;
    lm.d = in.coarse.d;
    lm.nprobe = nprobe;
    lm.nlist = in.lists->nlist();
    lm.listData = in.lists->deviceData();
    lm.listBytes = in.lists->deviceByteCopy();
    lm.listLen = in.lists->deviceLengths();
    lm.tensorKeys =
            plan.listMajorKeys && lm.listBytes == nullptr && res.computeCapabilityMajor() >= 8;
    lm.groups = kernels::ivfGroupProbesByList(
            coarse, m, nprobe, lm.nlist, lm.listLen,
            lm.tensorKeys ? kernels::kIvfTensorKeysGroupMax : kernels::kIvfGroupMax, scratch.data(),
            scratchBytes, stream);
    lm.vectorOffsets = rows.vecOffsets.data();
    lm.distances = rows.distances.data();
    lm.ldDistances = plan.maxRowVectors;
    lm.innerProduct = in.metric == faiss::METRIC_INNER_PRODUCT;
    lm.allow = in.allow;
    lm.listBitBase = in.lists->deviceSlotBase();
    lm.l2Keys = plan.listMajorKeys;
    lm.rowMaxNorms = rows.maxNorms.data();
    rows.keyDotRel = lm.tensorKeys
            ? kernels::keyErrorBound(lm.d, kernels::GemmProduct::kTF32x3).dotRel
            : float(kernels::ivfKeyErrorRel(lm.d));
    kernels::ivfListMajorDistances(lm, res.multiProcessorCount(), stream);

    scan.distances = rows.distances.data();
    scan.ldDistances = plan.maxRowVectors;
    scan.vectorOffsets = rows.vecOffsets.data();
    kernels::ivfScan(scan, stream);
    return rows;
}

/// The keys' k smallest of each query (outD, outI as the merge left them) replaced by its
/// k nearest by the per-query scan's FP32 distance.
void rerankKeys(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* queries,
        int64_t m,
        int k,
        const IvfSearchPlan& plan,
        const int64_t* coarse,
        const ListMajorRows& rows,
        float* outD,
        int64_t* outI) {
    kernels::IvfKeyRerankArgs r;
    r.queries = queries;
    r.nq = m;
    r.d = in.coarse.d;
    r.nprobe = in.nprobe;
    r.coarse = coarse;
    r.vectorOffsets = rows.vecOffsets.data();
    r.keys = rows.distances.data();
    r.ldKeys = plan.maxRowVectors;
    r.rowMaxNorms = rows.maxNorms.data();
    r.dotRel = rows.keyDotRel;
    r.listData = in.lists->deviceData();
    r.listIds = in.lists->deviceIds();
    r.k = k;
    r.outD = outD;
    r.outI = outI;
    kernels::ivfKeyRerank(r, res.stream());
}

} // namespace

void ivfSearch(
        const GpuResources& res,
        const IvfSearchInput& in,
        const float* queries,
        int64_t nq,
        int k,
        const IvfSearchPlan& plan,
        float* outD,
        int64_t* outI) {
    cudaStream_t stream = res.stream();
    const bool ip = in.metric == faiss::METRIC_INNER_PRODUCT;
    const int d = in.coarse.d;
    const int nprobe = in.nprobe;
    const int64_t tile = plan.queryTile;
    const int64_t ld = plan.candidatesPerQuery;

    auto coarseD = res.alloc<float>(size_t(tile) * nprobe);
    auto coarseI = res.alloc<int64_t>(size_t(tile) * nprobe);
    // Chunk offsets: the per-query scan's slots (the list-major ones are row windows).
    auto offsets = res.alloc<int>(plan.listMajor ? 0 : size_t(tile) * (nprobe + 1));
    // The work list of the slots that hold vectors, and each query's candidate count.
    auto slotCount = res.alloc<int>(1);
    auto slotItems = res.alloc<int64_t>(size_t(tile) * plan.chunksPerQuery);
    auto rowCandidates = res.alloc<int>(size_t(tile));
    kernels::IvfSlotList slots;
    slots.count = slotCount.data();
    slots.items = slotItems.data();
    slots.rowCandidates = rowCandidates.data();
    slots.k = k;
    for (int64_t q0 = 0; q0 < nq; q0 += tile) {
        const int64_t m = std::min(tile, nq - q0);
        const float* q = queries + q0 * d;
        // Coarse search: each query's nprobe nearest centroids (GEMM tiles or fused).
        FlatSearchInput coarse = in.coarse;
        coarse.queries = q;
        coarse.nq = m;
        coarse.precision = ivfCoarsePrecision(res, coarse, nprobe);
        ivfCoarseSearch(
                res, coarse, nprobe, plan.coarsePath, in.coarseFragments, coarseD.data(),
                coarseI.data());
        if (!plan.listMajor) {
            kernels::ivfChunkOffsets(
                    coarseI.data(), m, nprobe, in.lists->deviceLengths(), plan.chunkLen,
                    offsets.data(), slots, stream);
        }

        // List scan: the candidates exist only while this tile is merged (allocated
        // after the coarse search has released its temporaries). With one candidate slot
        // a query (nprobe 1 over short lists, say) the slot's k, sorted best first, are
        // the merge's answer: the scan writes them in place and no merge runs.
        float* dOut = outD + q0 * k;
        int64_t* iOut = outI + q0 * k;
        const bool oneSlot = plan.chunksPerQuery == 1;
        auto candD = res.alloc<float>(oneSlot ? 0 : size_t(m) * ld);
        auto candI = res.alloc<int64_t>(oneSlot ? 0 : size_t(m) * ld);
        kernels::IvfScanArgs scan;
        scan.queries = q;
        scan.nq = m;
        scan.d = d;
        scan.coarse = coarseI.data();
        scan.nprobe = nprobe;
        scan.offsets = plan.listMajor ? nullptr : offsets.data();
        scan.listData = in.lists->deviceData();
        scan.listIds = in.lists->deviceIds();
        scan.listLen = in.lists->deviceLengths();
        scan.chunkLen = plan.chunkLen;
        scan.chunksPerQuery = plan.chunksPerQuery;
        scan.slotCount = slots.count;
        scan.slotItems = slots.items;
        scan.expectedItems = int64_t(double(m) * plan.expectedSlotsPerQuery);
        scan.smCount = res.multiProcessorCount();
        scan.k = k;
        scan.innerProduct = ip;
        scan.allow = in.allow;
        scan.listBitBase = in.lists->deviceSlotBase();
        scan.candD = oneSlot ? dOut : candD.data();
        scan.candI = oneSlot ? iOut : candI.data();
        scan.queryKernel = plan.queryKernel;
        ListMajorRows rows;
        if (plan.listMajor) {
            rows = listMajorDistances(res, in, q, m, plan, coarseI.data(), slots, scan);
        } else {
            kernels::ivfScan(scan, stream);
        }

        // Merge.
        if (oneSlot) {
            kernels::ivfFinish(dOut, iOut, m * int64_t(k), ip, stream);
        } else if (plan.fastMerge) {
            kernels::ivfMergeFast(
                    candD.data(), candI.data(), m, ld, slots.rowCandidates, k, ip, dOut, iOut,
                    stream);
        } else {
            kernels::SelectRowsArgs merge;
            merge.dist = candD.data();
            merge.ldDist = ld;
            merge.nrows = m;
            merge.ncols = ld;
            merge.rowCols = slots.rowCandidates;
            merge.inIds = candI.data();
            merge.ldIds = ld;
            merge.k = k;
            merge.outD = dOut;
            merge.outI = iOut;
            merge.ldOut = k;
            kernels::selectRowsMin(merge, stream);
            kernels::ivfFinish(dOut, iOut, m * int64_t(k), ip, stream);
        }
        if (plan.listMajorKeys) {
            rerankKeys(res, in, q, m, k, plan, coarseI.data(), rows, dOut, iOut);
        }
    }
}

} // namespace faiss_ext
