// The IVF list-major path's warp kernel, one instantiation per selection capacity (a
// file of its own, so that the 2-core CI compiles it beside ivf_scan.cu).
#include "IvfScanImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace scan {

template void launchWarpScan<1>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<2>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<4>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<8>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<16>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<32>(const IvfScanArgs&, cudaStream_t);
template void launchWarpScan<kMaxWarpSelectK>(const IvfScanArgs&, cudaStream_t);

} // namespace scan
} // namespace kernels
} // namespace faiss_ext
