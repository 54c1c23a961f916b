// The fused coarse search's kernel for lists of 1 and 2 (a file a pair of capacities, so
// that the 2-core CI compiles them side by side).
#include "IvfCoarseFusedImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace coarse {

template void launchCoarseFused<1>(const CoarseFusedArgs&, cudaStream_t);
template void launchCoarseFused<2>(const CoarseFusedArgs&, cudaStream_t);

} // namespace coarse
} // namespace kernels
} // namespace faiss_ext
