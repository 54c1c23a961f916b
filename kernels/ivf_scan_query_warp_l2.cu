// The per-query warp kernel for squared L2, one instantiation per selection capacity (a
// file a metric, so that the 2-core CI compiles the two side by side).
#include "IvfQueryWarpScan.cuh"

namespace faiss_ext {
namespace kernels {
namespace scan {

template void launchQueryWarpScan<1, false>(const IvfScanArgs&, cudaStream_t);
template void launchQueryWarpScan<2, false>(const IvfScanArgs&, cudaStream_t);
template void launchQueryWarpScan<4, false>(const IvfScanArgs&, cudaStream_t);
template void launchQueryWarpScan<8, false>(const IvfScanArgs&, cudaStream_t);
template void launchQueryWarpScan<16, false>(const IvfScanArgs&, cudaStream_t);
template void launchQueryWarpScan<32, false>(const IvfScanArgs&, cudaStream_t);

} // namespace scan
} // namespace kernels
} // namespace faiss_ext
