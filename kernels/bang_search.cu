// BANG greedy graph search: one thread block per query walks the graph from the entry
// point. Each iteration (fused): pick the best unvisited worklist entry as parent, drop
// its neighbours already seen (per-query Bloom filter), compute the others' traversal
// distances (8 lanes per neighbour: exact squared L2 with float4 loads, or 4-byte loads
// of byte rows, two rows per group in flight, or in PQ mode ADC sums over the query's
// table in shared memory) as
// (distance, id) keys, and merge them into the sorted worklist of L entries by rank
// (each key's rank among the candidates plus among the worklist: no sort). The search
// ends when every worklist entry has been expanded; PQ mode then re-ranks the final
// worklist with exact distances. The kernels are in BangSearchImpl.cuh, instantiated
// per walk in bang_search_exact.cu, bang_search_bytes.cu and bang_search_pq.cu; this
// file checks arguments
// and dispatches. (The bench-only stepwise variant is BangStepwise.h.)
#include <climits>

#include "BangSearchImpl.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

__global__ void distanceTableKernel(
        const float* queries,
        int64_t nq,
        const float* base,
        int64_t nb,
        int d,
        float* out) {
    const int64_t pair = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / bang::kGroup;
    const int sub = threadIdx.x % bang::kGroup;
    const bool valid = pair < nq * nb;
    const int64_t qi = valid ? pair / nb : 0;
    const int64_t b = valid ? pair % nb : 0;
    const float dist = bang::groupL2(queries + qi * d, base + b * d, d, sub, valid);
    if (valid && sub == 0) {
        out[pair] = dist;
    }
}

void checkArgs(const BangGraphView& g, const BangSearchArgs& a) {
    FAISS_ASSERT(g.n >= 1 && g.n <= INT_MAX && g.d >= 1);
    FAISS_ASSERT((g.vectors == nullptr) != (g.byteVectors == nullptr));
    FAISS_ASSERT(g.byteVectors == nullptr || g.pqM == 0);
    FAISS_ASSERT(g.R >= 1 && g.R <= kBangMaxDegree);
    FAISS_ASSERT(g.entry >= 0 && g.entry < g.n);
    FAISS_ASSERT(g.pqM >= 0 && g.pqM <= kBangMaxPqSubquantizers);
    FAISS_ASSERT(
            g.pqM == 0 || (g.d % g.pqM == 0 && g.codes != nullptr && g.pqCentroids != nullptr));
    FAISS_ASSERT(a.L >= 1 && a.L <= kBangMaxL && a.k >= 1 && a.k <= a.L);
    FAISS_ASSERT(a.nq >= 1 && a.nq <= INT_MAX);
}

} // namespace

size_t bangPersistentSmemBytes(int L, int R, int d, int pqM, bool filtered) {
    return bang::layoutFor(L, R, d, true, pqM, filtered).total;
}

void bangSearchPersistent(const BangGraphView& g, const BangSearchArgs& a, cudaStream_t stream) {
    checkArgs(g, a);
    FAISS_ASSERT(a.visited == nullptr || a.maxVisited >= 1);
    switch (bang::walkOf(g)) {
        case bang::Walk::kFloatRows:
            bang::persistentLaunch<bang::Walk::kFloatRows>(g, a, stream);
            break;
        case bang::Walk::kByteRows:
            bang::persistentLaunch<bang::Walk::kByteRows>(g, a, stream);
            break;
        case bang::Walk::kPq:
            bang::persistentLaunch<bang::Walk::kPq>(g, a, stream);
            break;
    }
}

void bangDistanceTable(
        const float* queries,
        int64_t nq,
        const float* base,
        int64_t nb,
        int d,
        float* out,
        cudaStream_t stream) {
    const int64_t pairs = nq * nb;
    if (pairs == 0) {
        return;
    }
    const int64_t blocks = (pairs + bang::kGroups - 1) / bang::kGroups;
    FAISS_THROW_IF_NOT_FMT(
            blocks <= INT_MAX, "bangDistanceTable: %lld pairs is too many", (long long)pairs);
    distanceTableKernel<<<unsigned(blocks), kBangThreads, 0, stream>>>(
            queries, nq, base, nb, d, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
