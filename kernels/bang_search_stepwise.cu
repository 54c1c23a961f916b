// The bench-only stepwise BANG search (BangStepwise.h): the steps of one iteration
// from BangSearchImpl.cuh, one launch per iteration, the state in global memory. Every
// walk is instantiated here.
#include <algorithm>
#include <climits>

#include <faiss_ext/utils/DeviceBuffer.h>

#include "BangSearchImpl.cuh"
#include "BangStepwise.h"

namespace faiss_ext {
namespace kernels {
namespace bang {
namespace {

/// The step variant's per-query state in global memory.
struct StepState {
    uint64_t* keys;  ///< nq x L
    uint32_t* bloom; ///< nq x kBangBloomWords
    int32_t* iters;  ///< nq
    int32_t* done;   ///< nq
    uint8_t* vis;    ///< nq x L
};

__host__ __device__ inline size_t stepStateBytes(int64_t nq, int L) {
    return size_t(nq) * (size_t(L) * 8 + size_t(kBangBloomWords) * 4 + 8 + size_t(L));
}

inline StepState carveState(void* base, int64_t nq, int L) {
    char* p = static_cast<char*>(base);
    StepState st;
    st.keys = reinterpret_cast<uint64_t*>(p);
    p += size_t(nq) * L * 8;
    st.bloom = reinterpret_cast<uint32_t*>(p);
    p += size_t(nq) * kBangBloomWords * 4;
    st.iters = reinterpret_cast<int32_t*>(p);
    p += size_t(nq) * 4;
    st.done = reinterpret_cast<int32_t*>(p);
    p += size_t(nq) * 4;
    st.vis = reinterpret_cast<uint8_t*>(p);
    return st;
}

__device__ inline void storeWorklist(const Smem& s, const StepState& st, int64_t q, int L) {
    for (int i = threadIdx.x; i < L; i += kBangThreads) {
        st.keys[q * L + i] = s.keys[i];
        st.vis[q * L + i] = s.vis[i];
    }
}

/// One iteration of every unfinished query. Only ever sets *continueFlag. PQ mode
/// rebuilds the query's table in every launch (it does not persist between them).
template <Walk W>
__global__ void __launch_bounds__(kBangThreads, kBangMinBlocks)
        stepKernel(BangGraphView g, BangSearchArgs a, StepState st, int* continueFlag, int first) {
    const int64_t q = blockIdx.x;
    if (!first && st.done[q]) {
        return;
    }
    extern __shared__ __align__(16) char smem[];
    Smem s = carve(smem, a.L, g.R, g.d, false, tableM<W>(g));
    uint32_t* bloom = st.bloom + q * kBangBloomWords;
    const bool bad = loadQuery(s, a.queries + q * g.d, g.d);
    if (first) {
        clearWorklist(s, a.L);
        if (threadIdx.x == 0) {
            st.iters[q] = 0;
            st.done[q] = 0;
        }
        __syncthreads();
        if (bad) {
            storeWorklist(s, st, q, a.L);
            if (threadIdx.x == 0) {
                st.done[q] = 1;
            }
            return;
        }
    } else {
        for (int i = threadIdx.x; i < a.L; i += kBangThreads) {
            s.keys[i] = st.keys[q * a.L + i];
            s.vis[i] = st.vis[q * a.L + i];
        }
        __syncthreads();
    }
    buildTable<W>(s, g);
    if (first) {
        seedEntry<W>(s, g, queryEntry(g, a, q), bloom);
    }
    int pos = selectParent(s, a.L);
    if (pos >= 0) {
        const int32_t parent = bangKeyId(s.keys[pos]);
        if (threadIdx.x == 0) {
            s.vis[pos] = 1;
            st.iters[q] += 1;
        }
        expandParent<W>(s, g, bloom, parent, a.L);
        pos = selectParent(s, a.L);
    }
    storeWorklist(s, st, q, a.L);
    if (threadIdx.x == 0) {
        if (pos >= 0) {
            *continueFlag = 1;
        } else {
            st.done[q] = 1;
        }
    }
}

/// After the last step: one block per query writes its k best (PQ mode: after the
/// exact re-rank) and its iteration count.
template <Walk W>
__global__ void __launch_bounds__(kBangThreads)
        stepFinishKernel(BangGraphView g, BangSearchArgs a, StepState st) {
    extern __shared__ __align__(16) char smem[];
    Smem s = carve(smem, a.L, g.R, g.d, false, 0);
    const int64_t q = blockIdx.x;
    for (int i = threadIdx.x; i < a.L; i += kBangThreads) {
        s.keys[i] = st.keys[q * a.L + i];
    }
    // loadQuery's barrier also makes the keys visible; a query with a NaN has an
    // empty worklist, which the re-rank leaves empty.
    loadQuery(s, a.queries + q * g.d, g.d);
    if constexpr (W == Walk::kPq) {
        rerankExact(s, g, a.L);
    }
    writeResults(s.keys, a.k, a.outD + q * a.k, a.outI + q * a.k);
    if (a.iterations != nullptr && threadIdx.x == 0) {
        a.iterations[q] = st.iters[q];
    }
}

template <Walk W>
void stepwiseLaunch(
        const BangGraphView& g,
        const BangSearchArgs& a,
        void* state,
        int* continueFlagDevice,
        cudaStream_t stream) {
    const StepState st = carveState(state, a.nq, a.L);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(st.bloom, 0, size_t(a.nq) * kBangBloomWords * 4, stream));
    const size_t smem = layoutFor(a.L, g.R, g.d, false, tableM<W>(g)).total;
    raiseDynamicSmemLimit(stepKernel<W>, smem);
    for (int first = 1;; first = 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(continueFlagDevice, 0, sizeof(int), stream));
        stepKernel<W><<<unsigned(a.nq), kBangThreads, smem, stream>>>(
                g, a, st, continueFlagDevice, first);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
        int more = 0;
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                &more, continueFlagDevice, sizeof(int), cudaMemcpyDeviceToHost, stream));
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (!more) {
            break;
        }
    }
    const size_t finishSmem = layoutFor(a.L, g.R, g.d, false, 0).total;
    raiseDynamicSmemLimit(stepFinishKernel<W>, finishSmem);
    stepFinishKernel<W><<<unsigned(a.nq), kBangThreads, finishSmem, stream>>>(g, a, st);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace bang

size_t bangStepSmemBytes(int L, int R, int d, int pqM) {
    return bang::layoutFor(L, R, d, false, pqM).total;
}

void bangSearchStepwise(
        const BangGraphView& g,
        const BangSearchArgs& a,
        size_t tempBytes,
        cudaStream_t stream) {
    FAISS_ASSERT(g.n >= 1 && g.n <= INT_MAX && g.R >= 1 && g.R <= kBangMaxDegree);
    FAISS_ASSERT(a.L >= 1 && a.L <= kBangMaxL && a.k >= 1 && a.k <= a.L && a.nq >= 1);
    FAISS_ASSERT(a.visited == nullptr);
    const size_t perQuery = bang::stepStateBytes(1, a.L);
    const int64_t page =
            std::min<int64_t>({a.nq, std::max<int64_t>(1, int64_t(tempBytes / perQuery)), INT_MAX});
    DeviceBuffer<char> state(size_t(page) * perQuery, stream);
    DeviceBuffer<int> flag(1, stream);
    for (int64_t q0 = 0; q0 < a.nq; q0 += page) {
        BangSearchArgs p = a;
        p.queries = a.queries + size_t(q0) * g.d;
        p.nq = std::min(page, a.nq - q0);
        p.outD = a.outD + size_t(q0) * a.k;
        p.outI = a.outI + size_t(q0) * a.k;
        p.iterations = a.iterations ? a.iterations + q0 : nullptr;
        switch (bang::walkOf(g)) {
            case bang::Walk::kFloatRows:
                bang::stepwiseLaunch<bang::Walk::kFloatRows>(
                        g, p, state.data(), flag.data(), stream);
                break;
            case bang::Walk::kByteRows:
                bang::stepwiseLaunch<bang::Walk::kByteRows>(
                        g, p, state.data(), flag.data(), stream);
                break;
            case bang::Walk::kPq:
                bang::stepwiseLaunch<bang::Walk::kPq>(g, p, state.data(), flag.data(), stream);
                break;
        }
    }
}

} // namespace kernels
} // namespace faiss_ext
