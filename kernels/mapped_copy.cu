// MappedCopy.h.
#include <algorithm>
#include <cstdint>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/CudaCheck.h>

#include "MappedCopy.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;

struct Spans {
    CopySpan span[kMaxCopySpans];
    int count;
};

/// Every thread copies 16-byte words of the spans whose both ends are 16-byte aligned
/// (4-byte words otherwise, and for the tail). Blocks stride over the words, so a grid
/// of any size covers them; each span's words are spread over all of it.
__global__ void __launch_bounds__(kThreads) copySpansKernel(Spans s) {
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    const int64_t first = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    for (int j = 0; j < s.count; ++j) {
        const CopySpan c = s.span[j];
        const bool wide =
                ((reinterpret_cast<uintptr_t>(c.dst) | reinterpret_cast<uintptr_t>(c.src)) & 15) ==
                0;
        const int64_t quads = wide ? int64_t(c.bytes / 16) : 0;
        const uint4* src4 = static_cast<const uint4*>(c.src);
        uint4* dst4 = static_cast<uint4*>(c.dst);
        for (int64_t i = first; i < quads; i += stride) {
            dst4[i] = src4[i];
        }
        const uint32_t* src1 = static_cast<const uint32_t*>(c.src);
        uint32_t* dst1 = static_cast<uint32_t*>(c.dst);
        for (int64_t i = quads * 4 + first; i < int64_t(c.bytes / 4); i += stride) {
            dst1[i] = src1[i];
        }
    }
}

} // namespace

void copySpans(const CopySpan* spans, int count, int smCount, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            count >= 0 && count <= kMaxCopySpans, "copySpans: %d spans (at most %d)", count,
            kMaxCopySpans);
    Spans s{};
    size_t largest = 0;
    for (int j = 0; j < count; ++j) {
        FAISS_THROW_IF_NOT_MSG(
                spans[j].bytes % 4 == 0 &&
                        ((reinterpret_cast<uintptr_t>(spans[j].dst) |
                          reinterpret_cast<uintptr_t>(spans[j].src)) &
                         3) == 0,
                "copySpans: spans are whole, 4-byte aligned words");
        s.span[j] = spans[j];
        largest = std::max(largest, spans[j].bytes);
    }
    s.count = count;
    if (largest == 0) {
        return;
    }
    // Two 16-byte words a thread at most: reads of mapped host memory cross the bus, so
    // many small requests in flight, not long loops, keep it busy.
    const int64_t blocks = (int64_t(largest / 16) + 2 * kThreads - 1) / (2 * kThreads);
    const int grid = int(std::clamp<int64_t>(blocks, 1, int64_t(8) * std::max(smCount, 1)));
    copySpansKernel<<<grid, kThreads, 0, stream>>>(s);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
