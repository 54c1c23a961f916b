// Filtered search (issue 19): GpuIndexFlat, GpuIndexIVFFlat (nlist 4096, nprobe 32) and
// GpuIndexBang (default build, search_L 40 and 80) with no filter and with faiss's own
// selectors allowing 50%, 10% and 1% of the ids (IDSelectorBitmap of random ids,
// IDSelectorRange of contiguous ids), passed as SearchParameters::sel: QPS at batch 10000
// and batch 1, each beside the same index's unfiltered time, and recall@10 against exact
// search under the same selector (GpuIndexFlat). Ends with the targets: filtered
// time at most 1.3x the unfiltered time at 50% allowed for Flat and IVF-Flat; Bang's
// recall@10 at 10% and 1% allowed within 0.02 of its unfiltered recall at the same
// search_L (set by the issue on the real SIFT set).
//
// bench_filtered [--sift DIR] [--quick]
//   default     1M x 128 clustered vectors (bench_ivf's set: 2000 blobs, spread 0.15) and
//               10,000 queries
//   --sift DIR  the real SIFT set: DIR/base.bvecs (or base.fvecs) and DIR/query.bvecs (or
//               query.fvecs), made as benchs/datasets/README.md says
//   --quick     200K base vectors and 1,000 queries (with --sift: the first rows of each file)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <faiss/IndexIVF.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/IndexAccess.h>

#include "BenchUtil.h"
#include "DemoTable.h"
#include "Synthetic.h"
#include "VecsIO.h"

using namespace faiss_ext;

namespace {

constexpr int kK = 10;
constexpr int64_t kNlist = 4096;
constexpr size_t kNprobe = 32;
constexpr int kBangSearchL[] = {40, 80};
constexpr double kFractions[] = {0.5, 0.1, 0.01};
constexpr int kBatchReps = 5;       // timed calls of the whole query set, after one warm-up
constexpr int kSingleQueries = 200; // timed single-query calls, after 10 warm-up ones

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Dataset {
    std::string description;
    int d = 0;
    int64_t nb = 0;
    int64_t nq = 0;
    std::vector<float> xb; ///< nb x d
    std::vector<float> xq; ///< nq x d
};

Dataset loadSift(const std::string& dir, int64_t maxBase, int64_t maxQueries) {
    datasets::Matrix<float> base = datasets::readRowsAsFloat(dir, "base", maxBase);
    datasets::Matrix<float> query = datasets::readRowsAsFloat(dir, "query", maxQueries);
    if (base.d != query.d) {
        throw std::runtime_error("base and query vectors of " + dir + " differ in dimension");
    }
    Dataset s;
    // make_sift_wallpapers.py keeps the drawn base rows in the order of their pictures.
    s.description = "SIFT " + dir + " (sift-wallpapers: base rows in the order of their " +
            "pictures, so an id range is a block of pictures)";
    s.d = base.d;
    s.nb = base.n;
    s.nq = query.n;
    s.xb = std::move(base.data);
    s.xq = std::move(query.data);
    return s;
}

Dataset makeClustered(int64_t nb, int64_t nq) {
    datasets::ClusteredSpec spec{nb, 128, 2000, 0.15f, 7}; // bench_ivf's defaults
    Dataset s;
    s.description = "clustered (" + std::to_string(spec.clusters) + " blobs, spread 0.15)";
    s.d = spec.d;
    s.nb = nb;
    s.nq = nq;
    s.xb = datasets::clustered(spec, 0);
    spec.n = nq;
    s.xq = datasets::clustered(spec, 1);
    return s;
}

/// The filter of one row of the table: none (sel null) or one faiss selector.
struct Filter {
    std::string name;
    double fraction = 1; ///< of the ids allowed
    int64_t allowed = 0;
    std::vector<uint8_t> bitmap; ///< IDSelectorBitmap's bytes (a move keeps the buffer)
    std::unique_ptr<faiss::IDSelector> sel;
};

/// No filter, then for each fraction a random set of ids (IDSelectorBitmap; the sets are
/// nested, each a prefix of one seeded permutation) and a range of ids centred in [0, n)
/// (IDSelectorRange).
std::vector<Filter> makeFilters(int64_t n) {
    std::vector<Filter> filters;
    filters.push_back({"none", 1.0, n, {}, nullptr});
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(19));
    for (double f : kFractions) {
        Filter b{"random (bitmap)", f, int64_t(std::llround(f * n)), {}, nullptr};
        b.bitmap.assign(size_t((n + 7) / 8), 0);
        for (int64_t i = 0; i < b.allowed; ++i) {
            b.bitmap[size_t(perm[i] >> 3)] |= uint8_t(1u << (perm[i] & 7));
        }
        b.sel = std::make_unique<faiss::IDSelectorBitmap>(b.bitmap.size(), b.bitmap.data());
        filters.push_back(std::move(b));
    }
    for (double f : kFractions) {
        Filter r{"range", f, int64_t(std::llround(f * n)), {}, nullptr};
        const int64_t imin = (n - r.allowed) / 2;
        r.sel = std::make_unique<faiss::IDSelectorRange>(imin, imin + r.allowed);
        filters.push_back(std::move(r));
    }
    return filters;
}

/// One index under one SearchParameters.
struct Measured {
    double batchMs = 0;     ///< median wall time of a search of all queries
    double singleMs = 0;    ///< median wall time of a single-query search
    std::vector<int64_t> I; ///< results of all queries (nq x kK)
};

/// Host arrays in and out: search() returns once the results are on the host, so the
/// wall time covers the device work and both copies.
Measured measure(
        const faiss::Index& index,
        const Dataset& data,
        const faiss::SearchParameters& params) {
    Measured m;
    std::vector<float> D(size_t(data.nq) * kK);
    m.I.resize(D.size());
    m.batchMs = bench::median(bench::timeHost(1, kBatchReps, [&] {
        index.search(data.nq, data.xq.data(), kK, D.data(), m.I.data(), &params);
    }));
    std::vector<float> D1(kK);
    std::vector<int64_t> I1(kK);
    int64_t q = 0;
    m.singleMs = bench::median(bench::timeHost(10, kSingleQueries, [&] {
        const float* x = data.xq.data() + size_t(q++ % data.nq) * data.d;
        index.search(1, x, kK, D1.data(), I1.data(), &params);
    }));
    return m;
}

/// The plan of GpuIndexBang's search under a filter of `allowed` nodes, as its search
/// makes it (impl/BangFilteredSearch.h; the index does not report its choice).
BangFilterPlan bangPlan(const GpuIndexBang& bang, int searchL, int64_t allowed) {
    return planBangFilteredSearchOnDevice(
            allowed, bang.nodeCount(), GpuIndexBang::effectiveL(searchL, kK), kK,
            bang.graphDegree(), bang.d, bang.bangConfig().pqSubquantizers,
            GpuIndexBang::kMaxSearchL, bang.resources().maxSharedMemoryPerBlock());
}

/// "walk L=W": the graph walk with worklist W (filtered: widened by the plan); "exact":
/// exact search over the allowed nodes.
std::string bangPath(const GpuIndexBang& bang, int searchL, const Filter& f) {
    if (!f.sel) {
        return "walk L=" + std::to_string(GpuIndexBang::effectiveL(searchL, kK));
    }
    const BangFilterPlan p = bangPlan(bang, searchL, f.allowed);
    return p.exact ? "exact" : "walk L=" + std::to_string(p.walkL);
}

/// One of Bang's two filtered paths, forced, on device queries and results.
struct Forced {
    double batchMs = 0;  ///< CUDA events, median over calls of all queries
    double singleMs = 0; ///< CUDA events, median over single-query calls
    double recall = 0;   ///< recall@10 of all queries
};

/// search(q0, n) searches queries q0 .. q0 + n - 1 into rows q0 .. q0 + n - 1 of outI.
Forced timeForced(
        const GpuResources& res,
        int64_t nq,
        const std::vector<int64_t>& gt,
        const int64_t* outI,
        const std::function<void(int64_t, int64_t)>& search) {
    Forced r;
    r.batchMs = bench::median(bench::timeDevice(res, 1, kBatchReps, [&] { search(0, nq); }));
    const std::vector<int64_t> I = copyToHostVector(outI, size_t(nq) * kK, res.stream());
    r.recall = bench::recallAt(gt, kK, I, kK, nq, kK);
    int64_t q = 0;
    r.singleMs =
            bench::median(bench::timeDevice(res, 10, kSingleQueries, [&] { search(q++ % nq, 1); }));
    return r;
}

/// The index of one group of rows of the table, with its SearchParameters (whose sel is
/// set per row).
struct Variant {
    std::string name;
    const faiss::Index* index;
    faiss::SearchParameters* params;
    const GpuIndexBang* bang; ///< for the path column; null for the other indexes
    int searchL;
};

} // namespace

int main(int argc, char** argv) {
    std::string siftDir;
    bool quick = false;
    std::string command = argv[0];
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        command += " " + a;
        if (a == "--quick") {
            quick = true;
        } else if (a == "--sift" && i + 1 < argc) {
            siftDir = argv[++i];
            command += " " + siftDir;
        } else {
            std::fprintf(stderr, "usage: bench_filtered [--sift DIR] [--quick]\n");
            return 1;
        }
    }
    if (GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "bench_filtered: no CUDA device found; this benchmark needs a GPU\n");
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    const int64_t maxBase = quick ? 200000 : 1000000;
    const int64_t maxQueries = quick ? 1000 : 10000;
    Dataset data;
    try {
        data = siftDir.empty() ? makeClustered(maxBase, maxQueries)
                               : loadSift(siftDir, maxBase, maxQueries);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_filtered: %s\n", e.what());
        return 1;
    }
    const int64_t nb = data.nb, nq = data.nq;
    const int d = data.d;

    GpuResources res;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, res.device());
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::printf("command: %s\ndate: %s\n", command.c_str(), date);
    std::printf(
            "device: %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount,
            prop.totalGlobalMem / double(1 << 30));
    std::printf(
            "dataset: %lld x %d %s, %lld queries, k=%d, L2\n", (long long)nb, d,
            data.description.c_str(), (long long)nq, kK);

    GpuIndexFlat flat(res, d);
    flat.add(nb, data.xb.data());
    GpuIndexIVFFlat ivf(res, d, kNlist);
    auto t0 = std::chrono::steady_clock::now();
    ivf.train(nb, data.xb.data());
    const double trainS = secondsSince(t0);
    t0 = std::chrono::steady_clock::now();
    ivf.add(nb, data.xb.data());
    std::printf(
            "GpuIndexIVFFlat: nlist %lld, train %.1f s (GPU k-means on the base), add %.1f s; "
            "searched with nprobe %zu\n",
            (long long)kNlist, trainS, secondsSince(t0), kNprobe);
    GpuIndexBang bang(res, d);
    t0 = std::chrono::steady_clock::now();
    bang.add(nb, data.xb.data());
    std::string searchLs;
    for (int L : kBangSearchL) {
        searchLs += (searchLs.empty() ? "" : ", ") + std::to_string(L);
    }
    std::printf(
            "GpuIndexBang: default build (R=%d), add (graph build) %.1f s; searched with "
            "search_L %s\n",
            bang.graphDegree(), secondsSince(t0), searchLs.c_str());

    const std::vector<Filter> filters = makeFilters(nb);
    // Ground truth: exact search under each filter.
    faiss::SearchParameters flatParams;
    std::vector<std::vector<int64_t>> gt;
    for (const Filter& f : filters) {
        flatParams.sel = f.sel.get();
        std::vector<float> D(size_t(nq) * kK);
        gt.emplace_back(D.size());
        flat.search(nq, data.xq.data(), kK, D.data(), gt.back().data(), &flatParams);
    }

    faiss::SearchParametersIVF ivfParams;
    ivfParams.nprobe = kNprobe;
    SearchParametersBang bangParams[std::size(kBangSearchL)];
    std::vector<Variant> variants = {
            {"GpuIndexFlat", &flat, &flatParams, nullptr, 0},
            {"GpuIndexIVFFlat nprobe " + std::to_string(kNprobe), &ivf, &ivfParams, nullptr, 0}};
    for (size_t i = 0; i < std::size(kBangSearchL); ++i) {
        bangParams[i].search_L = kBangSearchL[i];
        variants.push_back(
                {"GpuIndexBang search_L " + std::to_string(kBangSearchL[i]), &bang, &bangParams[i],
                 &bang, kBangSearchL[i]});
    }

    std::printf(
            "\nQPS batch %lld: %lld / median wall time of %d search() calls of all queries "
            "(host arrays in and out; after one warm-up); batch 1: 1 / median wall time of "
            "%d single-query search() calls (after 10 warm-up); x unfiltered: this time / the "
            "same index's unfiltered time at that batch; recall@10: against exact search "
            "under the same selector, over all queries; filled: fraction of the results that "
            "are ids (IVF-Flat returns fewer than k when its probed lists hold fewer allowed "
            "vectors); Bang path: what its host cost model picks. Random ids are nested (1%% "
            "of them in the 10%%, those in the 50%%); ranges are centred in [0, %lld).\n\n",
            (long long)nq, (long long)nq, kBatchReps, kSingleQueries, (long long)nb);
    std::printf(
            "| index | filter | allowed | QPS batch %lld | ms batch %lld | x unfiltered | "
            "QPS batch 1 | p50 ms batch 1 | x unfiltered | recall@10 | filled | Bang path |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            (long long)nq, (long long)nq);
    std::vector<std::string> targets;
    for (const Variant& v : variants) {
        Measured unfiltered;
        double unfilteredRecall = 0;
        for (size_t fi = 0; fi < filters.size(); ++fi) {
            const Filter& f = filters[fi];
            v.params->sel = f.sel.get();
            Measured m = measure(*v.index, data, *v.params);
            const double recall = bench::recallAt(gt[fi], kK, m.I, kK, nq, kK);
            const double filled =
                    double(std::count_if(
                            m.I.begin(), m.I.end(), [](int64_t id) { return id >= 0; })) /
                    double(m.I.size());
            if (!f.sel) {
                unfiltered = m;
                unfilteredRecall = recall;
            }
            const double batchRatio = m.batchMs / unfiltered.batchMs;
            const double singleRatio = m.singleMs / unfiltered.singleMs;
            const std::string path = v.bang ? bangPath(*v.bang, v.searchL, f) : "-";
            std::printf(
                    "| %s | %s | %lld (%g%%) | %.0f | %.2f | %.2f | %.0f | %.3f | %.2f | %.4f | "
                    "%.4f | %s |\n",
                    v.name.c_str(), f.name.c_str(), (long long)f.allowed, f.fraction * 100,
                    nq / (m.batchMs * 1e-3), m.batchMs, batchRatio, 1e3 / m.singleMs, m.singleMs,
                    singleRatio, recall, filled, path.c_str());
            std::fflush(stdout);

            char line[256];
            if (!v.bang && f.sel && f.fraction == 0.5) {
                const bool met = batchRatio <= 1.3 && singleRatio <= 1.3;
                std::snprintf(
                        line, sizeof(line),
                        "%s, %s 50%%: filtered / unfiltered time %.2fx (batch %lld), %.2fx "
                        "(batch 1): %s (at most 1.3x)",
                        v.name.c_str(), f.name.c_str(), batchRatio, (long long)nq, singleRatio,
                        met ? "met" : "MISSED");
                targets.push_back(line);
            }
            if (v.bang && f.sel && f.fraction <= 0.1) {
                const bool met = recall >= unfilteredRecall - 0.02;
                std::snprintf(
                        line, sizeof(line),
                        "%s, %s %g%%: recall@10 %.4f against %.4f unfiltered (%+.4f; %s): %s "
                        "(within 0.02)",
                        v.name.c_str(), f.name.c_str(), f.fraction * 100, recall, unfilteredRecall,
                        recall - unfilteredRecall, path.c_str(), met ? "met" : "MISSED");
                targets.push_back(line);
            }
        }
    }

    // Bang's two filtered paths forced, whichever the plan picks: the measurements its
    // cost model's constants are to be set from. The widened worklists (at most 4 x 80)
    // fit shared memory on any GPU (28 KiB at d = 128, R = 64).
    std::printf(
            "\nGpuIndexBang's filtered paths forced (the constants of "
            "impl/BangFilteredSearch.h): walk = BangGraph::search with the allowed bitmap and "
            "the plan's widened worklist, exact = bangExactAllowed; device queries and results, "
            "CUDA events, medians (%d calls of all queries after one warm-up, %d single "
            "queries after 10); recall@10 of all queries as above.\n\n",
            kBatchReps, kSingleQueries);
    std::printf(
            "| filter | allowed | search_L | plan | walk L | walk ms batch %lld | walk ms batch 1 "
            "| walk recall@10 | exact ms batch %lld | exact ms batch 1 | exact recall@10 |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n",
            (long long)nq, (long long)nq);
    auto qDev = res.alloc<float>(data.xq.size());
    copyToDevice(qDev.data(), data.xq.data(), data.xq.size(), res.stream());
    auto dD = res.alloc<float>(size_t(nq) * kK);
    auto dI = res.alloc<int64_t>(size_t(nq) * kK);
    for (size_t fi = 1; fi < filters.size(); ++fi) {
        const Filter& f = filters[fi];
        const std::vector<uint32_t> words = evaluateIdSelector(*f.sel, nb, nullptr);
        auto allow = res.alloc<uint32_t>(words.size());
        copyToDevice(allow.data(), words.data(), words.size(), res.stream());
        const Forced exact = timeForced(res, nq, gt[fi], dI.data(), [&](int64_t q0, int64_t n) {
            bangExactAllowed(
                    res, GpuIndexBangAccess::deviceState(bang), qDev.data() + q0 * d, n, kK,
                    allow.data(), f.allowed, dD.data() + q0 * kK, dI.data() + q0 * kK);
        });
        for (int searchL : kBangSearchL) {
            const BangFilterPlan p = bangPlan(bang, searchL, f.allowed);
            const Forced walk = timeForced(res, nq, gt[fi], dI.data(), [&](int64_t q0, int64_t n) {
                GpuIndexBangAccess::deviceState(bang).search(
                        qDev.data() + q0 * d, n, kK, p.walkL, dD.data() + q0 * kK,
                        dI.data() + q0 * kK, nullptr, allow.data());
            });
            std::printf(
                    "| %s | %lld (%g%%) | %d | %s | %d | %.3f | %.3f | %.4f | %.3f | %.3f | %.4f "
                    "|\n",
                    f.name.c_str(), (long long)f.allowed, f.fraction * 100, searchL,
                    p.exact ? "exact" : "walk", p.walkL, walk.batchMs, walk.singleMs, walk.recall,
                    exact.batchMs, exact.singleMs, exact.recall);
            std::fflush(stdout);
        }
    }

    std::printf("\nIssue 19 targets on this data set (Bang's is set on the real SIFT set):\n\n");
    for (const std::string& t : targets) {
        std::printf("- %s\n", t.c_str());
    }
    std::printf("\nbench_filtered: %.0f s in all\n", secondsSince(start));
    return 0;
}
