// kernels::selectRowsMin on few, short rows (the coarse search of a small batch):
// microseconds a call for each path forced (SelectRowsArgs::path) and for kAuto, from
// CUDA events around 200 back-to-back calls (so a call costs at least the launch rate).
// Usage: bench_select
#include <cstdio>
#include <random>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <kernels/Select.h>

#include "BenchUtil.h"

using namespace faiss_ext;

int main() {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_select: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    GpuResources res;
    bench::printDevice(res, bench::measureCeilings(res));
    const int64_t maxRows = 128, maxCols = 8192;
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<float> u(100.f, 200.f); // one exponent, as L2 keys
    std::vector<float> host(size_t(maxRows * maxCols));
    for (auto& v : host) {
        v = u(rng);
    }
    auto dist = res.alloc<float>(host.size());
    copyToDevice(dist.data(), host.data(), host.size(), res.stream());
    auto outD = res.alloc<float>(size_t(maxRows) * 2048);
    auto outI = res.alloc<int64_t>(size_t(maxRows) * 2048);
    std::printf(
            "us per call (200 calls between two events, median of 5); one segment a row; '-': "
            "the path does not take this k\n\n| rows | cols | k | warp | block | short | auto |\n"
            "|---|---|---|---|---|---|---|\n");
    for (int64_t rows : {int64_t(1), int64_t(16), int64_t(128)}) {
        for (int64_t cols : {int64_t(1024), int64_t(4096), int64_t(8192)}) {
            for (int k : {1, 10, 32, 64, 128, 1024}) {
                std::printf("| %lld | %lld | %d |", (long long)rows, (long long)cols, k);
                for (kernels::SelectPath p :
                     {kernels::SelectPath::kWarp, kernels::SelectPath::kBlock,
                      kernels::SelectPath::kShort, kernels::SelectPath::kAuto}) {
                    if (p == kernels::SelectPath::kWarp && k > kernels::kMaxWarpRowSelectK) {
                        std::printf(" - |");
                        continue;
                    }
                    kernels::SelectRowsArgs a;
                    a.dist = dist.data();
                    a.ldDist = cols;
                    a.nrows = rows;
                    a.ncols = cols;
                    a.k = k;
                    a.outD = outD.data();
                    a.outI = outI.data();
                    a.ldOut = k;
                    a.path = p;
                    const double ms = bench::median(bench::timeDevice(res, 1, 5, [&] {
                        for (int i = 0; i < 200; ++i) {
                            kernels::selectRowsMin(a, res.stream());
                        }
                    }));
                    std::printf(" %.1f |", ms * 1e3 / 200);
                }
                std::printf("\n");
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
