// Small IVF-Flat searches (batch 1, 16, 128) with and without CUDA graphs
// (GpuIndexIVFFlat::useSearchGraphs), in one process on one index: the host API's p50
// latency (host queries in, results out) and the device time (CUDA events around
// searchDevice on device queries), over nprobe 1..128 at k 10 and 100.
// Usage: bench_ivf_small [n_base (1000000)] [nlist (4096)]
//                        [--profile nprobe k batch [auto|per-query|list-major] [d (128)]]
// --profile: only three searches of that shape (any batch, the scan path forced if named,
// blobs of dimension d) between cudaProfilerStart and cudaProfilerStop, for
// `ncu --profile-from-start off` (benchs/NOTES.md); then the plan, and the median ms of
// the host API (host arrays) and of searchDevice (CUDA events) at that shape.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>
#include <faiss/IndexIVF.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IvfSearch.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_ivf_small: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const int64_t nlist = argc > 2 ? std::atoll(argv[2]) : 4096;
    const bool profile = argc > 6 && std::strcmp(argv[3], "--profile") == 0;
    const int d = profile && argc > 8 ? std::atoi(argv[8]) : 128;
    const int64_t nqAll = profile ? std::max<int64_t>(4096, std::atoll(argv[6])) : 4096;
    GpuResources res;
    bench::printDevice(res, bench::measureCeilings(res));
    datasets::ClusteredSpec spec{nb, d, 2000, 0.15f, 7};
    auto xb = datasets::clustered(spec, 0);
    spec.n = nqAll;
    auto xq = datasets::clustered(spec, 1);
    GpuIndexIVFFlatConfig config;
    if (profile && argc > 7) {
        const std::string path = argv[7];
        FAISS_THROW_IF_NOT_FMT(
                path == "auto" || path == "per-query" || path == "list-major",
                "bench_ivf_small: unknown scan path '%s'", path.c_str());
        config.scanPath = path == "per-query" ? IvfScanPath::kPerQuery
                : path == "list-major"        ? IvfScanPath::kListMajor
                                              : IvfScanPath::kAuto;
    }
    GpuIndexIVFFlat index(res, d, nlist, faiss::METRIC_L2, config);
    index.train(std::min<int64_t>(nb, 256 * nlist), xb.data());
    index.add(nb, xb.data());
    std::printf(
            "dataset: %lld x %d clustered (2000 blobs, spread 0.15), nlist %lld\n"
            "p50: host API search() ms (host arrays, queries cycling through %lld); device: "
            "median ms of CUDA events around searchDevice; off / on: useSearchGraphs\n\n",
            (long long)nb, d, (long long)nlist, (long long)nqAll);
    std::printf(
            "| nprobe | k | batch | p50 off | p50 on | p50 off/on | device off | device on | "
            "device off/on |\n|---|---|---|---|---|---|---|---|---|\n");
    auto qDev = res.alloc<float>(xq.size());
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    if (profile) {
        index.nprobe = size_t(std::atoi(argv[4]));
        const int k = std::atoi(argv[5]);
        const int64_t batch = std::atoll(argv[6]);
        auto dD = res.alloc<float>(size_t(batch) * k);
        auto dI = res.alloc<int64_t>(size_t(batch) * k);
        for (int i = 0; i < 6; ++i) {
            if (i == 3) {
                res.synchronize();
                cudaProfilerStart();
            }
            index.searchDevice(batch, qDev.data(), k, dD.data(), dI.data());
        }
        res.synchronize();
        cudaProfilerStop();
        const IvfSearchPlan plan =
                GpuIndexIVFFlatAccess::plan(index, batch, k, int64_t(index.nprobe));
        std::vector<float> D(size_t(batch) * k);
        std::vector<int64_t> I(size_t(batch) * k);
        const double host = bench::median(bench::timeHost(
                2, 7, [&] { index.search(batch, xq.data(), k, D.data(), I.data()); }));
        const double dev = bench::median(bench::timeDevice(res, 2, 7, [&] {
            index.searchDevice(batch, qDev.data(), k, dD.data(), dI.data());
        }));
        std::printf(
                "d %d nprobe %zu k %d batch %lld: %s, query tile %lld, row vectors %lld, chunk "
                "%lld; host API %.3f ms, searchDevice %.3f ms\n",
                d, index.nprobe, k, (long long)batch, plan.listMajor ? "list-major" : "per-query",
                (long long)plan.queryTile, (long long)plan.maxRowVectors, (long long)plan.chunkLen,
                host, dev);
        return 0;
    }
    for (int nprobe : {1, 4, 16, 32, 64, 128}) {
        index.nprobe = size_t(nprobe);
        for (int k : {10, 100}) {
            for (int64_t batch : {int64_t(1), int64_t(16), int64_t(128), int64_t(1024)}) {
                const int reps = batch == 1 ? 400 : batch == 16 ? 200 : batch == 128 ? 100 : 40;
                std::vector<float> D(batch * k);
                std::vector<int64_t> I(batch * k);
                auto dD = res.alloc<float>(size_t(batch) * k);
                auto dI = res.alloc<int64_t>(size_t(batch) * k);
                double p50[2], dev[2];
                for (int on = 0; on < 2; ++on) {
                    index.useSearchGraphs = on == 1;
                    int rep = 0;
                    p50[on] = bench::percentile(
                            bench::timeHost(
                                    3, reps,
                                    [&] {
                                        const int64_t q0 = (rep++ * batch) % (nqAll - batch);
                                        index.search(
                                                batch, xq.data() + q0 * d, k, D.data(), I.data());
                                    }),
                            0.5);
                    rep = 0;
                    dev[on] = bench::median(bench::timeDevice(res, 3, reps, [&] {
                        const int64_t q0 = (rep++ * batch) % (nqAll - batch);
                        index.searchDevice(batch, qDev.data() + q0 * d, k, dD.data(), dI.data());
                    }));
                }
                std::printf(
                        "| %d | %d | %lld | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", nprobe, k,
                        (long long)batch, p50[0], p50[1], p50[0] / p50[1], dev[0], dev[1],
                        dev[0] / dev[1]);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
