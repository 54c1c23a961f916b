#include <faiss_ext/impl/IvfSearch.h>

#include <algorithm>
#include <functional>

#include <kernels/Distances.h>
#include <kernels/IvfMerge.h>
#include <kernels/IvfScan.h>
#include <kernels/Select.h>

namespace faiss_ext {

namespace {

constexpr size_t kCandBytes = sizeof(float) + sizeof(int64_t);
constexpr int64_t kMaxChunk = 32768;
constexpr int64_t kMaxGridRows = 65535;

/// Sum over the nprobe lists with the most chunks of their chunk counts.
int64_t maxChunksOfProbes(const std::vector<int64_t>& lengths, int nprobe, int64_t chunk) {
    std::vector<int64_t> chunks(lengths.size());
    for (size_t l = 0; l < lengths.size(); ++l) {
        chunks[l] = (lengths[l] + chunk - 1) / chunk;
    }
    const size_t top = std::min(chunks.size(), size_t(nprobe));
    std::nth_element(
            chunks.begin(), chunks.begin() + (top - 1), chunks.end(), std::greater<int64_t>());
    int64_t sum = 0;
    for (size_t i = 0; i < top; ++i) {
        sum += chunks[i];
    }
    return std::max<int64_t>(sum, 1);
}

} // namespace

size_t ivfScanSharedBytes(int d, int k) {
    return kernels::ivfScanSmemBytes(d, k);
}

IvfSearchPlan planIvfSearch(const IvfPlanInput& in) {
    FAISS_THROW_IF_NOT_FMT(
            in.nq > 0 && in.k >= 1 && in.k <= kernels::kMaxSelectK && in.nprobe >= 1 &&
                    in.listLengths != nullptr &&
                    size_t(in.nprobe) <= in.listLengths->size(),
            "bad IVF search shape nq=%lld k=%d nprobe=%d", (long long)in.nq, in.k, in.nprobe);
    const std::vector<int64_t>& lengths = *in.listLengths;
    const int64_t kp = nextPow2(in.k);
    int64_t maxLen = 0, total = 0, nonEmpty = 0;
    for (int64_t len : lengths) {
        maxLen = std::max(maxLen, len);
        total += len;
        nonEmpty += len > 0;
    }

    IvfSearchPlan p;
    if (in.chunkOverride > 0) {
        p.chunkLen = in.chunkOverride;
    } else {
        // Enough blocks to fill the device several times over, but chunks long enough
        // that their k candidates are few beside the vectors they summarise.
        const double avgLen = double(total) / double(std::max<int64_t>(nonEmpty, 1));
        const double work = double(in.nq) * in.nprobe * avgLen;
        const double target = 8.0 * std::max(in.smCount, 1);
        const int64_t minChunk = std::max<int64_t>(256, 4 * kp);
        int64_t c = int64_t(work / target);
        c = std::min(std::max(c, minChunk), std::max(kMaxChunk, minChunk));
        p.chunkLen = (c + 255) / 256 * 256;
    }
    auto perQuery = [&](int64_t chunks) {
        return size_t(chunks) * in.k * kCandBytes        // candidates
                + size_t(in.nprobe) * kCandBytes         // coarse results
                + size_t(in.nprobe + 1) * sizeof(int);   // chunk offsets
    };
    p.chunksPerQuery = maxChunksOfProbes(lengths, in.nprobe, p.chunkLen);
    // One query must fit: longer chunks (fewer candidates) until it does.
    while (perQuery(p.chunksPerQuery) > in.budgetBytes && in.chunkOverride == 0 &&
           p.chunkLen < maxLen) {
        p.chunkLen *= 2;
        p.chunksPerQuery = maxChunksOfProbes(lengths, in.nprobe, p.chunkLen);
    }
    p.candidatesPerQuery = p.chunksPerQuery * in.k;
    p.bytesPerQuery = perQuery(p.chunksPerQuery);
    FAISS_THROW_IF_NOT_FMT(
            p.bytesPerQuery <= in.budgetBytes,
            "temporary memory budget of %zu bytes is too small for nprobe=%d k=%d "
            "(one query needs %zu bytes with chunks of %lld vectors)",
            in.budgetBytes, in.nprobe, in.k, p.bytesPerQuery, (long long)p.chunkLen);
    FAISS_THROW_IF_NOT_FMT(
            p.candidatesPerQuery <= INT32_MAX, "%lld candidates per query is too many",
            (long long)p.candidatesPerQuery);
    p.queryTile = std::min<int64_t>(
            {in.nq, int64_t(in.budgetBytes / p.bytesPerQuery), kMaxGridRows});
    p.bytes = p.bytesPerQuery * size_t(p.queryTile);

    p.fastMergeSmemBytes = kernels::ivfMergeFastSmemBytes(p.candidatesPerQuery);
    const bool fits = p.fastMergeSmemBytes <= in.maxSmemPerBlock;
    switch (in.mergePath) {
        case IvfMergePath::kAuto:
            p.fastMerge = fits;
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
    auto offsets = res.alloc<int>(size_t(tile) * (nprobe + 1));
    for (int64_t q0 = 0; q0 < nq; q0 += tile) {
        const int64_t m = std::min(tile, nq - q0);
        const float* q = queries + q0 * d;
        // Kernels A + B: coarse distances (GEMM with centroid norms) and top nprobe.
        FlatSearchInput coarse = in.coarse;
        coarse.queries = q;
        coarse.nq = m;
        flatSearch(res, coarse, nprobe, coarseD.data(), coarseI.data());
        kernels::ivfChunkOffsets(
                coarseI.data(), m, nprobe, in.lists->deviceLengths(), plan.chunkLen,
                offsets.data(), stream);

        // Kernel C: the candidates exist only while this tile is merged (allocated
        // after the coarse search has released its temporaries).
        auto candD = res.alloc<float>(size_t(m) * ld);
        auto candI = res.alloc<int64_t>(size_t(m) * ld);
        kernels::IvfScanArgs scan;
        scan.queries = q;
        scan.nq = m;
        scan.d = d;
        scan.coarse = coarseI.data();
        scan.nprobe = nprobe;
        scan.offsets = offsets.data();
        scan.listData = in.lists->deviceData();
        scan.listIds = in.lists->deviceIds();
        scan.listLen = in.lists->deviceLengths();
        scan.chunkLen = plan.chunkLen;
        scan.chunksPerQuery = plan.chunksPerQuery;
        scan.k = k;
        scan.innerProduct = ip;
        scan.candD = candD.data();
        scan.candI = candI.data();
        kernels::ivfScan(scan, stream);

        // Kernel D.
        float* dOut = outD + q0 * k;
        int64_t* iOut = outI + q0 * k;
        if (plan.fastMerge) {
            kernels::ivfMergeFast(
                    candD.data(), candI.data(), m, ld, k, ip, dOut, iOut, stream);
        } else {
            kernels::SelectRowsArgs merge;
            merge.dist = candD.data();
            merge.ldDist = ld;
            merge.nrows = m;
            merge.ncols = ld;
            merge.inIds = candI.data();
            merge.ldIds = ld;
            merge.k = k;
            merge.outD = dOut;
            merge.outI = iOut;
            merge.ldOut = k;
            kernels::selectRowsMin(merge, stream);
            kernels::ivfFinish(dOut, iOut, m * int64_t(k), ip, stream);
        }
    }
}

} // namespace faiss_ext
