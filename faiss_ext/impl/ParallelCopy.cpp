#include <faiss_ext/impl/ParallelCopy.h>

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace faiss_ext {

// One thread copies ~9 GB/s from pageable memory, eight ~60 GB/s (benchs/NOTES.md,
// twelfth session). A thread per 128 KB: at 512 KB a thread a 512 KB copy (batch 1024 x
// 128 queries) took one thread 60 us against 18 us by four.
void parallelCopy(const CopyPart* parts, int nParts) {
    constexpr size_t kPerThread = size_t(128) << 10;
    size_t total = 0;
    for (int p = 0; p < nParts; ++p) {
        total += parts[p].bytes;
    }
    const int threads =
            int(std::min<size_t>({size_t(8), size_t(omp_get_max_threads()), total / kPerThread}));
    if (threads <= 1) {
        for (int p = 0; p < nParts; ++p) {
            std::memcpy(parts[p].dst, parts[p].src, parts[p].bytes);
        }
        return;
    }
    const size_t share = (total + threads - 1) / threads;
#pragma omp parallel for num_threads(threads)
    for (int t = 0; t < threads; ++t) {
        // This thread's bytes [begin, end) of the parts laid end to end.
        const size_t begin = size_t(t) * share;
        const size_t end = std::min(total, begin + share);
        size_t partStart = 0;
        for (int p = 0; p < nParts; ++p) {
            const size_t partEnd = partStart + parts[p].bytes;
            const size_t from = std::max(begin, partStart);
            const size_t to = std::min(end, partEnd);
            if (from < to) {
                std::memcpy(
                        static_cast<char*>(parts[p].dst) + (from - partStart),
                        static_cast<const char*>(parts[p].src) + (from - partStart), to - from);
            }
            partStart = partEnd;
        }
    }
}

void parallelCopy(void* dst, const void* src, size_t bytes) {
    const CopyPart part{dst, src, bytes};
    parallelCopy(&part, 1);
}

} // namespace faiss_ext
