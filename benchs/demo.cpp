// The quick-start demo: builds each faiss_ext index on a generated clustered dataset,
// searches it, and prints recall and QPS next to FAISS's CPU index.
#include <cstdio>
#include <vector>

#include <faiss/IndexFlat.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>

#include "BenchUtil.h"
#include "DemoTable.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main() {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(
                stderr, "faiss_ext demo: no CUDA device found; the demo needs an NVIDIA GPU.\n");
        return 2;
    }
    const int d = 64, k = 10;
    datasets::ClusteredSpec spec{200000, d, 256, 0.05f, 42};
    auto xb = datasets::clustered(spec, 0);
    const int64_t nq = 1000;
    spec.n = nq;
    auto xq = datasets::clustered(spec, 1);
    std::printf(
            "dataset: %lld base vectors, %lld queries, d=%d, %d clusters; k=%d\n\n",
            (long long)200000, (long long)nq, d, spec.clusters, k);

    GpuResources res;
    std::vector<float> gtD(nq * k), D(nq * k);
    std::vector<int64_t> gtI(nq * k), I(nq * k);

    std::printf(
            "| index | recall@1 | recall@10 | QPS (batch %lld) |\n|---|---|---|---|\n",
            (long long)nq);
    faiss::IndexFlatL2 cpu(d);
    cpu.add(200000, xb.data());
    double cpuMs = bench::median(
            bench::timeHost(0, 3, [&] { cpu.search(nq, xq.data(), k, gtD.data(), gtI.data()); }));
    std::printf(
            "| faiss CPU IndexFlatL2 (ground truth) | 1.000 | 1.000 | %.0f |\n",
            nq / (cpuMs * 1e-3));

    GpuIndexFlat flat(res, d);
    flat.add(200000, xb.data());
    double ms = bench::median(
            bench::timeHost(1, 5, [&] { flat.search(nq, xq.data(), k, D.data(), I.data()); }));
    std::printf(
            "| faiss_ext GpuIndexFlat | %.3f | %.3f | %.0f |\n",
            bench::recallAt(gtI, k, I, k, nq, 1), bench::recallAt(gtI, k, I, k, nq, 10),
            nq / (ms * 1e-3));

    // IVF: 1024 lists trained by GPU k-means, 16 probed per query.
    GpuIndexIVFFlat ivf(res, d, 1024);
    ivf.train(200000, xb.data());
    ivf.add(200000, xb.data());
    ivf.nprobe = 16;
    ms = bench::median(
            bench::timeHost(1, 5, [&] { ivf.search(nq, xq.data(), k, D.data(), I.data()); }));
    std::printf(
            "| faiss_ext GpuIndexIVFFlat (nlist 1024, nprobe 16) | %.3f | %.3f | %.0f |\n",
            bench::recallAt(gtI, k, I, k, nq, 1), bench::recallAt(gtI, k, I, k, nq, 10),
            nq / (ms * 1e-3));

    // BANG graph (R = 64), worklist L = 64.
    GpuIndexBang bang(res, d);
    bang.add(200000, xb.data());
    bang.search_L = 64;
    ms = bench::median(
            bench::timeHost(1, 5, [&] { bang.search(nq, xq.data(), k, D.data(), I.data()); }));
    std::printf(
            "| faiss_ext GpuIndexBang (R 64, search_L 64) | %.3f | %.3f | %.0f |\n",
            bench::recallAt(gtI, k, I, k, nq, 1), bench::recallAt(gtI, k, I, k, nq, 10),
            nq / (ms * 1e-3));
    return 0;
}
