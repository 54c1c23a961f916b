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

namespace {

/// The coarse search's shape at batch 10000 and nlist 4096: 4096 rows of 4096 columns in
/// two segments of 2048, with and without a column bias (the centroid norms) and with
/// rows 4096 or 4128 floats apart; warp path, GB/s of the distances read once.
void wideRows(const GpuResources& res) {
    const int64_t rows = 4096, cols = 4096, ldMax = 4128;
    std::mt19937_64 rng(2);
    std::uniform_real_distribution<float> u(-200.f, -100.f);
    std::vector<float> host(size_t(rows * ldMax));
    for (auto& v : host) {
        v = u(rng);
    }
    std::vector<float> bias(static_cast<size_t>(cols));
    for (auto& v : bias) {
        v = u(rng) + 300.f;
    }
    auto dist = res.alloc<float>(host.size());
    auto dBias = res.alloc<float>(bias.size());
    copyToDevice(dist.data(), host.data(), host.size(), res.stream());
    copyToDevice(dBias.data(), bias.data(), bias.size(), res.stream());
    auto outD = res.alloc<float>(size_t(rows) * 2 * 32);
    auto outI = res.alloc<int64_t>(size_t(rows) * 2 * 32);
    std::printf(
            "\n4096 rows x 4096 columns, segments of 2048, warp path: us per call (median of 7 "
            "after 2) and GB/s of distances\n\n| k | ld | bias | us | GB/s |\n|---|---|---|---|---|\n");
    for (int k : {1, 4, 10, 32}) {
        for (int64_t ld : {int64_t(4096), ldMax}) {
            for (bool withBias : {false, true}) {
                kernels::SelectRowsArgs a;
                a.dist = dist.data();
                a.ldDist = ld;
                a.nrows = rows;
                a.ncols = cols;
                a.segLen = 2048;
                a.colBias = withBias ? dBias.data() : nullptr;
                a.k = k;
                a.outD = outD.data();
                a.outI = outI.data();
                a.ldOut = 2 * k;
                a.path = kernels::SelectPath::kWarp;
                const double ms = bench::median(bench::timeDevice(
                        res, 2, 7, [&] { kernels::selectRowsMin(a, res.stream()); }));
                std::printf(
                        "| %d | %lld | %s | %.1f | %.0f |\n", k, (long long)ld,
                        withBias ? "yes" : "no", ms * 1e3, rows * cols * 4.0 / (ms * 1e6));
            }
        }
    }
}

} // namespace

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
    wideRows(res);
    return 0;
}
