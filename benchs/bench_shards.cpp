// Throughput of 1 GPU against 2 shards and 2 replicas (faiss::IndexShards /
// IndexReplicas over faiss_ext indexes, one GpuResources per device), batch 10,000
// host queries, k = 10, for Flat, IVF-Flat and Bang.
//
// bench_shards [n_base=1000000] [kinds=flat,ivf,bang] [d=128]
// Needs 2 CUDA devices (exits 2 with fewer).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/gpu_multiple.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

namespace {

constexpr int64_t kBatch = 10000;
constexpr int kK = 10;

struct Kind {
    std::string name;
    GpuPartFactory make;
    bool trains;
    /// Sets the search knob of one part.
    std::function<void(GpuIndex&)> tune;
};

GpuPartsConfig onDevices(std::vector<int> devices) {
    GpuPartsConfig c;
    c.devices = std::move(devices);
    return c;
}

/// Median queries per second of searches of the batch.
double qps(const faiss::Index& index, const std::vector<float>& xq) {
    std::vector<float> D(size_t(kBatch * kK));
    std::vector<int64_t> I(size_t(kBatch * kK));
    auto ms =
            bench::timeHost(1, 5, [&] { index.search(kBatch, xq.data(), kK, D.data(), I.data()); });
    return double(kBatch) / (bench::median(ms) / 1e3);
}

template <typename Wrapper>
double filledQps(
        const Kind& kind,
        std::vector<int> devices,
        const std::vector<float>& xb,
        int64_t nb,
        const std::vector<float>& xq) {
    Wrapper index(onDevices(std::move(devices)), kind.make);
    if (kind.trains) {
        index.train(std::min<int64_t>(nb, 200000), xb.data());
    }
    index.add(nb, xb.data());
    index.runOnIndex([&](int, faiss::Index* part) { kind.tune(dynamic_cast<GpuIndex&>(*part)); });
    return qps(index, xq);
}

} // namespace

int main(int argc, char** argv) {
    const int devices = GpuResources::deviceCount();
    if (devices < 2) {
        std::fprintf(stderr, "bench_shards: needs 2 CUDA devices, found %d\n", devices);
        return 2;
    }
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const std::string kinds = argc > 2 ? argv[2] : "flat,ivf,bang";
    const int d = argc > 3 ? std::atoi(argv[3]) : 128;
    datasets::ClusteredSpec spec{nb, d, 2000, 0.15f, 1};
    const auto xb = datasets::clustered(spec, 0);
    spec.n = kBatch;
    const auto xq = datasets::clustered(spec, 1);

    std::vector<Kind> all = {
            {"flat", flatParts(d), false, [](GpuIndex&) {}},
            {"ivf", ivfFlatParts(d, 4096), true,
             [](GpuIndex& p) { dynamic_cast<GpuIndexIVFFlat&>(p).nprobe = 32; }},
            {"bang", bangParts(d), false,
             [](GpuIndex& p) { dynamic_cast<GpuIndexBang&>(p).search_L = 64; }},
    };
    std::printf(
            "bench_shards: %lld x %d clustered, batch %lld host queries, k=%d, %d devices\n",
            (long long)nb, d, (long long)kBatch, kK, devices);
    std::printf("(ivf: nlist 4096, nprobe 32; bang: default build, search_L 64)\n\n");
    std::printf("| index | 1 GPU QPS | 2 shards QPS | x | 2 replicas QPS | x |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (const Kind& kind : all) {
        if (kinds.find(kind.name) == std::string::npos) {
            continue;
        }
        const double one = filledQps<GpuIndexShards>(kind, {0}, xb, nb, xq);
        const double shards = filledQps<GpuIndexShards>(kind, {0, 1}, xb, nb, xq);
        const double replicas = filledQps<GpuIndexReplicas>(kind, {0, 1}, xb, nb, xq);
        std::printf(
                "| %s | %.0f | %.0f | %.2f | %.0f | %.2f |\n", kind.name.c_str(), one, shards,
                shards / one, replicas, replicas / one);
        std::fflush(stdout);
    }
    return 0;
}
