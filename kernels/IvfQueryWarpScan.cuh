// The per-query path's warp kernel: one warp per (query, chunk of a probed list) of the
// work list, 8 warps a block and no block barrier. Each warp stages its query in shared
// memory, computes its chunk's distances with the block kernel's ListLoader (lane =
// vector: a group read is 512 coalesced bytes; the same arithmetic, so the same bits)
// and keeps the best k in registers (WarpSelect.cuh). The slot it writes is the one the
// block kernel writes (IvfScan.h, candD / candI), so the merge reads either. The
// launcher is instantiated per capacity and metric in ivf_scan_query_warp_{l2,ip}.cu
// (declared extern below).
#pragma once

#include <faiss_ext/utils/CudaCheck.h>

#include "IvfListLoader.cuh"
#include "IvfScan.h"
#include "IvfScanImpl.cuh"
#include "IvfStore.h"
#include "SmemLimit.cuh"
#include "WarpSelect.cuh"

namespace faiss_ext {
namespace kernels {
namespace scan {

// Two blocks an SM: a lane's distance keeps 8 groups of the list and of the query in
// flight (ListLoader's unroll), 106-126 registers; ptxas's own choice (64-80) spilled.
template <int kKp, bool kInnerProduct>
__global__ void __launch_bounds__(kSelectThreads, 2) queryWarpScanKernel(IvfScanArgs a) {
    extern __shared__ __align__(16) float4 queryWarpSmem[];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int groups = ivfPaddedDim(a.d) / 4;
    float4* query = queryWarpSmem + warp * groups;
    const int items = *a.slotCount;
    const int workers = int(gridDim.x) * kWarpScanWarps;
    for (int w = int(blockIdx.x) * kWarpScanWarps + warp; w < items; w += workers) {
        const WorkItem it = workItem(a, w);
        float* outD = slotKeys(a, it);
        int64_t* outI = slotIds(a, it);
        const ScanSlot ss = resolveSlot(a, it.query, it.slot);
        if (ss.n < 0) {
            writeEmptySlot(outD, outI, a.k, lane, 32);
            continue;
        }
        // The previous item's distances have read the query: the warp may overwrite it.
        __syncwarp();
        const float* qsrc = a.queries + it.query * a.d;
        for (int j = lane; j < 4 * groups; j += 32) {
            reinterpret_cast<float*>(query)[j] = j < a.d ? qsrc[j] : 0.f;
        }
        __syncwarp();
        const ListLoader<kInnerProduct> load{
                reinterpret_cast<const float4*>(a.listData[ss.list]), query, ss.start, groups};
        WarpSelect<kKp> sel(a.k);
        sel.run(ss.n, filtered(a, ss, load));
        // k <= 32: lane i writes result i.
        if (lane < a.k) {
            const int p = sel.position(lane);
            outD[lane] = sel.value(lane);
            outI[lane] = p < 0 ? -1 : a.listIds[ss.list][ss.start + p];
        }
    }
}

/// The per-query warp kernel for nextPow2(a.k) == kKp (checked by ivfScan).
template <int kKp, bool kInnerProduct>
void launchQueryWarpScan(const IvfScanArgs& a, cudaStream_t stream) {
    const size_t smem = ivfQueryWarpScanSmemBytes(a.d);
    raiseDynamicSmemLimit(queryWarpScanKernel<kKp, kInnerProduct>, smem);
    // Up to 64 warps an SM (2048 threads), as the list-major warp kernel.
    const int64_t warps = workersFor(a, 64);
    queryWarpScanKernel<kKp, kInnerProduct>
            <<<unsigned((warps + kWarpScanWarps - 1) / kWarpScanWarps), kSelectThreads, smem,
               stream>>>(a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

extern template void launchQueryWarpScan<1, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<2, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<4, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<8, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<16, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<32, false>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<1, true>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<2, true>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<4, true>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<8, true>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<16, true>(const IvfScanArgs&, cudaStream_t);
extern template void launchQueryWarpScan<32, true>(const IvfScanArgs&, cudaStream_t);

} // namespace scan
} // namespace kernels
} // namespace faiss_ext
