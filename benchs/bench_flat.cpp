// GpuIndexFlat throughput beside its floors: n_base = 1M, d = 128.
// Usage: bench_flat [--nq N,N,...] [--float16-copy | --int8-copy] [n_base] [uniform|clustered]
//                   [auto|fp32|tf32x3] [d] [k ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/FlatRadixSearch.h>
#include <faiss_ext/impl/FlatRerankSearch.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/FlatThresholdSearch.h>
#include <kernels/SearchCopy.h>

#include "BenchUtil.h"
#include "Synthetic.h"

using namespace faiss_ext;

int main(int argc, char** argv) {
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_flat: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    // bench_flat [--nq N,N,...] [--float16-copy | --int8-copy] [n_base] [uniform|clustered]
    // [auto|fp32|tf32x3] [d] [k ...]: --nq picks the batch sizes (default 1, 8, 16, 256,
    // 1024, 10000); --float16-copy / --int8-copy build the index with that copy
    // (the forced paths below always have the copy beside the base); clustered is
    // bench_ivf's set (2000 blobs, spread 0.15); the third argument forces
    // GpuIndexFlatConfig's precision; the ks default to 1, 10, 100 and 1024.
    std::vector<int64_t> batches = {1, 8, 16, 256, 1024, 10000};
    if (argc > 2 && std::string(argv[1]) == "--nq") {
        batches.clear();
        for (const char* p = argv[2]; *p != '\0';) {
            char* end = nullptr;
            batches.push_back(std::strtoll(p, &end, 10));
            if (end == p || (*end != ',' && *end != '\0')) {
                std::fprintf(stderr, "bench_flat: --nq takes numbers separated by commas\n");
                return 2;
            }
            p = *end == ',' ? end + 1 : end;
        }
        argc -= 2;
        argv += 2;
    }
    // The copy the index keeps (none by default) and the one the forced paths read.
    bool indexCopy = false;
    kernels::CopyCode copy = kernels::CopyCode::kFloat16;
    if (argc > 1 &&
        (std::string(argv[1]) == "--float16-copy" || std::string(argv[1]) == "--int8-copy")) {
        indexCopy = true;
        copy = std::string(argv[1]) == "--int8-copy" ? kernels::CopyCode::kInt8
                                                     : kernels::CopyCode::kFloat16;
        --argc;
        ++argv;
    }
    const char* copyName = copy == kernels::CopyCode::kInt8 ? "int8" : "float16";
    const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const bool clustered = argc > 2 && std::string(argv[2]) == "clustered";
    const std::string precision = argc > 3 ? argv[3] : "auto";
    GpuIndexFlatConfig cfg;
    cfg.precision = precision == "fp32" ? GpuFlatPrecision::kFloat32
            : precision == "tf32x3"     ? GpuFlatPrecision::kTF32x3
                                        : GpuFlatPrecision::kAuto;
    cfg.float16Copy = indexCopy && copy == kernels::CopyCode::kFloat16;
    cfg.int8Copy = indexCopy && copy == kernels::CopyCode::kInt8;
    const int d = argc > 4 ? std::atoi(argv[4]) : 128;
    std::vector<int> ks;
    for (int i = 5; i < argc; ++i) {
        ks.push_back(std::atoi(argv[i]));
    }
    if (ks.empty()) {
        ks = {1, 10, 100, 1024};
    }
    datasets::ClusteredSpec spec{nb, d, 2000, 0.15f, 1};
    auto makeQueries = [&](int64_t nq) {
        if (!clustered) {
            return datasets::uniform(nq, d, 2 + nq);
        }
        datasets::ClusteredSpec qs = spec;
        qs.n = nq;
        return datasets::clustered(qs, 2 + nq);
    };
    GpuResources res;
    bench::Ceilings ceil = bench::measureCeilings(res);
    bench::printDevice(res, ceil);

    auto xb = clustered ? datasets::clustered(spec, 0) : datasets::uniform(nb, d, 1);
    std::printf(
            "data: %s, precision %s\n",
            clustered ? "clustered (2000 blobs, spread 0.15)" : "uniform [0,1)", precision.c_str());
    GpuIndexFlat index(res, d, faiss::METRIC_L2, cfg);
    index.add(nb, xb.data());
    // A device copy of the base (with its low-precision copy) for the forced paths and the FP32
    // GEMM tiles alone.
    FlatStorage base(res, d, copy);
    base.append(nb, xb.data());
    std::printf(
            "n_base=%lld d=%d device memory %.1f MiB (%.1f bytes/vector)%s; the %s copy's "
            "relative error bound %.3g\n\n",
            (long long)nb, d, index.deviceMemoryBytes() / 1048576.0,
            double(index.deviceMemoryBytes()) / nb, indexCopy ? ", its copy kept" : "", copyName,
            base.copyMaxRelError());

    std::printf(
            "| n_query | k | device ms (median) | QPS (device) | API ms | QPS (API) | API ms without"
            " graphs | path |"
            " tiles path ms | threshold path ms | rerank path ms (re-searched) | radix path ms |"
            " radix-copy path ms | FP32 GEMM tiles alone ms |"
            " floor ms (bytes) | floor ms (copy bytes) | floor ms (FP32 flops) |"
            " floor ms (3xTF32 flops) | floor ms (bf16x3 flops) | floor / device |\n");
    std::printf(
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const FlatStorage& stored = base;
    for (int64_t nq : batches) {
        auto xq = makeQueries(nq);
        auto qDev = res.alloc<float>(size_t(nq) * d);
        copyToDevice(qDev.data(), xq.data(), xq.size(), res.stream());
        for (int k : ks) {
            auto dDev = res.alloc<float>(size_t(nq) * k);
            auto iDev = res.alloc<int64_t>(size_t(nq) * k);
            const int reps = nq >= 10000 ? 5 : 30;
            double devMs = bench::median(bench::timeDevice(res, 2, reps, [&] {
                index.searchDevice(nq, qDev.data(), k, dDev.data(), iDev.data());
            }));
            // flatSearch with each path forced (same precision), on the same stored base.
            FlatSearchInput in;
            in.queries = qDev.data();
            in.nq = nq;
            in.base = stored.vectors();
            in.baseNorms = stored.norms();
            in.nb = nb;
            in.d = d;
            in.precision = cfg.precision;
            in.copy.code = copy;
            in.copy.rows = stored.copyRows();
            in.copy.scales = stored.copyScales();
            in.copy.maxRelError = stored.copyMaxRelError();
            in.copy.maxSquaredNorm = stored.copyMaxSquaredNorm();
            auto timePath = [&](FlatSearchPath path) {
                in.path = path;
                return bench::median(bench::timeDevice(
                        res, 1, reps, [&] { flatSearch(res, in, k, dDev.data(), iDev.data()); }));
            };
            const double tilesMs = timePath(FlatSearchPath::kTiles);
            // The threshold path where its plan fits the budget (the sample's copy of a large
            // base may not): -1 else.
            const bool thresholdRuns = nb < (int64_t(1) << 31) &&
                    planFlatThreshold(
                            nq, nb, d, k,
                            flatGemmProduct(
                                    cfg.precision, FlatSearchPath::kThreshold,
                                    res.computeCapabilityMajor()),
                            res.tempMemoryBytes())
                                    .queryGroup > 0;
            const double thresholdMs = thresholdRuns ? timePath(FlatSearchPath::kThreshold) : -1.0;
            // The rerank path, and how many queries it searched again in FP32.
            int64_t rerankAgain = 0;
            const double rerankMs = bench::median(bench::timeDevice(res, 1, reps, [&] {
                rerankAgain = flatSearchRerank(
                        res, in, k, res.tempMemoryBytes(), dDev.data(), iDev.data());
            }));
            // The radix path where it can run (FP32 rows within the budget): -1 else.
            const bool radixRuns = nq <= 65535 &&
                    flatGemmProduct(
                            cfg.precision, FlatSearchPath::kRadix, res.computeCapabilityMajor()) ==
                            kernels::GemmProduct::kFloat32 &&
                    flatRadixBytes(nq, nb, k) <= res.tempMemoryBytes();
            const double radixMs = radixRuns ? timePath(FlatSearchPath::kRadix) : -1.0;
            // The copy's radix path, a query at a time: a few queries only.
            const double radixCopyMs = nq <= 8 && flatRadixBytes(1, nb, k) <= res.tempMemoryBytes()
                    ? timePath(FlatSearchPath::kRadixCopy)
                    : -1.0;
            in.path = FlatSearchPath::kAuto;
            if (!indexCopy) {
                in.copy = FlatSearchCopy(); // the path the index takes: without a copy
            }
            const FlatSearchPath taken = flatSearchPathFor(res, in, k);
            // The tiles path's FP32 GEMMs alone: what it costs beyond them is the selection.
            FlatSearchInput shape = in;
            shape.precision = GpuFlatPrecision::kFloat32;
            const FlatTiling t = planFlatSearch(res, shape, k, res.tempMemoryBytes());
            auto tile = res.alloc<float>(size_t(t.queryTile) * t.baseTile);
            const float alpha = -2.f, beta = 0.f;
            double gemmMs = bench::median(bench::timeDevice(res, 1, reps, [&] {
                for (int64_t q0 = 0; q0 < nq; q0 += t.queryTile) {
                    for (int64_t b0 = 0; b0 < nb; b0 += t.baseTile) {
                        int m = int(std::min(t.baseTile, nb - b0));
                        int n = int(std::min(t.queryTile, nq - q0));
                        cublasSgemm(
                                res.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &alpha,
                                stored.vectors() + b0 * d, d, qDev.data() + q0 * d, d, &beta,
                                tile.data(), m);
                    }
                }
            }));
            std::vector<float> D(nq * k);
            std::vector<int64_t> I(nq * k);
            double apiMs = bench::median(bench::timeHost(
                    1, reps, [&] { index.search(nq, xq.data(), k, D.data(), I.data()); }));
            // The same calls kernel by kernel (the above replay a CUDA graph where the
            // shape is held as one: GpuIndexFlat::useSearchGraphs).
            index.useSearchGraphs = false;
            const double apiNoGraphMs = bench::median(bench::timeHost(
                    1, reps, [&] { index.search(nq, xq.data(), k, D.data(), I.data()); }));
            index.useSearchGraphs = true;
            // Fewest bytes: the base and its norms once, the queries, the results.
            double bytes = double(nb) * (d + 1) * 4 + double(nq) * d * 4 + double(nq) * k * 12;
            double flops = 2.0 * nq * double(nb) * d;
            double floorBytesMs = bytes / ceil.bytesPerSec * 1e3;
            // The copy's pass: its rows, their scales and the base's norms.
            double floorCopyMs =
                    double(nb) * (kernels::copyRowBytes(copy, d) + 8) / ceil.bytesPerSec * 1e3;
            double floorFlopsMs = flops / ceil.flopsPerSec * 1e3;
            double floorTf32Ms = 3 * flops / ceil.tf32FlopsPerSec * 1e3;
            double floorBf16Ms = 3 * flops / ceil.bf16FlopsPerSec * 1e3;
            // The main pass's arithmetic on the path taken, and its floor.
            const kernels::GemmProduct product =
                    flatGemmProduct(cfg.precision, taken, res.computeCapabilityMajor());
            const double floorProductMs = product == kernels::GemmProduct::kBF16x3 ? floorBf16Ms
                    : product == kernels::GemmProduct::kTF32x3                     ? floorTf32Ms
                                                                                   : floorFlopsMs;
            const char* productName = product == kernels::GemmProduct::kBF16x3 ? " bf16x3"
                    : product == kernels::GemmProduct::kTF32x3                 ? " 3xTF32"
                                                                               : "";
            const double floorMs = std::max(
                    taken == FlatSearchPath::kRadixCopy ? floorCopyMs : floorBytesMs,
                    floorProductMs);
            std::printf(
                    "| %lld | %d | %.3f | %.0f | %.3f | %.0f | %.3f | %s%s | %.3f | %.3f | %.3f (%lld) | %.3f |"
                    " %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f |\n",
                    (long long)nq, k, devMs, nq / (devMs * 1e-3), apiMs, nq / (apiMs * 1e-3),
                    apiNoGraphMs, flatSearchPathName(taken), productName, tilesMs, thresholdMs,
                    rerankMs, (long long)rerankAgain, radixMs, radixCopyMs, gemmMs, floorBytesMs,
                    floorCopyMs, floorFlopsMs, floorTf32Ms, floorBf16Ms, floorMs / devMs);
        }
    }
    return 0;
}
