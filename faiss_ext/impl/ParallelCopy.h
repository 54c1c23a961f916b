// Host memcpy by several threads, for copies between pageable and pinned memory.
#pragma once

#include <cstddef>

namespace faiss_ext {

/// One piece of a parallel copy.
struct CopyPart {
    void* dst;
    const void* src;
    size_t bytes;
};

/// memcpy of the parts, laid end to end and shared with the helper threads
/// (impl/HelperThreads.h); copies under 256 KB stay on the calling thread.
void parallelCopy(const CopyPart* parts, int nParts);

/// Readies the helper threads for a parallelCopy of `bytes` that follows a wait (for the
/// GPU): a copy on one thread needs none.
void expectParallelCopy(size_t bytes);

/// parallelCopy of one part.
void parallelCopy(void* dst, const void* src, size_t bytes);

/// parallelCopy into pinned memory that a DMA reads next. Its stores bypass the CPU
/// caches: a DMA of lines just written through them snoops the caches and ran at half
/// the bus rate (5 MB in 201 us against 102; benchs/NOTES.md, twenty-third session).
void parallelCopyForDma(void* dst, const void* src, size_t bytes);

} // namespace faiss_ext
