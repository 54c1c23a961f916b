// GpuIndexFlat's exact search (FP32) against the size of its distance tile, which the
// temporary-memory budget sets (impl/FlatSearch.h, planFlatSearch): each tile is
// written by the GEMM and read back by the selection, so a tile that stays in the L2
// cache (50 MB on an H100) saves that round trip through DRAM, at the price of smaller
// GEMMs and more launches. Prints, per budget, the tile shape and bytes, the device time
// of the search and of its GEMM tiles alone.
// Usage: bench_flat_tiles [n_base] [d]   (defaults 1M, 128; uniform [0,1) vectors)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(
                stderr, "bench_flat_tiles: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const int d = argc > 2 ? std::atoi(argv[2]) : 128;
    const auto xb = datasets::uniform(nb, d, 1);
    {
        GpuResources res;
        bench::printDevice(res, bench::measureCeilings(res));
    }
    std::printf(
            "n_base=%lld d=%d, FP32, uniform [0,1); device ms: CUDA events around "
            "searchDevice, median of 5 after a warm-up; GEMM ms: the same tiles' cuBLAS "
            "SGEMMs alone\n\n",
            (long long)nb, d);
    std::printf(
            "| temp MiB | n_query | k | query tile | base tile | tile MB | tiles | device ms | "
            "GEMM ms | selection ms (device - GEMM) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t mib :
         {size_t(16), size_t(32), size_t(64), size_t(128), size_t(256), size_t(1024),
          size_t(4096)}) {
        GpuResourcesConfig rc;
        rc.tempMemoryBytes = mib << 20;
        GpuResources res(rc);
        GpuIndexFlatConfig cfg;
        cfg.precision = GpuFlatPrecision::kFloat32;
        GpuIndexFlat index(res, d, faiss::METRIC_L2, cfg);
        index.add(nb, xb.data());
        // A device copy of the base for timing the GEMM tiles alone.
        FlatStorage base(res, d);
        base.append(nb, xb.data());
        for (int64_t nq : {int64_t(1024), int64_t(10000)}) {
            const auto xq = datasets::uniform(nq, d, 2 + nq);
            auto qDev = res.alloc<float>(size_t(nq) * d);
            copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
            for (int k : {10, 100}) {
                FlatSearchInput shape;
                shape.nq = nq;
                shape.nb = nb;
                shape.d = d;
                const FlatTiling t = planFlatSearch(res, shape, k, res.tempMemoryBytes());
                auto dDev = res.alloc<float>(size_t(nq) * k);
                auto iDev = res.alloc<int64_t>(size_t(nq) * k);
                const double devMs = bench::median(bench::timeDevice(res, 1, 5, [&] {
                    index.searchDevice(nq, qDev.data(), k, dDev.data(), iDev.data());
                }));
                // The search's own GEMMs, into one tile, without the selection.
                auto tile = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
                const float alpha = -2.f, beta = 0.f;
                const double gemmMs = bench::median(bench::timeDevice(res, 1, 5, [&] {
                    for (int64_t q0 = 0; q0 < nq; q0 += t.queryTile) {
                        for (int64_t b0 = 0; b0 < nb; b0 += t.baseTile) {
                            const int m = int(std::min(t.baseTile, nb - b0));
                            const int n = int(std::min(t.queryTile, nq - q0));
                            cublasSgemm(
                                    res.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &alpha,
                                    base.vectors() + b0 * d, d, qDev.data() + q0 * d, d, &beta,
                                    tile.data(), m);
                        }
                    }
                }));
                const int64_t tiles = ((nq + t.queryTile - 1) / t.queryTile) *
                        ((nb + t.baseTile - 1) / t.baseTile);
                std::printf(
                        "| %zu | %lld | %d | %lld | %lld | %.1f | %lld | %.3f | %.3f | %.3f |\n",
                        mib, (long long)nq, k, (long long)t.queryTile, (long long)t.baseTile,
                        double(t.queryTile) * double(t.baseTile) * 4 / 1e6, (long long)tiles, devMs,
                        gemmMs, devMs - gemmMs);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
