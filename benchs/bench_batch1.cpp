// Single-query device time, sized for ncu: IVF-Flat on 200K x 128 uniform vectors
// (nlist 4096, nprobe 1 and 32) and flat search on 200K and 1M x 128, k 10. Each case
// is warmed up first; only the timed single-query searches run between
// cudaProfilerStart and cudaProfilerStop, so that
//   ncu --profile-from-start off ... build-gpu/benchs/bench_batch1
// profiles them and nothing else (benchs/NOTES.md, "Warp selection in registers").
// Usage: bench_batch1 [searches per case (10)] [case: ivf1 | ivf32 | flat200k | flat1m |
// all (default)]: one case per ncu run keeps its kernels apart in ncu's per-kernel summary.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>
#include <faiss/IndexIVF.h>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/utils/CudaCheck.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_batch1: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const int searches = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
    const std::string only = argc > 2 ? argv[2] : "all";
    const int d = 128, k = 10;
    const int64_t nbSmall = 200000, nbLarge = 1000000;
    GpuResources res;
    bench::printDevice(res, bench::measureCeilings(res));

    auto xb = datasets::uniform(nbLarge, d, 1);
    auto xq = datasets::uniform(searches, d, 2);
    auto qDev = res.alloc<float>(xq.size());
    copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
    auto dD = res.alloc<float>(k);
    auto dI = res.alloc<int64_t>(k);

    GpuIndexIVFFlat ivf(res, d, 4096, faiss::METRIC_L2);
    ivf.train(nbSmall, xb.data());
    ivf.add(nbSmall, xb.data());
    GpuIndexFlat flatSmall(res, d, faiss::METRIC_L2);
    flatSmall.add(nbSmall, xb.data());
    GpuIndexFlat flatLarge(res, d, faiss::METRIC_L2);
    flatLarge.add(nbLarge, xb.data());
    faiss::SearchParametersIVF probe1, probe32;
    probe1.nprobe = 1;
    probe32.nprobe = 32;

    struct Case {
        const char* id;
        const char* name;
        std::function<void(int64_t)> search; ///< one query, number q
    };
    auto one = [&](const GpuIndex& index, const faiss::SearchParameters* params) {
        return [&index, params, &qDev, &dD, &dI](int64_t q) {
            index.searchDevice(1, qDev.data() + q * d, k, dD.data(), dI.data(), params);
        };
    };
    const std::vector<Case> cases = {
            {"ivf1", "IVF 200K nlist 4096 nprobe 1", one(ivf, &probe1)},
            {"ivf32", "IVF 200K nlist 4096 nprobe 32", one(ivf, &probe32)},
            {"flat200k", "Flat 200K", one(flatSmall, nullptr)},
            {"flat1m", "Flat 1M", one(flatLarge, nullptr)},
    };
    auto chosen = [&](const Case& c) { return only == "all" || only == c.id; };
    if (std::none_of(cases.begin(), cases.end(), chosen)) {
        std::fprintf(stderr, "bench_batch1: unknown case '%s'\n", only.c_str());
        return 2;
    }
    for (const Case& c : cases) {
        for (int64_t q = 0; q < searches && chosen(c); ++q) {
            c.search(q);
        }
    }
    res.synchronize();

    std::vector<double> medians;
    FAISS_EXT_CUDA_CHECK(cudaProfilerStart());
    for (const Case& c : cases) {
        int64_t q = 0;
        medians.push_back(
                chosen(c)
                        ? bench::median(bench::timeDevice(res, 0, searches, [&] { c.search(q++); }))
                        : -1.0);
    }
    FAISS_EXT_CUDA_CHECK(cudaProfilerStop());

    std::printf(
            "\n| case (k %d, batch 1, %d searches) | device ms (median) |\n|---|---|\n", k,
            searches);
    for (size_t i = 0; i < cases.size(); ++i) {
        if (chosen(cases[i])) {
            std::printf("| %s | %.4f |\n", cases[i].name, medians[i]);
        }
    }
    return 0;
}
