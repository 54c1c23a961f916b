// The stepwise BANG search: the seed's design, one fused kernel launch per iteration
// from a host loop with every query's state in global memory. Not part of the
// library (GpuIndexBang runs the persistent kernel of BangSearch.h): bench_bang times
// it beside the persistent kernel, and the GPU tests check that both walk the graph
// the same way. Built as its own library, faiss_ext_bang_stepwise.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "BangSearch.h"

namespace faiss_ext {
namespace kernels {

/// Dynamic shared memory of one step-kernel block (no Bloom filter: it stays in
/// global memory), at most bangPersistentSmemBytes of the same arguments.
size_t bangStepSmemBytes(int L, int R, int d, int pqM);

/// Searches a.nq queries (a.visited must be null) with the same results and iteration
/// counts as bangSearchPersistent. The queries go in pages whose global-memory state
/// fits tempBytes; the stream is synchronised once per iteration of each page.
void bangSearchStepwise(
        const BangGraphView& g,
        const BangSearchArgs& a,
        size_t tempBytes,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
