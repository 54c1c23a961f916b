// GpuIndexFlat's threshold path (impl/FlatThresholdSearch.h): its main pass in 3xTF32
// and in bf16x3 at the default tiles for k 10, 100, 1024, then bf16x3 against the shape
// of the main-pass tiles (queries per GEMM, bytes of the distance tile). 10000 queries,
// uniform [0,1) vectors; device ms: CUDA events around flatSearchThreshold, median of 5
// after a warm-up. With --profile [k], one search at the default tiles and precision
// (k 10 unless given) runs alone between cudaProfilerStart and cudaProfilerStop, for
//   ncu --profile-from-start off --print-summary per-kernel ... bench_flat_threshold --profile
// Usage: bench_flat_threshold [n_base (1M)] [d (128)] [--profile [k]]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/FlatThresholdSearch.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(
                stderr, "bench_flat_threshold: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const int d = argc > 2 ? std::atoi(argv[2]) : 128;
    const bool profile = argc > 3 && std::string(argv[3]) == "--profile";
    const int profileK = profile && argc > 4 ? std::atoi(argv[4]) : 10;
    const int64_t nq = 10000;
    GpuResources res;
    if (!profile) {
        bench::printDevice(res, bench::measureCeilings(res));
    }
    const auto xb = datasets::uniform(nb, d, 1);
    const auto xq = datasets::uniform(nq, d, 2);
    FlatStorage base(res, d);
    base.append(nb, xb.data());
    auto q = res.alloc<float>(xq.size());
    copyToDevice(q.data(), xq.data(), xq.size(), res.stream());
    FlatSearchInput in;
    in.queries = q.data();
    in.nq = nq;
    in.base = base.vectors();
    in.baseNorms = base.norms();
    in.nb = nb;
    in.d = d;
    in.path = FlatSearchPath::kThreshold;

    auto search = [&](int k, const FlatThresholdTiles& tiles) {
        auto D = res.alloc<float>(size_t(nq) * k);
        auto I = res.alloc<int64_t>(size_t(nq) * k);
        return bench::median(bench::timeDevice(res, 1, 5, [&] {
            flatSearchThreshold(res, in, k, res.tempMemoryBytes(), D.data(), I.data(), tiles);
        }));
    };
    if (profile) {
        auto D = res.alloc<float>(size_t(nq) * profileK);
        auto I = res.alloc<int64_t>(size_t(nq) * profileK);
        flatSearchThreshold(res, in, profileK, res.tempMemoryBytes(), D.data(), I.data());
        res.synchronize();
        cudaProfilerStart();
        flatSearchThreshold(res, in, profileK, res.tempMemoryBytes(), D.data(), I.data());
        res.synchronize();
        cudaProfilerStop();
        return 0;
    }
    std::printf(
            "n_base=%lld d=%d n_query=%lld, uniform [0,1)\n\n"
            "| main pass | k | query tile | distance tile | base tile | device ms |\n"
            "|---|---|---|---|---|---|\n",
            (long long)nb, d, (long long)nq);
    auto row = [&](GpuFlatPrecision precision, int k, const FlatThresholdTiles& tiles) {
        in.precision = precision;
        const kernels::GemmProduct product = flatGemmProduct(
                precision, FlatSearchPath::kThreshold, res.computeCapabilityMajor());
        const FlatThresholdPlan p =
                planFlatThreshold(nq, nb, d, k, product, res.tempMemoryBytes(), tiles);
        std::printf(
                "| %s | %d | %lld | %zu MB | %lld | %.3f |\n",
                product == kernels::GemmProduct::kBF16x3 ? "bf16x3" : "3xTF32", k,
                (long long)tiles.maxQueryTile, tiles.distTileBytes >> 20, (long long)p.baseTile,
                search(k, tiles));
    };
    for (int k : {10, 100, 1024}) {
        for (GpuFlatPrecision precision : {GpuFlatPrecision::kTF32x3, GpuFlatPrecision::kAuto}) {
            row(precision, k, FlatThresholdTiles());
        }
    }
    for (int64_t qt : {int64_t(1024), int64_t(2048), int64_t(4096)}) {
        for (size_t mb : {size_t(32), size_t(64), size_t(128), size_t(256)}) {
            FlatThresholdTiles tiles;
            tiles.maxQueryTile = qt;
            tiles.distTileBytes = mb << 20;
            row(GpuFlatPrecision::kAuto, 10, tiles);
        }
    }
    return 0;
}
