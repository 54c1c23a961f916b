#include <faiss_ext/impl/BangFilteredSearch.h>

#include <algorithm>
#include <cmath>

#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <kernels/BangSearch.h>
#include <kernels/Distances.h>
#include <kernels/GatherRows.h>
#include <kernels/IdFilter.h>
#include <kernels/Select.h>

namespace faiss_ext {

BangFilterPlan planBangFilteredSearch(
        int64_t allowed,
        int64_t nodes,
        int L,
        int R,
        int k,
        int maxL) {
    FAISS_THROW_IF_NOT_FMT(
            allowed >= 1 && allowed <= nodes && L >= k && L <= maxL && R >= 1,
            "planBangFilteredSearch: allowed=%lld nodes=%lld L=%d k=%d maxL=%d", (long long)allowed,
            (long long)nodes, L, k, maxL);
    const double f = double(allowed) / double(nodes);
    const double widen = std::min(4.0, 1.0 / std::sqrt(f));
    BangFilterPlan p;
    p.walkL = int(std::min<double>(maxL, std::ceil(L * widen)));
    const double graphCost = 1.5 * p.walkL * R;
    const double exactCost = double(allowed) / kBangExactSpeedup;
    p.exact = exactCost <= graphCost || f * p.walkL < k;
    return p;
}

BangFilterPlan planBangFilteredSearchOnDevice(
        int64_t allowed,
        int64_t nodes,
        int L,
        int k,
        int R,
        int d,
        int M,
        int maxSearchL,
        size_t maxSmemPerBlock) {
    auto fits = [&](int l) {
        return kernels::bangPersistentSmemBytes(l, R, d, M, true) <= maxSmemPerBlock;
    };
    int maxL = maxSearchL;
    while (maxL > L && !fits(maxL)) {
        maxL -= 32;
    }
    maxL = std::max(maxL, L);
    BangFilterPlan p = planBangFilteredSearch(allowed, nodes, L, R, k, maxL);
    p.exact = p.exact || !fits(L);
    return p;
}

void bangExactAllowed(
        const GpuResources& res,
        const BangGraph& g,
        const float* queries,
        int64_t nq,
        int k,
        const uint32_t* allowDevice,
        int64_t allowed,
        float* outD,
        int64_t* outI) {
    FAISS_THROW_IF_NOT_FMT(
            allowed >= 1 && allowed <= g.size(), "bangExactAllowed: allowed=%lld of %lld nodes",
            (long long)allowed, (long long)g.size());
    cudaStream_t stream = res.stream();
    const int d = g.dim();
    const int64_t m = allowed;
    // The allowed node ids, ascending, listed on the device (a stream compaction of the
    // bitmap). First one read-back (8 bytes): the bitmap's set bits among the nodes,
    // checked against `allowed`, so that the list can neither run past its m entries nor
    // stop short of them (the gathers below read m ids).
    auto count = res.alloc<int64_t>(1);
    kernels::idFilterCount(allowDevice, g.size(), count.data(), stream);
    int64_t set = 0;
    copyToHost(&set, count.data(), 1, stream);
    FAISS_THROW_IF_NOT_FMT(
            set == allowed, "bangExactAllowed: allowed=%lld, but the bitmap has %lld bits set",
            (long long)allowed, (long long)set);
    auto nodes = res.alloc<int64_t>(size_t(m));
    {
        const size_t tempBytes = kernels::idFilterListSlotsTempBytes(g.size());
        auto temp = res.alloc<uint8_t>(tempBytes);
        kernels::idFilterListSlots(
                allowDevice, g.size(), nodes.data(), count.data(), temp.data(), tempBytes, stream);
    }
    // Half the budget for the gathered chunk (vectors, norms); flatSearch plans its own
    // temporaries. The list (8 bytes an allowed node) comes on top: the graph's own
    // arrays (4 R + 4 d bytes a node) dwarf it.
    const size_t perVector = size_t(d) * sizeof(float) + sizeof(float);
    const int64_t chunk = std::max<int64_t>(
            1, std::min<int64_t>(m, int64_t(res.tempMemoryBytes() / 2 / perVector)));
    auto x = res.alloc<float>(size_t(chunk) * d);
    auto norms = res.alloc<float>(size_t(chunk));
    const bool merging = m > chunk;
    auto partD = res.alloc<float>(merging ? size_t(nq) * k : 0);
    auto partI = res.alloc<int64_t>(merging ? size_t(nq) * k : 0);
    auto candD = res.alloc<float>(merging ? size_t(nq) * 2 * k : 0);
    auto candI = res.alloc<int64_t>(merging ? size_t(nq) * 2 * k : 0);
    for (int64_t c0 = 0; c0 < m; c0 += chunk) {
        const int64_t n = std::min(chunk, m - c0);
        const int64_t* ids = nodes.data() + c0;
        g.gatherRows(ids, n, x.data());
        kernels::rowSquaredNorms(x.data(), n, d, norms.data(), stream);
        FlatSearchInput in;
        in.queries = queries;
        in.nq = nq;
        in.base = x.data();
        in.baseNorms = norms.data();
        in.nb = n;
        in.d = d;
        in.metric = faiss::METRIC_L2;
        const bool first = c0 == 0;
        float* dOut = first ? outD : partD.data();
        int64_t* iOut = first ? outI : partI.data();
        flatSearch(res, in, k, dOut, iOut);
        kernels::mapIds(iOut, nq * k, ids, stream);
        if (first) {
            continue;
        }
        // Running best (columns [0, k)) and this chunk's (columns [k, 2k)), merged.
        const size_t rowBytesD = size_t(k) * sizeof(float), rowBytesI = size_t(k) * sizeof(int64_t);
        FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
                candD.data(), 2 * rowBytesD, outD, rowBytesD, rowBytesD, size_t(nq),
                cudaMemcpyDeviceToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
                candD.data() + k, 2 * rowBytesD, partD.data(), rowBytesD, rowBytesD, size_t(nq),
                cudaMemcpyDeviceToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
                candI.data(), 2 * rowBytesI, outI, rowBytesI, rowBytesI, size_t(nq),
                cudaMemcpyDeviceToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaMemcpy2DAsync(
                candI.data() + k, 2 * rowBytesI, partI.data(), rowBytesI, rowBytesI, size_t(nq),
                cudaMemcpyDeviceToDevice, stream));
        kernels::SelectRowsArgs merge;
        merge.dist = candD.data();
        merge.ldDist = 2 * k;
        merge.nrows = nq;
        merge.ncols = 2 * k;
        merge.inIds = candI.data();
        merge.ldIds = 2 * k;
        merge.k = k;
        merge.outD = outD;
        merge.outI = outI;
        merge.ldOut = k;
        kernels::selectRowsMin(merge, stream);
    }
}

} // namespace faiss_ext
