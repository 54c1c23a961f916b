// GpuIndexIVFFlat on 1M x 128 clustered vectors: QPS, batch latency, recall against
// exact search (GpuIndexFlat), memory, train/add time, and the floor of each row
// (bytes of the lists scanned / measured copy bandwidth).
// Usage: bench_ivf [n_base] [spread]  (spread: blob standard deviation, default 0.15;
// larger values overlap the blobs and make the recall / nprobe trade-off visible)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <faiss/IndexIVF.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfSearch.h>

#include "BenchUtil.h"
#include "DemoTable.h"
#include "Synthetic.h"

using namespace faiss_ext;

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_ivf: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const int d = 128, gtK = 100;
    const int64_t nqAll = 10000;
    GpuResources res;
    bench::Ceilings ceil = bench::measureCeilings(res);
    bench::printDevice(res, ceil);

    const float spread = argc > 2 ? float(std::atof(argv[2])) : 0.15f;
    datasets::ClusteredSpec spec{nb, d, 2000, spread, 7};
    auto xb = datasets::clustered(spec, 0);
    spec.n = nqAll;
    auto xq = datasets::clustered(spec, 1);
    std::printf(
            "dataset: %lld x %d clustered (%d blobs, spread %.2f), %lld queries\n", (long long)nb,
            d, spec.clusters, spec.spread, (long long)nqAll);

    // Ground truth: exact search on the GPU.
    std::vector<float> gtD(nqAll * gtK);
    std::vector<int64_t> gtI(nqAll * gtK);
    {
        GpuIndexFlat flat(res, d, faiss::METRIC_L2);
        flat.add(nb, xb.data());
        flat.search(nqAll, xq.data(), gtK, gtD.data(), gtI.data());
    }
    std::printf(
            "QPS and latency: host API search() (includes copies), p50/p99 over the "
            "repetitions; device ms: CUDA events around searchDevice, median; recall "
            "over all %lld queries; coarse ms: the coarse search alone (top nprobe centroids); floor: "
            "bytes of the lists scanned / %.2f TB/s.\n\n",
            (long long)nqAll, ceil.bytesPerSec / 1e12);

    auto qDev = res.alloc<float>(size_t(nqAll) * d);
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    for (int64_t nlist : {int64_t(1024), int64_t(4096)}) {
        GpuIndexIVFFlat index(res, d, nlist, faiss::METRIC_L2);
        auto t0 = std::chrono::steady_clock::now();
        index.train(nb, xb.data());
        const double trainS = secondsSince(t0);
        t0 = std::chrono::steady_clock::now();
        index.add(nb, xb.data());
        const double addS = secondsSince(t0);
        int64_t maxLen = 0;
        for (int64_t l = 0; l < nlist; ++l) {
            maxLen = std::max(maxLen, index.listLength(l));
        }
        std::printf(
                "nlist=%lld: train %.2f s (GPU k-means, %d iterations), add %.2f s, "
                "device memory %.1f MiB = %.1f bytes/vector (raw vector %d + id 8), "
                "longest list %lld\n\n",
                (long long)nlist, trainS, index.cp.niter, addS,
                index.deviceMemoryBytes() / 1048576.0, double(index.deviceMemoryBytes()) / nb,
                d * 4, (long long)maxLen);
        std::printf(
                "| nlist | nprobe | k | batch | QPS | p50 ms | p99 ms | device ms | "
                "coarse ms | R@1 | R@10 | floor ms | floor/device | floor/(device-coarse) "
                "| chunk | merge |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int64_t nprobe : {1, 2, 4, 8, 16, 32, 64, 128}) {
            // Bytes the scan must read: the probed lists' vectors, per query on average.
            std::vector<float> cd(nqAll * nprobe);
            std::vector<int64_t> ci(nqAll * nprobe);
            index.quantizer().search(nqAll, xq.data(), nprobe, cd.data(), ci.data());
            double scanned = 0;
            for (int64_t l : ci) {
                scanned += l >= 0 ? double(index.listLength(l)) : 0.0;
            }
            const double bytesPerQuery = scanned / nqAll * d * sizeof(float);
            index.nprobe = size_t(nprobe);
            for (int k : {10, 100}) {
                std::vector<float> D(nqAll * k);
                std::vector<int64_t> I(nqAll * k);
                index.search(nqAll, xq.data(), k, D.data(), I.data());
                const double r1 = bench::recallAt(gtI, gtK, I, k, nqAll, 1);
                const double r10 = bench::recallAt(gtI, gtK, I, k, nqAll, 10);
                for (int64_t batch : {int64_t(1), int64_t(100), int64_t(10000)}) {
                    const int reps = batch == 1 ? 300 : batch == 100 ? 50 : 5;
                    int rep = 0;
                    auto hostMs = bench::timeHost(1, reps, [&] {
                        const int64_t q0 = (rep++ * batch) % nqAll;
                        index.search(batch, xq.data() + q0 * d, k, D.data(), I.data());
                    });
                    auto dD = res.alloc<float>(size_t(batch) * k);
                    auto dI = res.alloc<int64_t>(size_t(batch) * k);
                    faiss::SearchParametersIVF params;
                    params.nprobe = size_t(nprobe);
                    rep = 0;
                    const double devMs = bench::median(bench::timeDevice(res, 0, reps, [&] {
                        const int64_t q0 = (rep++ * batch) % nqAll;
                        index.searchDevice(
                                batch, qDev.data() + q0 * d, k, dD.data(), dI.data(), &params);
                    }));
                    // The coarse search alone, to isolate the list scan + merge.
                    auto cD = res.alloc<float>(size_t(batch) * nprobe);
                    auto cI = res.alloc<int64_t>(size_t(batch) * nprobe);
                    rep = 0;
                    const double coarseMs = bench::median(bench::timeDevice(res, 0, reps, [&] {
                        const int64_t q0 = (rep++ * batch) % nqAll;
                        index.quantizer().searchDevice(
                                batch, qDev.data() + q0 * d, int(nprobe), cD.data(), cI.data());
                    }));
                    const double p50 = bench::percentile(hostMs, 0.5);
                    const double p99 = bench::percentile(hostMs, 0.99);
                    const double floorMs = bytesPerQuery * batch / ceil.bytesPerSec * 1e3;
                    IvfSearchPlan plan = GpuIndexIVFFlatAccess::plan(index, batch, k, nprobe);
                    std::printf(
                            "| %lld | %lld | %d | %lld | %.0f | %.3f | %.3f | %.3f | %.3f | "
                            "%.3f | %.3f | %.3f | %.2f | %.2f | %lld | %s |\n",
                            (long long)nlist, (long long)nprobe, k, (long long)batch,
                            batch / (p50 * 1e-3), p50, p99, devMs, coarseMs, r1, r10, floorMs,
                            floorMs / devMs, floorMs / std::max(devMs - coarseMs, 1e-6),
                            (long long)plan.chunkLen, plan.fastMerge ? "fast" : "heap");
                    std::fflush(stdout);
                }
            }
        }
        std::printf("\n");
    }
    return 0;
}
