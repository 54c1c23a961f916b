// The persistent BANG search kernel with exact traversal distances (one
// instantiation per file, so that the 2-core CI compiles the modes in parallel).
#include "BangSearchImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace bang {

template void persistentLaunch<false>(const BangGraphView&, const BangSearchArgs&, cudaStream_t);

} // namespace bang
} // namespace kernels
} // namespace faiss_ext
