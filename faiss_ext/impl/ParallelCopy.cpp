#include <faiss_ext/impl/ParallelCopy.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <faiss_ext/impl/HelperThreads.h>

namespace faiss_ext {

namespace {

/// memcpy with streaming (non-temporal) stores where the CPU has them.
void streamingCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    // Plain stores up to a 16-byte boundary of dst and for the last partial vector.
    const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
    std::memcpy(d, s, head);
    d += head;
    s += head;
    const size_t vectors = (bytes - head) / 16;
    auto* dv = reinterpret_cast<__m128i*>(d);
    const auto* sv = reinterpret_cast<const __m128i*>(s);
    for (size_t i = 0; i < vectors; ++i) {
        _mm_stream_si128(dv + i, _mm_loadu_si128(sv + i));
    }
    std::memcpy(d + vectors * 16, s + vectors * 16, bytes - head - vectors * 16);
    // The streaming stores are visible before the caller issues the DMA.
    _mm_sfence();
#else
    std::memcpy(dst, src, bytes);
#endif
}

using CopyFn = void (*)(void*, const void*, size_t);

// One thread copies ~9 GB/s from pageable memory, eight ~60 GB/s (benchs/NOTES.md,
// twelfth session): a 512 KB copy (batch 1024 x 128 queries) took one thread 60 us
// against 18 us by four. Below 256 KB the calling thread copies alone; above, chunks of
// 64 KB (whole 64-byte lines, so no two threads write parts of one line) go to the
// helper threads too.
constexpr size_t kOneThreadBelow = size_t(256) << 10;

void copyParts(const CopyPart* parts, int nParts, CopyFn copy) {
    constexpr size_t kChunk = size_t(64) << 10;
    size_t total = 0;
    for (int p = 0; p < nParts; ++p) {
        total += parts[p].bytes;
    }
    if (total < kOneThreadBelow) {
        for (int p = 0; p < nParts; ++p) {
            copy(parts[p].dst, parts[p].src, parts[p].bytes);
        }
        return;
    }
    runChunks(int64_t((total + kChunk - 1) / kChunk), [&](int64_t c) {
        // This chunk's bytes [begin, end) of the parts laid end to end.
        const size_t begin = size_t(c) * kChunk;
        const size_t end = std::min(total, begin + kChunk);
        size_t partStart = 0;
        for (int p = 0; p < nParts; ++p) {
            const size_t partEnd = partStart + parts[p].bytes;
            const size_t from = std::max(begin, partStart);
            const size_t to = std::min(end, partEnd);
            if (from < to) {
                copy(static_cast<char*>(parts[p].dst) + (from - partStart),
                     static_cast<const char*>(parts[p].src) + (from - partStart), to - from);
            }
            partStart = partEnd;
        }
    });
}

void plainCopy(void* dst, const void* src, size_t bytes) {
    std::memcpy(dst, src, bytes);
}

} // namespace

void parallelCopy(const CopyPart* parts, int nParts) {
    copyParts(parts, nParts, plainCopy);
}

void expectParallelCopy(size_t bytes) {
    if (bytes >= kOneThreadBelow) {
        wakeHelpers();
    }
}

void parallelCopy(void* dst, const void* src, size_t bytes) {
    const CopyPart part{dst, src, bytes};
    copyParts(&part, 1, plainCopy);
}

void parallelCopyForDma(void* dst, const void* src, size_t bytes) {
    const CopyPart part{dst, src, bytes};
    copyParts(&part, 1, streamingCopy);
}

} // namespace faiss_ext
