// The library's own way into an index's internals: the impl/ owner of its device state,
// for the index files (IndexFileIo.h) and the tests and benchmarks that run the kernels
// themselves. The public headers keep these out of the API; each index class
// grants its access struct friendship (`friend struct GpuIndexFlatAccess;`), so only
// code that includes this impl/ header reaches them.
#pragma once

#include <cstdint>
#include <utility>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/IvfSearch.h>

namespace faiss_ext {

class BangGraph;
class FlatStorage;

struct GpuIndexFlatAccess {
    /// The stored vectors and their norms on the device (impl/FlatStorage.h).
    static const FlatStorage& deviceState(const GpuIndexFlat& index) {
        return *index.storage_;
    }
    /// The path a search of nq queries for k results takes, without a filter
    /// (impl/FlatSearch.h: flatSearchPathFor).
    static FlatSearchPath searchPath(const GpuIndexFlat& index, int64_t nq, int k);
};

struct GpuIndexBangAccess {
    /// The device state (impl/BangGraph.h). With METRIC_INNER_PRODUCT its rows are the
    /// transformed vectors, d + 1 wide.
    static const BangGraph& deviceState(const GpuIndexBang& index) {
        return *index.state_;
    }
    /// Installs a state built elsewhere (read_index streams a file into one): rows as
    /// the index stores them (d wide, or for inner product the transform's rows of
    /// M2 = ipNormSq), their graph, and in PQ mode their codebooks and codes, all
    /// checked by the caller.
    static void setDeviceState(GpuIndexBang& index, BangGraph&& state, float ipNormSq) {
        index.setDeviceState_(std::move(state), ipNormSq);
    }
};

struct GpuIndexIVFFlatAccess {
    /// The plan a search would use for nq queries, k results and nprobe probes
    /// (impl/IvfSearch.h: chunking, memory, merge and scan paths).
    static IvfSearchPlan plan(const GpuIndexIVFFlat& index, int64_t nq, int k, int64_t nprobe) {
        FAISS_THROW_IF_NOT_FMT(nprobe >= 1, "nprobe=%lld must be >= 1", (long long)nprobe);
        return index.plan_(nq, k, index.effectiveNprobe_(size_t(nprobe)));
    }
    /// Forces the kernel of the per-query scan in this index's later searches (kAuto gives
    /// the choice back to kernels::ivfQueryScanKernel): tests and benchmarks compare the
    /// block and warp kernels on one index. Not saved with the index.
    static void setQueryScanKernel(GpuIndexIVFFlat& index, kernels::IvfQueryScanKernel kernel) {
        index.queryScanKernel_ = kernel;
    }
    /// Forces the coarse search's path in this index's later searches (kAuto gives the
    /// choice back to ivfCoarsePathFor): tests and benchmarks compare the GEMM and the
    /// fused coarse search on one index. Not saved with the index.
    static void setCoarsePath(GpuIndexIVFFlat& index, IvfCoarsePath path) {
        index.coarsePath_ = path;
    }
    /// Whether the lists keep their byte copy (impl/IvfLists.h: every stored value an
    /// integer in [0, 255]), which the list-major scan then reads.
    static bool keepsByteCopy(const GpuIndexIVFFlat& index);
    /// Device bytes of the split of the centroids the index keeps for the fused coarse
    /// search (impl/IvfCoarseSearch.h: IvfCoarseFragments; 0 where it keeps none).
    static size_t coarseFragmentBytes(const GpuIndexIVFFlat& index);
};

} // namespace faiss_ext
