// GpuIndexIVFFlat's list-scan paths forced side by side on one trained index: device ms
// of the per-query scan, the list-major scan and the list-major scan on L2 keys (with the
// exact re-rank) over batch x nprobe, beside the sharing that IvfScanPath::kAuto reads
// (mean queries per non-empty list) and the sharing the list tiles see (mean, over the
// probes, of how many queries probe the same list), and kAuto's choice. It is the data
// for the cut-offs (kListMajorMinSharing, kListMajorKeysMin* in impl/IvfSearch.cpp): on
// uneven lists (real SIFT) the two sharings differ. A second
// table forces the two merge paths (IvfMergePath) at small batches, k 10 and 100: the
// data for kAuto's merge choice. --query-kernels instead forces the per-query scan's two
// kernels (block, warp; kernels/IvfScan.h) over batch x nprobe at k 10: the data for
// kQueryWarpScanMinProbes and kQueryWarpScanMaxChunk. --coarse forces the two coarse
// paths (GEMM, fused; impl/IvfCoarseSearch.h) at batch 1024 to 10000, nprobe 1 and 4:
// the whole search, and the coarse search alone over the index's centroids. --profile
// BATCH NPROBE: three kAuto searches of that shape (k 10) between cudaProfilerStart and
// cudaProfilerStop, for scripts/ncu-kernels.sh, then that shape's device ms and host call
// ms (host arrays in and out), and the call's two copies timed alone; --scan PATH forces
// its scan path (per-query, list-major, list-major-keys).
// Usage: bench_ivf_paths [--sift DIR | --blobs N D [--clusters C] [--spread S]]
//   [--merge-only | --query-kernels | --coarse | --profile BATCH NPROBE [--scan PATH]] [nlist]
//   --sift DIR: base.bvecs (or .fvecs) and query.bvecs (or .fvecs) of DIR
//   (benchs/datasets/README.md); --blobs N D: N x D blobs (C 2000 blobs, spread S 0.15;
//   compare_peers' clustered768 is 500000 768 with 1000 and 0.1); default: bench_ivf's
//   1M x 128 blobs. nlist: 4096.
#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfCoarseSearch.h>
#include <faiss_ext/impl/IvfSearch.h>
#include <faiss_ext/impl/ResourcesAccess.h>

#include "BenchUtil.h"
#include "Synthetic.h"
#include "VecsIO.h"

using namespace faiss_ext;

namespace {

struct Data {
    std::string name;
    int64_t nb = 0, nq = 0;
    int d = 0;
    std::vector<float> xb, xq;
};

bool exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

/// DIR/stem.bvecs as floats, else DIR/stem.fvecs.
datasets::Matrix<float> readVectors(const std::string& dir, const std::string& stem) {
    const std::string bvecs = dir + "/" + stem + ".bvecs";
    if (!exists(bvecs)) {
        return datasets::readFvecs(dir + "/" + stem + ".fvecs");
    }
    datasets::Matrix<uint8_t> b = datasets::readBvecs(bvecs);
    datasets::Matrix<float> f;
    f.n = b.n;
    f.d = b.d;
    f.data.assign(b.data.begin(), b.data.end());
    return f;
}

Data load(const char* siftDir, int64_t blobsN, int blobsD, int clusters, float spread) {
    Data data;
    if (siftDir != nullptr) {
        datasets::Matrix<float> base = readVectors(siftDir, "base");
        datasets::Matrix<float> query = readVectors(siftDir, "query");
        data.name = std::string("SIFT (") + siftDir + ")";
        data.nb = base.n;
        data.nq = query.n;
        data.d = base.d;
        data.xb = std::move(base.data);
        data.xq = std::move(query.data);
        return data;
    }
    datasets::ClusteredSpec spec{blobsN, blobsD, clusters, spread, 7};
    char what[96];
    std::snprintf(what, sizeof(what), " blobs (%d blobs, spread %g)", clusters, double(spread));
    data.name = std::to_string(blobsN) + " x " + std::to_string(blobsD) + what;
    data.nb = spec.n;
    data.d = spec.d;
    data.xb = datasets::clustered(spec, 0);
    spec.n = 10000;
    data.nq = spec.n;
    data.xq = datasets::clustered(spec, 1);
    return data;
}

/// Mean queries per non-empty list (what kAuto reads) and mean, over the probes, of the
/// probes of the probed list (what a list tile sees), for the first `batch` queries.
void sharing(
        const std::vector<int64_t>& probes,
        int64_t nprobeAll,
        int64_t batch,
        int64_t nprobe,
        const std::vector<int64_t>& listLengths,
        double& autoSharing,
        double& tileSharing) {
    std::vector<int64_t> count(listLengths.size(), 0);
    for (int64_t q = 0; q < batch; ++q) {
        for (int64_t p = 0; p < nprobe; ++p) {
            const int64_t l = probes[size_t(q * nprobeAll + p)];
            if (l >= 0) {
                ++count[size_t(l)];
            }
        }
    }
    const auto nonEmpty = std::count_if(
            listLengths.begin(), listLengths.end(), [](int64_t len) { return len > 0; });
    double sumSq = 0, sum = 0;
    for (size_t l = 0; l < count.size(); ++l) {
        if (listLengths[l] > 0) {
            sum += double(count[l]);
            sumSq += double(count[l]) * double(count[l]);
        }
    }
    autoSharing = double(batch) * double(nprobe) / double(std::max<int64_t>(nonEmpty, 1));
    tileSharing = sum > 0 ? sumSq / sum : 0;
}

} // namespace

/// Median device ms of `reps` searches (after a warm-up) of `batch` queries at nprobe,
/// each from the next window of the nq device queries.
double timeSearches(
        GpuResources& res,
        const GpuIndexIVFFlat& index,
        const float* qDev,
        int64_t nq,
        int d,
        int64_t batch,
        int k,
        int64_t nprobe,
        int reps,
        float* dD,
        int64_t* dI) {
    faiss::SearchParametersIVF params;
    params.nprobe = size_t(nprobe);
    int rep = 0;
    return bench::median(bench::timeDevice(res, 1, reps, [&] {
        const int64_t q0 = (rep++ * batch) % std::max<int64_t>(nq - batch + 1, 1);
        index.searchDevice(batch, qDev + q0 * d, k, dD, dI, &params);
    }));
}

/// Device ms of both merge paths forced (per-query scan, so only the merge differs),
/// batch 1..128, k 10 and 100; "-" where the fast path's shared memory does not fit.
void mergeTable(
        GpuResources& res,
        const faiss::IndexIVFFlat& cpu,
        const Data& data,
        const float* qDev) {
    GpuIndexIVFFlatConfig fastCfg, heapCfg;
    fastCfg.scanPath = heapCfg.scanPath = IvfScanPath::kPerQuery;
    fastCfg.mergePath = IvfMergePath::kFast;
    heapCfg.mergePath = IvfMergePath::kHeap;
    GpuIndexIVFFlat fast(res, &cpu, fastCfg);
    GpuIndexIVFFlat heap(res, &cpu, heapCfg);
    GpuIndexIVFFlat automatic(res, &cpu);
    const int64_t nq = std::min<int64_t>(data.nq, 10000);
    auto dD = res.alloc<float>(size_t(128) * 100);
    auto dI = res.alloc<int64_t>(size_t(128) * 100);
    std::printf(
            "\nMerge paths forced (per-query scan): device ms, CUDA events, median of 50 "
            "after a warm-up; fast / heap < 1: the fast merge is faster\n\n");
    std::printf(
            "| k | batch | nprobe | candidates per query | fast ms | heap ms | fast / heap | "
            "kAuto picks |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (int k : {10, 100}) {
        for (int64_t batch : {int64_t(1), int64_t(16), int64_t(128)}) {
            for (int64_t nprobe : {1, 4, 16, 32, 64, 128}) {
                auto timed = [&](const GpuIndexIVFFlat& index) {
                    return timeSearches(
                            res, index, qDev, nq, data.d, batch, k, nprobe, 50, dD.data(),
                            dI.data());
                };
                // The forced paths' plan (per-query scan): whether the fast merge fits.
                const IvfSearchPlan forcedPlan =
                        GpuIndexIVFFlatAccess::plan(heap, batch, k, int(nprobe));
                const IvfSearchPlan plan =
                        GpuIndexIVFFlatAccess::plan(automatic, batch, k, int(nprobe));
                const double h = timed(heap);
                char fastText[32] = "-", ratioText[32] = "-";
                if (forcedPlan.fastMergeSmemBytes <= res.maxSharedMemoryPerBlock()) {
                    const double f = timed(fast);
                    std::snprintf(fastText, sizeof(fastText), "%.3f", f);
                    std::snprintf(ratioText, sizeof(ratioText), "%.2f", f / h);
                }
                std::printf(
                        "| %d | %lld | %lld | %lld | %s | %.3f | %s | %s |\n", k, (long long)batch,
                        (long long)nprobe, (long long)forcedPlan.candidatesPerQuery, fastText, h,
                        ratioText, plan.fastMerge ? "fast" : "heap");
                std::fflush(stdout);
            }
        }
    }
}

/// Device ms of the per-query scan's block and warp kernels forced on one index (k 10),
/// with the kernel kAuto's rule picks (kernels::ivfQueryScanKernel).
void queryKernelTable(
        GpuResources& res,
        const faiss::IndexIVFFlat& cpu,
        const Data& data,
        const float* qDev) {
    GpuIndexIVFFlatConfig cfg;
    cfg.scanPath = IvfScanPath::kPerQuery;
    GpuIndexIVFFlat index(res, &cpu, cfg);
    constexpr int k = 10;
    const int64_t nq = std::min<int64_t>(data.nq, 10000);
    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    std::printf(
            "\nPer-query scan kernels forced (k 10): device ms of the whole search, CUDA "
            "events, median after a warm-up; warp / block < 1: the warp kernel is faster\n\n");
    std::printf("| batch | nprobe | chunk | block ms | warp ms | warp / block | kAuto picks |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (int64_t batch : {1, 4, 16, 64, 128, 256, 1024, 10000}) {
        if (batch > nq) {
            continue;
        }
        for (int64_t nprobe : {1, 2, 4, 16}) {
            const int reps = batch >= 10000 ? 5 : 20;
            auto timed = [&](kernels::IvfQueryScanKernel kernel) {
                GpuIndexIVFFlatAccess::setQueryScanKernel(index, kernel);
                return timeSearches(
                        res, index, qDev, nq, data.d, batch, k, nprobe, reps, dD.data(), dI.data());
            };
            const double block = timed(kernels::IvfQueryScanKernel::kBlock);
            const double warp = timed(kernels::IvfQueryScanKernel::kWarp);
            GpuIndexIVFFlatAccess::setQueryScanKernel(index, kernels::IvfQueryScanKernel::kAuto);
            const IvfSearchPlan plan = GpuIndexIVFFlatAccess::plan(index, batch, k, nprobe);
            kernels::IvfScanArgs args;
            args.nq = plan.queryTile;
            args.nprobe = int(nprobe);
            args.k = k;
            args.d = data.d;
            args.chunkLen = plan.chunkLen;
            const bool warpPicked =
                    kernels::ivfQueryScanKernel(args) == kernels::IvfQueryScanKernel::kWarp;
            std::printf(
                    "| %lld | %lld | %lld | %.3f | %.3f | %.2f | %s |\n", (long long)batch,
                    (long long)nprobe, (long long)plan.chunkLen, block, warp, warp / block,
                    warpPicked ? "warp" : "block");
            std::fflush(stdout);
        }
    }
}

/// Three searches of one shape (k 10, scan path `scan`) on device queries between
/// cudaProfilerStart and cudaProfilerStop; then, unprofiled, the median device ms of that
/// search (CUDA events) and of the host call a FAISS user makes (host queries in, results
/// out).
void profileShape(
        GpuResources& res,
        const faiss::IndexIVFFlat& cpu,
        const Data& data,
        const float* qDev,
        int64_t batch,
        int64_t nprobe,
        IvfScanPath scan) {
    GpuIndexIVFFlatConfig config;
    config.scanPath = scan;
    GpuIndexIVFFlat index(res, &cpu, config);
    constexpr int k = 10;
    const int64_t nq = std::min<int64_t>(data.nq, 10000);
    batch = std::min(batch, nq);
    auto dD = res.alloc<float>(size_t(batch) * k);
    auto dI = res.alloc<int64_t>(size_t(batch) * k);
    faiss::SearchParametersIVF params;
    params.nprobe = size_t(nprobe);
    index.searchDevice(batch, qDev, k, dD.data(), dI.data(), &params);
    res.synchronize();
    cudaProfilerStart();
    for (int i = 0; i < 3; ++i) {
        index.searchDevice(batch, qDev, k, dD.data(), dI.data(), &params);
    }
    res.synchronize();
    cudaProfilerStop();
    const double device =
            timeSearches(res, index, qDev, nq, data.d, batch, k, nprobe, 40, dD.data(), dI.data());
    std::vector<float> D(size_t(batch) * k);
    std::vector<int64_t> I(size_t(batch) * k);
    int rep = 0;
    const double host = bench::median(bench::timeHost(3, 40, [&] {
        const int64_t q0 = (rep++ * batch) % std::max<int64_t>(nq - batch + 1, 1);
        index.search(batch, data.xq.data() + q0 * data.d, k, D.data(), I.data(), &params);
    }));
    // The host call's copies alone, as searchInPages makes them (impl/HostPaging.h).
    PinnedStaging& staging = GpuResourcesAccess::pinnedStaging(res);
    auto qCopy = res.alloc<float>(size_t(batch) * data.d);
    const double copyIn = bench::median(bench::timeHost(3, 40, [&] {
        staging.toDevice(
                qCopy.data(), data.xq.data(), size_t(batch) * data.d * sizeof(float), res.stream());
        res.synchronize();
    }));
    const double copyOut = bench::median(bench::timeHost(3, 40, [&] {
        staging.toHost2(
                D.data(), dD.data(), D.size() * sizeof(float), I.data(), dI.data(),
                I.size() * sizeof(int64_t), res.stream());
    }));
    std::printf(
            "host parts: queries in %.3f ms, results out %.3f ms (pinned staging and DMA, "
            "each alone); host call - device - both %.3f ms\n",
            copyIn, copyOut, host - device - copyIn - copyOut);
    std::printf(
            "profiled: batch %lld nprobe %lld k %d; device %.3f ms, host call %.3f ms "
            "(medians of 40)\n",
            (long long)batch, (long long)nprobe, k, device, host);
}

const char* coarsePathName(IvfCoarsePath path) {
    return path == IvfCoarsePath::kFused ? "fused" : "gemm";
}

/// Device ms of the two coarse paths forced (k 10, kAuto's coarse precision: 3xTF32 from
/// 1024 queries): the whole search on one index, then the coarse search alone
/// (ivfCoarseSearch over the index's centroids, its merge and finish included).
void coarseTable(
        GpuResources& res,
        const faiss::IndexIVFFlat& cpu,
        const Data& data,
        const float* qDev) {
    GpuIndexIVFFlat index(res, &cpu);
    constexpr int k = 10;
    const int64_t nq = std::min<int64_t>(data.nq, 10000);
    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    const IvfCoarsePath paths[2] = {IvfCoarsePath::kGemm, IvfCoarsePath::kFused};
    std::printf(
            "\nCoarse paths forced (k 10): device ms of the whole search, CUDA events, median "
            "after a warm-up; fused / gemm < 1: the fused coarse search is faster\n\n");
    std::printf("| batch | nprobe | gemm ms | fused ms | fused / gemm | kAuto picks |\n");
    std::printf("|---|---|---|---|---|---|\n");
    // The centroids as a flat search input, for the coarse search alone.
    const auto* quantizer = dynamic_cast<const faiss::IndexFlat*>(cpu.quantizer);
    GpuIndexFlat centroids(res, quantizer);
    const FlatStorage& storage = GpuIndexFlatAccess::deviceState(centroids);
    FlatSearchInput coarse;
    coarse.base = storage.vectors();
    coarse.baseNorms = storage.norms();
    coarse.nb = centroids.ntotal;
    coarse.d = data.d;
    coarse.metric = cpu.metric_type;
    // Split once, as the index keeps it.
    const IvfCoarseFragments fragments(res, coarse.base, coarse.nb, coarse.d, coarse.metric);
    struct AloneRow {
        int64_t batch;
        int nprobe;
        double ms[2];
    };
    std::vector<AloneRow> alone;
    for (int64_t batch : {1024, 2048, 4096, 10000}) {
        if (batch > nq) {
            continue;
        }
        for (int nprobe : {1, 4}) {
            const int reps = batch >= 10000 ? 10 : 50;
            double ms[2];
            AloneRow row{batch, nprobe, {0, 0}};
            for (int i = 0; i < 2; ++i) {
                GpuIndexIVFFlatAccess::setCoarsePath(index, paths[i]);
                ms[i] = timeSearches(
                        res, index, qDev, nq, data.d, batch, k, nprobe, reps, dD.data(), dI.data());
                coarse.queries = qDev;
                coarse.nq = batch;
                coarse.precision = GpuFlatPrecision::kAuto;
                coarse.precision = ivfCoarsePrecision(res, coarse, nprobe);
                row.ms[i] = bench::median(bench::timeDevice(res, 2, reps, [&] {
                    ivfCoarseSearch(
                            res, coarse, nprobe, paths[i], fragments.data(), dD.data(), dI.data());
                }));
            }
            alone.push_back(row);
            GpuIndexIVFFlatAccess::setCoarsePath(index, IvfCoarsePath::kAuto);
            std::printf(
                    "| %lld | %d | %.3f | %.3f | %.2f | %s |\n", (long long)batch, nprobe, ms[0],
                    ms[1], ms[1] / ms[0],
                    coarsePathName(ivfCoarsePathFor(res, coarse, nprobe, IvfCoarsePath::kAuto)));
            std::fflush(stdout);
        }
    }
    std::printf(
            "\nThe coarse search alone (ivfCoarseSearch: nq x nprobe distances and ids), "
            "device ms\n\n");
    std::printf("| batch | nprobe | gemm ms | fused ms | fused / gemm |\n");
    std::printf("|---|---|---|---|---|\n");
    for (const AloneRow& r : alone) {
        std::printf(
                "| %lld | %d | %.4f | %.4f | %.2f |\n", (long long)r.batch, r.nprobe, r.ms[0],
                r.ms[1], r.ms[1] / r.ms[0]);
    }
}

int main(int argc, char** argv) {
    const char* siftDir = nullptr;
    bool mergeOnly = false;
    bool queryKernels = false;
    bool coarsePaths = false;
    int64_t profileBatch = 0, profileNprobe = 0;
    IvfScanPath profileScan = IvfScanPath::kAuto;
    int64_t nlist = 4096;
    int64_t blobsN = 1000000;
    int blobsD = 128;
    int clusters = 2000;
    float spread = 0.15f;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sift") == 0 && i + 1 < argc) {
            siftDir = argv[++i];
        } else if (std::strcmp(argv[i], "--blobs") == 0 && i + 2 < argc) {
            blobsN = std::atoll(argv[++i]);
            blobsD = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--clusters") == 0 && i + 1 < argc) {
            clusters = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--spread") == 0 && i + 1 < argc) {
            spread = float(std::atof(argv[++i]));
        } else if (std::strcmp(argv[i], "--merge-only") == 0) {
            mergeOnly = true;
        } else if (std::strcmp(argv[i], "--query-kernels") == 0) {
            queryKernels = true;
        } else if (std::strcmp(argv[i], "--coarse") == 0) {
            coarsePaths = true;
        } else if (std::strcmp(argv[i], "--profile") == 0 && i + 2 < argc) {
            profileBatch = std::atoll(argv[++i]);
            profileNprobe = std::atoll(argv[++i]);
        } else if (std::strcmp(argv[i], "--scan") == 0 && i + 1 < argc) {
            const std::string name = argv[++i];
            if (name == "per-query") {
                profileScan = IvfScanPath::kPerQuery;
            } else if (name == "list-major") {
                profileScan = IvfScanPath::kListMajor;
            } else if (name == "list-major-keys") {
                profileScan = IvfScanPath::kListMajorKeys;
            } else {
                std::fprintf(stderr, "bench_ivf_paths: unknown --scan %s\n", name.c_str());
                return 2;
            }
        } else {
            nlist = std::atoll(argv[i]);
        }
    }
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_ivf_paths: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const Data data = load(siftDir, blobsN, blobsD, clusters, spread);
    GpuResources res;
    bench::printDevice(res, bench::measureCeilings(res));
    std::printf(
            "dataset: %s, %lld x %d, %lld queries; nlist %lld; k 10\n", data.name.c_str(),
            (long long)data.nb, data.d, (long long)data.nq, (long long)nlist);

    // One trained index, copied into one GPU index per forced path.
    faiss::IndexFlatL2 quantizer(data.d);
    faiss::IndexIVFFlat cpu(&quantizer, data.d, size_t(nlist));
    {
        GpuIndexIVFFlat trained(res, data.d, nlist);
        trained.train(data.nb, data.xb.data());
        trained.add(data.nb, data.xb.data());
        trained.copyTo(&cpu);
    }
    const int64_t nq = std::min<int64_t>(data.nq, 10000);
    auto qDev = res.alloc<float>(size_t(nq) * data.d);
    copyToDevice(qDev.data(), data.xq.data(), size_t(nq) * data.d, res.stream());
    if (mergeOnly) {
        mergeTable(res, cpu, data, qDev.data());
        return 0;
    }
    if (queryKernels) {
        queryKernelTable(res, cpu, data, qDev.data());
        return 0;
    }
    if (coarsePaths) {
        coarseTable(res, cpu, data, qDev.data());
        return 0;
    }
    if (profileBatch > 0) {
        profileShape(res, cpu, data, qDev.data(), profileBatch, profileNprobe, profileScan);
        return 0;
    }
    GpuIndexIVFFlatConfig perQueryCfg, listMajorCfg, keysCfg;
    perQueryCfg.scanPath = IvfScanPath::kPerQuery;
    listMajorCfg.scanPath = IvfScanPath::kListMajor;
    keysCfg.scanPath = IvfScanPath::kListMajorKeys;
    GpuIndexIVFFlat perQuery(res, &cpu, perQueryCfg);
    GpuIndexIVFFlat listMajor(res, &cpu, listMajorCfg);
    GpuIndexIVFFlat listMajorKeys(res, &cpu, keysCfg);
    GpuIndexIVFFlat automatic(res, &cpu);
    std::vector<int64_t> lengths(static_cast<size_t>(nlist));
    for (int64_t l = 0; l < nlist; ++l) {
        lengths[size_t(l)] = automatic.listLength(l);
    }

    constexpr int k = 10;
    const int64_t nprobes[] = {1, 4, 16, 32, 64, 128};
    const int64_t batches[] = {16, 128, 1024, 10000};
    const int64_t maxNprobe = nprobes[std::size(nprobes) - 1];
    std::vector<float> coarseD(size_t(nq * maxNprobe));
    std::vector<int64_t> probes(size_t(nq * maxNprobe));
    quantizer.search(nq, data.xq.data(), maxNprobe, coarseD.data(), probes.data());

    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    std::printf(
            "device ms: CUDA events around searchDevice, median of the repetitions after a "
            "warm-up; per-query / list-major < 1: per-query is faster; keys: the list-major "
            "path on L2 keys with the exact re-rank\n\n");
    std::printf(
            "| batch | nprobe | sharing (kAuto's) | sharing (list tiles') | per-query ms | "
            "list-major ms | keys ms | per-query / list-major | list-major / keys | kAuto "
            "picks |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int64_t batch : batches) {
        if (batch > nq) {
            continue;
        }
        for (int64_t nprobe : nprobes) {
            double autoSharing = 0, tileSharing = 0;
            sharing(probes, maxNprobe, batch, nprobe, lengths, autoSharing, tileSharing);
            const int reps = batch >= 10000 ? 5 : 20;
            auto timed = [&](const GpuIndexIVFFlat& index) {
                return timeSearches(
                        res, index, qDev.data(), nq, data.d, batch, k, nprobe, reps, dD.data(),
                        dI.data());
            };
            const double pq = timed(perQuery);
            const double lm = timed(listMajor);
            const double keys = timed(listMajorKeys);
            const IvfSearchPlan picked = GpuIndexIVFFlatAccess::plan(automatic, batch, k, nprobe);
            std::printf(
                    "| %lld | %lld | %.1f | %.1f | %.3f | %.3f | %.3f | %.2f | %.2f | %s |\n",
                    (long long)batch, (long long)nprobe, autoSharing, tileSharing, pq, lm, keys,
                    pq / lm, lm / keys,
                    picked.listMajorKeys       ? "keys"
                            : picked.listMajor ? "list-major"
                                               : "per-query");
            std::fflush(stdout);
        }
    }
    mergeTable(res, cpu, data, qDev.data());
    return 0;
}
