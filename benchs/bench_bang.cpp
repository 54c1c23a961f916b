// GpuIndexBang on 1M x 128 clustered vectors: build time and degree histogram, device
// memory, then QPS, recall@10 and iterations per query for each worklist size L, at
// batch 10000 and batch 1, for both search kernels (persistent, stepwise), beside
// GpuIndexIVFFlat at equal recall (the smallest nprobe reaching each Bang recall), and
// PQ mode (M = d / 4 sub-quantizers on the same graph, its full vectors on the device and
// in host memory) beside exact mode at batch 10000.
// Usage: bench_bang [n_base] [spread] [pq|build] [--sift DIR] [--lists N] [--probes P]
//                   [--verbose] [--extend F] [--by-row] [--page-mib P] [--passes N]
//                   [--build-l L] [--candidates C] [--sift-mixture DIR]
//                   [--storage auto|float|bytes] [--device-gib G]
// Defaults 1000000, 0.15 (bench_ivf's dataset). A third argument "pq" skips the
// stepwise kernel and IVF-Flat; "build" stops after the persistent kernel's table.
// --sift DIR: the first n_base rows of DIR/base.bvecs (or .fvecs) and 10000 of
// DIR/query.bvecs instead of the clustered set. --lists / --probes: BangBuildConfig's
// candidateLists / candidateProbes. --page-mib: GpuIndexConfig::pageBytes in MiB (the
// build's k-NN pages). --passes / --build-l / --candidates: BangBuildConfig's passes /
// searchL / candidates. --verbose: the build's phases as they end.
// --extend F: also builds on the first (1 - F) n rows, adds the other F n in one add (an
// extension of the graph), and prints its time and recall beside the one build's.
// --sift-mixture DIR: n_base rows and 10000 queries drawn from a Gaussian mixture of
// 1000 components fitted to DIR's SIFT base (datasets/Mixture.h; values rounded to
// bytes; drawn on the GPU, datasets/MixtureGpu.h), for sizes beyond the real set's.
// --by-row: the clustered set drawn by datasets::clusteredByRow (a thread a share of the
// rows; the same distribution, other numbers) instead of datasets::clustered (one
// thread): for 100M, where one thread takes minutes.
// --storage: GpuIndexBangConfig::vectorStorage (default auto: bytes for byte-valued data
// such as SIFT and the mixture). --device-gib G: the run holds all but G GiB of the
// device's free memory from its start, as a GPU with G GiB would leave it (80 GB H100:
// --device-gib 79).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <faiss/IndexIVF.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/BangBuild.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/HostMemory.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/utils/CudaCheck.h>
#include <kernels/BangStepwise.h>

#include "BenchUtil.h"
#include "DemoTable.h"
#include "Mixture.h"
#include "MixtureGpu.h"
#include "Synthetic.h"
#include "VecsIO.h"

using namespace faiss_ext;

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Row {
    int L;
    double recall;
    double qps;
    double meanIterations;
};

/// nq device queries through the persistent kernel the library runs, or the stepwise
/// comparison kernel (kernels/BangStepwise.h); iterations may be null.
void searchKernel(
        const GpuIndexBang& index,
        bool stepwise,
        const float* queries,
        int64_t nq,
        int k,
        int L,
        float* D,
        int64_t* I,
        int32_t* iterations) {
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    if (!stepwise) {
        state.search(queries, nq, k, L, D, I, iterations);
        return;
    }
    kernels::BangSearchArgs a;
    a.queries = queries;
    a.nq = nq;
    a.L = L;
    a.k = k;
    a.outD = D;
    a.outI = I;
    a.iterations = iterations;
    const GpuResources& res = index.resources();
    kernels::bangSearchStepwise(state.view(), a, res.tempMemoryBytes(), res.stream());
}

} // namespace

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_bang: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    std::vector<std::string> args;
    std::string siftDir;
    std::string mixtureDir;
    GpuIndexBangConfig bangCfg;
    bool verbose = false;
    double extendFraction = 0;
    bool byRow = false;
    double deviceGib = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--sift" && i + 1 < argc) {
            siftDir = argv[++i];
        } else if (a == "--sift-mixture" && i + 1 < argc) {
            mixtureDir = argv[++i];
        } else if (a == "--lists" && i + 1 < argc) {
            bangCfg.build.candidateLists = std::atoll(argv[++i]);
        } else if (a == "--probes" && i + 1 < argc) {
            bangCfg.build.candidateProbes = std::atoi(argv[++i]);
        } else if (a == "--passes" && i + 1 < argc) {
            bangCfg.build.passes = std::atoi(argv[++i]);
        } else if (a == "--candidates" && i + 1 < argc) {
            bangCfg.build.candidates = std::atoi(argv[++i]);
        } else if (a == "--build-l" && i + 1 < argc) {
            bangCfg.build.searchL = std::atoi(argv[++i]);
        } else if (a == "--page-mib" && i + 1 < argc) {
            bangCfg.pageBytes = size_t(std::atoll(argv[++i])) << 20;
        } else if (a == "--verbose") {
            verbose = true;
        } else if (a == "--by-row") {
            byRow = true;
        } else if (a == "--extend" && i + 1 < argc) {
            extendFraction = std::atof(argv[++i]);
        } else if (a == "--storage" && i + 1 < argc) {
            const std::string name = argv[++i];
            bangCfg.vectorStorage = name == "float" ? BangVectorStorage::kFloat
                    : name == "bytes"               ? BangVectorStorage::kBytes
                                                    : BangVectorStorage::kAuto;
        } else if (a == "--device-gib" && i + 1 < argc) {
            deviceGib = std::atof(argv[++i]);
        } else {
            args.push_back(argv[i]);
        }
    }
    int64_t nb = args.size() > 0 ? std::atoll(args[0].c_str()) : 1000000;
    const float spread = args.size() > 1 ? float(std::atof(args[1].c_str())) : 0.15f;
    // "pq": PQ mode's table after the persistent kernel's; "build": the build and the
    // persistent kernel's table only.
    const std::string mode = args.size() > 2 ? args[2] : "";
    const bool pqOnly = mode == "pq", buildOnly = mode == "build";
    const int k = 10;
    int64_t nq = 10000;
    const int64_t nq1 = 200;
    GpuResources res;
    bench::Ceilings ceil = bench::measureCeilings(res);
    bench::printDevice(res, ceil);
    // Device memory held back for the whole run (--device-gib), outside the pool.
    struct HeldBack {
        void* p = nullptr;
        ~HeldBack() {
            cudaFree(p);
        }
    } heldBack;
    if (deviceGib > 0) {
        size_t freeBytes = 0, totalBytes = 0;
        FAISS_EXT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
        const size_t keep = size_t(deviceGib * 1073741824.0);
        if (freeBytes > keep) {
            FAISS_EXT_CUDA_CHECK(cudaMalloc(&heldBack.p, freeBytes - keep));
        }
        FAISS_EXT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
        std::printf(
                "device memory held back: %.1f GiB; %.1f GiB free for the run (--device-gib "
                "%.1f)\n",
                (totalBytes - freeBytes) / 1073741824.0, freeBytes / 1073741824.0, deviceGib);
    }
    int d = 128;
    std::vector<float> xb, xq;
    if (!mixtureDir.empty()) {
        const auto start = std::chrono::steady_clock::now();
        const datasets::Matrix<float> real = datasets::readRowsAsFloat(mixtureDir, "base", 1000000);
        d = real.d;
        const datasets::GaussianMixture g =
                datasets::fitGaussianMixture(real.data.data(), real.n, d, 1000);
        const double fitted =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        xb = datasets::sampleGaussianMixtureOnGpu(g, nb, 1, true);
        xq = datasets::sampleGaussianMixtureOnGpu(g, nq, 2, true);
        std::printf(
                "dataset: %lld x %d from a 1000-component Gaussian mixture fitted to %lld SIFT "
                "rows of %s (%.1f s), %lld queries, k=%d; drawn in %.1f s\n",
                (long long)nb, d, (long long)real.n, mixtureDir.c_str(), fitted, (long long)nq, k,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
                        fitted);
    } else if (siftDir.empty()) {
        datasets::ClusteredSpec spec{nb, d, 2000, spread, 7};
        auto draw = [byRow](const datasets::ClusteredSpec& s, uint64_t stream) {
            return byRow ? datasets::clusteredByRow(s, stream) : datasets::clustered(s, stream);
        };
        const auto start = std::chrono::steady_clock::now();
        xb = draw(spec, 0);
        spec.n = nq;
        xq = draw(spec, 1);
        std::printf(
                "dataset: %lld x %d clustered (%d blobs, spread %.2f%s), %lld queries, k=%d; "
                "drawn in %.1f s\n",
                (long long)nb, d, spec.clusters, spec.spread, byRow ? ", by row" : "",
                (long long)nq, k,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    } else {
        datasets::Matrix<float> base = datasets::readRowsAsFloat(siftDir, "base", nb);
        datasets::Matrix<float> query = datasets::readRowsAsFloat(siftDir, "query", nq);
        nb = base.n;
        nq = query.n;
        d = base.d;
        xb = std::move(base.data);
        xq = std::move(query.data);
        std::printf(
                "dataset: SIFT %s, %lld x %d, %lld queries, k=%d\n", siftDir.c_str(), (long long)nb,
                d, (long long)nq, k);
    }

    std::vector<float> gtD(nq * k);
    std::vector<int64_t> gtI(nq * k);
    {
        GpuIndexFlat flat(res, d);
        flat.add(nb, xb.data());
        flat.search(nq, xq.data(), k, gtD.data(), gtI.data());
    }

    // Build.
    GpuIndexBang bang(res, d, faiss::METRIC_L2, bangCfg);
    bang.verbose = verbose;
    // The build's peak device memory: the pool's high-water mark above what it held.
    cudaMemPool_t pool;
    FAISS_EXT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, res.device()));
    res.synchronize();
    uint64_t usedBefore = 0, peak = 0;
    FAISS_EXT_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &usedBefore));
    FAISS_EXT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &peak));
    // The add's host memory: the peak resident memory above what the process held before
    // (its data and ground truth).
    const size_t residentBefore = processStatusBytes("VmRSS");
    const bool hostPeak = resetPeakResidentBytes();
    auto t0 = std::chrono::steady_clock::now();
    bang.add(nb, xb.data());
    const double buildS = secondsSince(t0);
    const size_t hostPeakBytes = processStatusBytes("VmHWM");
    const size_t addHostBytes = hostPeakBytes - std::min(hostPeakBytes, residentBefore);
    FAISS_EXT_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &peak));
    // The estimate for the storage the rows took (kAuto's own figure counts floats).
    GpuIndexBangConfig storedCfg = bangCfg;
    storedCfg.vectorStorage =
            bang.storesBytes() ? BangVectorStorage::kBytes : BangVectorStorage::kFloat;
    const BangMemoryEstimate estimate =
            GpuIndexBang::estimateMemory(nb, d, faiss::METRIC_L2, storedCfg, res.config());
    const int rowBytes = bang.storesBytes() ? d : d * 4;
    const BangBuildConfig& c = bang.bangConfig().build;
    std::printf(
            "\nGpuIndexBang build (add): %.1f s = k-NN candidates %.1f s (GPU) + refinement "
            "searches %.1f s (GPU) + pruning %.1f s (GPU); R=%d alpha=%.2f "
            "candidates=%d from %s (%lld lists, %d probes) passes=%d build L=%d, entry %lld\n",
            buildS, bang.lastBuildKnnSeconds(), bang.lastBuildSearchSeconds(),
            bang.lastBuildPruneSeconds(), c.graphDegree, double(c.alpha), c.candidates,
            bangCandidateLists(nb, c.candidateLists) == 0 ? "exact k-NN" : "IVF lists",
            (long long)bangCandidateLists(nb, c.candidateLists), c.candidateProbes, c.passes,
            c.searchL, (long long)bang.entryPoint());
    std::printf(
            "device memory %.1f MiB = %.1f bytes/vector (vector %d (%s) + norm 4 + graph %d)\n",
            bang.deviceMemoryBytes() / 1048576.0, double(bang.deviceMemoryBytes()) / nb, rowBytes,
            bang.storesBytes() ? "bytes" : "floats", c.graphDegree * 4);
    std::printf(
            "build peak device memory %.1f MiB (pool high-water mark); "
            "GpuIndexBang::estimateMemory: %.1f MiB (%.2fx), the index %.1f MiB\n",
            (peak - usedBefore) / 1048576.0, estimate.buildDeviceBytes / 1048576.0,
            double(estimate.buildDeviceBytes) / double(peak - usedBefore),
            estimate.deviceBytes / 1048576.0);
    std::printf(
            "host memory: %.1f MiB resident before the add (the vectors, queries and ground "
            "truth); the add's peak above it %s%.1f MiB (estimateMemory: %.1f MiB beyond the "
            "caller's vectors); the index %.1f MiB\n",
            residentBefore / 1048576.0, hostPeak ? "" : "(peak not reset: an upper bound) ",
            addHostBytes / 1048576.0, estimate.buildHostBytes / 1048576.0,
            bang.hostMemoryBytes() / 1048576.0);
    double meanDegree = 0;
    {
        const std::vector<int32_t> g = bang.graph();
        const int R = c.graphDegree;
        std::vector<int64_t> hist(size_t(R) / 8 + 1, 0);
        int64_t edges = 0, isolated = 0;
        for (int64_t v = 0; v < nb; ++v) {
            int deg = 0;
            for (int j = 0; j < R; ++j) {
                deg += g[size_t(v) * R + j] >= 0;
            }
            edges += deg;
            isolated += deg == 0;
            hist[size_t(deg / 8)]++;
        }
        meanDegree = double(edges) / nb;
        std::printf(
                "degree: mean %.1f, %lld vectors without neighbours; histogram:\n\n", meanDegree,
                (long long)isolated);
        std::printf("| degree | vectors |\n|---|---|\n");
        for (size_t b = 0; b < hist.size(); ++b) {
            std::printf(
                    "| %zu-%zu | %lld |\n", b * 8, std::min<size_t>(b * 8 + 7, R),
                    (long long)hist[b]);
        }
    }

    auto qDev = res.alloc<float>(size_t(nq) * d);
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    auto dIt = res.alloc<int32_t>(size_t(nq));
    std::vector<int64_t> I(nq * k);
    std::vector<int32_t> iters(nq);
    std::vector<Row> bangRows;

    std::printf(
            "\nQPS at batch 10000: CUDA events around the device search (queries on the device), "
            "median of 3 after a warm-up; batch 1: median device ms over %lld single-query "
            "searches; recall@10 over all %lld queries; floor: at most iterations x mean degree "
            "rows of %d bytes read per query (an upper bound: rows already seen are "
            "skipped, rows shared by queries come from L2) / %.2f TB/s.\n\n",
            (long long)nq1, (long long)nq, rowBytes, ceil.bytesPerSec / 1e12);
    std::printf(
            "| kernel | L | recall@10 | mean iterations | batch 10000 QPS | batch 10000 ms | "
            "floor ms | batch 1 ms | batch 1 QPS |\n|---|---|---|---|---|---|---|---|---|\n");
    std::vector<bool> kernels{false};
    if (!pqOnly && !buildOnly) {
        kernels.push_back(true);
    }
    for (bool stepwise : kernels) {
        const char* name = stepwise ? "stepwise" : "persistent";
        for (int L : {10, 20, 40, 60, 80, 100, 160}) {
            const double ms = bench::median(bench::timeDevice(res, 1, 3, [&] {
                searchKernel(
                        bang, stepwise, qDev.data(), nq, k, L, dD.data(), dI.data(), dIt.data());
            }));
            copyToHost(I.data(), dI.data(), I.size(), res.stream());
            copyToHost(iters.data(), dIt.data(), iters.size(), res.stream());
            const double recall = bench::recallAt(gtI, k, I, k, nq, 10);
            double meanIt = 0;
            for (int32_t it : iters) {
                meanIt += it;
            }
            meanIt /= nq;
            int rep = 0;
            const double ms1 = bench::median(bench::timeDevice(res, 2, int(nq1), [&] {
                searchKernel(
                        bang, stepwise, qDev.data() + size_t(rep++ % nq) * d, 1, k, L, dD.data(),
                        dI.data(), nullptr);
            }));
            const double floorMs =
                    meanIt * meanDegree * double(rowBytes) * nq / ceil.bytesPerSec * 1e3;
            std::printf(
                    "| %s | %d | %.4f | %.1f | %.0f | %.2f | %.3f | %.3f | %.0f |\n", name, L,
                    recall, meanIt, nq / (ms * 1e-3), ms, floorMs, ms1, 1e3 / ms1);
            std::fflush(stdout);
            if (!stepwise) {
                bangRows.push_back({L, recall, nq / (ms * 1e-3), meanIt});
            }
        }
    }

    if (extendFraction > 0) {
        // Built on the first rows, then extended by the rest in one add.
        const int64_t added = int64_t(double(nb) * extendFraction), first = nb - added;
        GpuIndexBang ext(res, d, faiss::METRIC_L2, bangCfg);
        ext.add(first, xb.data());
        t0 = std::chrono::steady_clock::now();
        ext.add(added, xb.data() + size_t(first) * d);
        const double extS = secondsSince(t0);
        std::printf(
                "\nExtension: built on %lld vectors, then add(%lld): %.2f s = k-NN among the new "
                "%.2f s + their searches %.2f s + prune %.2f s\n\n| L | recall@10 one build | "
                "recall@10 extended | extended QPS |\n|---|---|---|---|\n",
                (long long)first, (long long)added, extS, ext.lastBuildKnnSeconds(),
                ext.lastBuildSearchSeconds(), ext.lastBuildPruneSeconds());
        for (const Row& r : bangRows) {
            const double ms = bench::median(bench::timeDevice(res, 1, 3, [&] {
                searchKernel(ext, false, qDev.data(), nq, k, r.L, dD.data(), dI.data(), nullptr);
            }));
            copyToHost(I.data(), dI.data(), I.size(), res.stream());
            std::printf(
                    "| %d | %.4f | %.4f | %.0f |\n", r.L, r.recall,
                    bench::recallAt(gtI, k, I, k, nq, 10), nq / (ms * 1e-3));
        }
    }
    if (buildOnly) {
        return 0;
    }

    // PQ mode on the same graph (graph building is exact in both modes): setGraph
    // trains the codebooks and encodes the vectors as add() does.
    {
        GpuIndexBangConfig pc;
        pc.pqSubquantizers = d / 4;
        GpuIndexBang pq(res, d, faiss::METRIC_L2, pc);
        const std::vector<int32_t> g = bang.graph();
        t0 = std::chrono::steady_clock::now();
        pq.setGraph(nb, xb.data(), g.data(), bang.entryPoint());
        const double pqS = secondsSince(t0);
        const int M = pc.pqSubquantizers;
        std::printf(
                "\nPQ mode, M=%d (8-bit codes, %d bytes per vector for traversal instead of "
                "%d), same graph: codebook training (GPU k-means on %lld vectors) + "
                "encoding (host) + upload %.1f s; device memory %.1f MiB = %.1f "
                "bytes/vector (exact mode's + code %d + codebooks %.2f)\n",
                M, M, d * 4, (long long)std::min<int64_t>(nb, 65536), pqS,
                pq.deviceMemoryBytes() / 1048576.0, double(pq.deviceMemoryBytes()) / nb, M,
                256.0 * d * 4 / nb);
        // The same index with its full vectors in host memory (BangVectorPlacement::kHost).
        pc.vectorPlacement = BangVectorPlacement::kHost;
        GpuIndexBang pqHost(res, d, faiss::METRIC_L2, pc);
        {
            const std::vector<float> centroids = pq.pqCentroids();
            const std::vector<uint8_t> codes = pq.pqCodes();
            pqHost.setGraph(
                    nb, xb.data(), g.data(), bang.entryPoint(), centroids.data(), codes.data());
        }
        std::printf(
                "PQ mode with the vectors in host memory: device memory %.1f MiB (%.1f "
                "bytes/vector), host memory %.1f MiB\n",
                pqHost.deviceMemoryBytes() / 1048576.0, double(pqHost.deviceMemoryBytes()) / nb,
                pqHost.hostMemoryBytes() / 1048576.0);
        std::printf(
                "\nPersistent kernel, batch 10000 (timed as above); exact columns: exact "
                "mode's rows above; host columns: the vectors in host memory (the re-rank "
                "reads L rows a query over the bus; its results are the device "
                "placement's, checked); floor: iterations x mean degree codes of %d bytes / "
                "%.2f TB/s (+ the re-rank's L rows of %d bytes).\n\n",
                M, ceil.bytesPerSec / 1e12, d * 4);
        std::printf(
                "| L | PQ recall@10 | exact recall@10 | PQ mean iterations | exact mean "
                "iterations | PQ QPS | PQ host-vectors QPS | exact QPS | PQ ms | PQ host-vectors "
                "ms | floor ms | PQ batch 1 ms | PQ host-vectors batch 1 ms |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        std::vector<int64_t> hostI(I.size());
        for (const Row& r : bangRows) {
            const double hostMs = bench::median(bench::timeDevice(res, 1, 3, [&] {
                searchKernel(
                        pqHost, false, qDev.data(), nq, k, r.L, dD.data(), dI.data(), dIt.data());
            }));
            copyToHost(hostI.data(), dI.data(), hostI.size(), res.stream());
            const double ms = bench::median(bench::timeDevice(res, 1, 3, [&] {
                searchKernel(pq, false, qDev.data(), nq, k, r.L, dD.data(), dI.data(), dIt.data());
            }));
            copyToHost(I.data(), dI.data(), I.size(), res.stream());
            if (hostI != I) {
                std::printf("host placement: results differ from the device placement's\n");
                return 1;
            }
            copyToHost(iters.data(), dIt.data(), iters.size(), res.stream());
            const double recall = bench::recallAt(gtI, k, I, k, nq, 10);
            double meanIt = 0;
            for (int32_t it : iters) {
                meanIt += it;
            }
            meanIt /= nq;
            const double floorMs =
                    (meanIt * meanDegree * M + double(r.L) * d * 4) * nq / ceil.bytesPerSec * 1e3;
            double batch1Ms[2];
            for (int placed = 0; placed < 2; ++placed) {
                int rep = 0;
                batch1Ms[placed] = bench::median(bench::timeDevice(res, 2, int(nq1), [&] {
                    searchKernel(
                            placed ? pqHost : pq, false, qDev.data() + size_t(rep++ % nq) * d, 1, k,
                            r.L, dD.data(), dI.data(), nullptr);
                }));
            }
            std::printf(
                    "| %d | %.4f | %.4f | %.1f | %.1f | %.0f | %.0f | %.0f | %.2f | %.2f | %.3f | "
                    "%.3f | %.3f |\n",
                    r.L, recall, r.recall, meanIt, r.meanIterations, nq / (ms * 1e-3),
                    nq / (hostMs * 1e-3), r.qps, ms, hostMs, floorMs, batch1Ms[0], batch1Ms[1]);
            std::fflush(stdout);
        }
    }
    if (pqOnly) {
        return 0;
    }

    // IVF-Flat beside it.
    const int64_t nlist = 4096;
    GpuIndexIVFFlat ivf(res, d, nlist);
    t0 = std::chrono::steady_clock::now();
    ivf.train(nb, xb.data());
    ivf.add(nb, xb.data());
    std::printf(
            "\nGpuIndexIVFFlat nlist=%lld: train + add %.1f s, device memory %.1f MiB\n\n",
            (long long)nlist, secondsSince(t0), ivf.deviceMemoryBytes() / 1048576.0);
    struct IvfRow {
        int64_t nprobe;
        double recall, qps, ms1;
    };
    std::vector<IvfRow> ivfRows;
    std::printf("| nprobe | recall@10 | batch 10000 QPS | batch 1 ms |\n|---|---|---|---|\n");
    for (int64_t nprobe : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
        faiss::SearchParametersIVF params;
        params.nprobe = size_t(nprobe);
        const double ms = bench::median(bench::timeDevice(res, 1, 3, [&] {
            ivf.searchDevice(nq, qDev.data(), k, dD.data(), dI.data(), &params);
        }));
        copyToHost(I.data(), dI.data(), I.size(), res.stream());
        const double recall = bench::recallAt(gtI, k, I, k, nq, 10);
        int rep = 0;
        const double ms1 = bench::median(bench::timeDevice(res, 2, int(nq1), [&] {
            ivf.searchDevice(
                    1, qDev.data() + size_t(rep++ % nq) * d, k, dD.data(), dI.data(), &params);
        }));
        ivfRows.push_back({nprobe, recall, nq / (ms * 1e-3), ms1});
        std::printf(
                "| %lld | %.4f | %.0f | %.3f |\n", (long long)nprobe, recall, nq / (ms * 1e-3),
                ms1);
        std::fflush(stdout);
    }
    std::printf(
            "\nAt equal recall (batch 10000, persistent kernel vs the smallest nprobe whose "
            "recall@10 is at least Bang's):\n\n| L | Bang recall | nprobe | IVF recall | "
            "IVF QPS | IVF batch 1 ms |\n|---|---|---|---|---|---|\n");
    for (const Row& r : bangRows) {
        auto it = std::find_if(ivfRows.begin(), ivfRows.end(), [&](const IvfRow& v) {
            return v.recall >= r.recall;
        });
        if (it == ivfRows.end()) {
            std::printf("| %d | %.4f | > 256 | - | - | - |\n", r.L, r.recall);
        } else {
            std::printf(
                    "| %d | %.4f | %lld | %.4f | %.0f | %.3f |\n", r.L, r.recall,
                    (long long)it->nprobe, it->recall, it->qps, it->ms1);
        }
    }
    return 0;
}
