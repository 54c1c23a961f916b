// The persistent BANG search kernel with PQ (ADC) traversal distances and the exact
// re-rank (one instantiation per file, so that the 2-core CI compiles the walks in
// parallel).
#include "BangSearchImpl.cuh"

namespace faiss_ext {
namespace kernels {
namespace bang {

template void persistentLaunch<Walk::kPq>(
        const BangGraphView&,
        const BangSearchArgs&,
        cudaStream_t);

} // namespace bang
} // namespace kernels
} // namespace faiss_ext
