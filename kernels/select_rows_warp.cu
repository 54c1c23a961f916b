// selectRowsMin's warp path, one instantiation per capacity of the register selection
// (a file of its own, so that the 2-core CI compiles it beside select_rows.cu).
#include "SelectRowsImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace rows {

template void launchWarpSelectRows<1>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
template void launchWarpSelectRows<2>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
template void launchWarpSelectRows<4>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
template void launchWarpSelectRows<8>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
template void launchWarpSelectRows<16>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);
template void launchWarpSelectRows<32>(const SelectRowsArgs&, int64_t, int64_t, cudaStream_t);

} // namespace rows
} // namespace kernels
} // namespace faiss_ext
