// PQ mode's exact re-rank as a launch of its own (bangRerankLists): the persistent
// kernel's rerankExactList and writeResults over lists it left in global memory, so the
// results are bitwise those of the fused kernel. GpuIndexBang runs it when its rows are
// in host memory: a block here waits on the bus with a few KiB of shared memory, not
// with a walk's, and the next walks run meanwhile.
#include <climits>

#include "BangSearchImpl.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

__global__ void __launch_bounds__(kBangThreads) rerankListsKernel(
        BangGraphView g,
        const float* queries,
        int L,
        int k,
        const uint64_t* lists,
        float* outD,
        int64_t* outI) {
    extern __shared__ __align__(16) char smem[];
    const int dPadded = (g.d + 3) / 4 * 4;
    float* q = reinterpret_cast<float*>(smem);
    uint64_t* keys = reinterpret_cast<uint64_t*>(q + dPadded);
    uint64_t* scratch = keys + L;
    const int64_t query = blockIdx.x;
    for (int j = threadIdx.x; j < g.d; j += kBangThreads) {
        q[j] = queries[query * g.d + j];
    }
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        keys[i] = lists[query * L + i];
    }
    __syncthreads();
    bang::rerankExactList(q, g, L, keys, scratch);
    bang::writeResults(keys, k, outD + query * k, outI + query * k);
}

} // namespace

void bangRerankLists(
        const BangGraphView& g,
        const float* queries,
        int64_t nq,
        int L,
        int k,
        const uint64_t* lists,
        float* outD,
        int64_t* outI,
        cudaStream_t stream) {
    FAISS_ASSERT(g.n >= 1 && g.d >= 1 && g.vectors != nullptr);
    FAISS_ASSERT(L >= 1 && L <= kBangMaxL && k >= 1 && k <= L && nq <= INT_MAX);
    if (nq == 0) {
        return;
    }
    const size_t smem =
            size_t((g.d + 3) / 4 * 4) * sizeof(float) + 2 * size_t(L) * sizeof(uint64_t);
    raiseDynamicSmemLimit(rerankListsKernel, smem);
    rerankListsKernel<<<unsigned(nq), kBangThreads, smem, stream>>>(
            g, queries, L, k, lists, outD, outI);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
