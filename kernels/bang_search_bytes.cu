// The persistent BANG search kernel with exact traversal distances from rows stored as
// bytes (one instantiation per file, so that the 2-core CI compiles the walks in
// parallel).
#include "BangSearchImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace bang {

template void persistentLaunch<Walk::kByteRows>(
        const BangGraphView&,
        const BangSearchArgs&,
        cudaStream_t);

} // namespace bang
} // namespace kernels
} // namespace faiss_ext
