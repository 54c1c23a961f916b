// The fused coarse search's kernel for lists of 4 and 8 (a file a pair of capacities, so
// that the 2-core CI compiles them side by side).
#include "IvfCoarseFusedImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace coarse {

template void launchCoarseFused<4>(const CoarseFusedArgs&, cudaStream_t);
template void launchCoarseFused<8>(const CoarseFusedArgs&, cudaStream_t);

} // namespace coarse
} // namespace kernels
} // namespace faiss_ext
