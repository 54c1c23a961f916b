#include <faiss_ext/impl/PinnedStaging.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

namespace {

/// One piece of a parallel copy.
struct CopyPart {
    void* dst;
    const void* src;
    size_t bytes;
};

/// memcpy of the parts, back to back, by several host threads: one thread copies ~9
/// GB/s from pageable memory, eight ~60 GB/s (benchs/NOTES.md, twelfth session). A thread
/// per 128 KB: at 512 KB a thread a 512 KB copy (batch 1024 x 128 queries) took one
/// thread 60 us against 18 us by four. Small copies stay on the calling thread.
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

} // namespace

PinnedStaging::~PinnedStaging() {
    for (int s = 0; s < 2; ++s) {
        if (done_[s] != nullptr) {
            cudaEventSynchronize(done_[s]);
            cudaEventDestroy(done_[s]);
        }
        if (slots_[s] != nullptr) {
            cudaFreeHost(slots_[s]);
        }
    }
}

bool PinnedStaging::ready() {
    if (!tried_) {
        tried_ = true;
        for (int s = 0; s < 2; ++s) {
            if (cudaHostAlloc(&slots_[s], kSlotBytes, cudaHostAllocPortable) != cudaSuccess ||
                cudaEventCreateWithFlags(&done_[s], cudaEventDisableTiming) != cudaSuccess) {
                (void)cudaGetLastError();
                slots_[s] = nullptr;
            }
        }
    }
    return slots_[0] != nullptr && slots_[1] != nullptr;
}

void PinnedStaging::toDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    if (bytes == 0) {
        return;
    }
    if (!ready()) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
        return;
    }
    // Starts on the slot the last toDevice left alone: a small copy right after another
    // (a selector's bitmap after the queries) does not wait for the other's DMA.
    int& slot = nextDeviceSlot_;
    for (size_t off = 0; off < bytes; off += kSlotBytes, slot ^= 1) {
        const size_t len = std::min(kSlotBytes, bytes - off);
        // The DMA that last read this slot has finished.
        FAISS_EXT_CUDA_CHECK(cudaEventSynchronize(done_[slot]));
        parallelCopy(slots_[slot], static_cast<const char*>(src) + off, len);
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                static_cast<char*>(dst) + off, slots_[slot], len, cudaMemcpyHostToDevice, stream));
        FAISS_EXT_CUDA_CHECK(cudaEventRecord(done_[slot], stream));
    }
}

void PinnedStaging::toHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    if (bytes == 0) {
        return;
    }
    if (!ready()) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
        return;
    }
    // Chunk c lands in slot c % 2; the host drains chunk c - 1 while chunk c's DMA runs.
    const size_t chunks = (bytes + kSlotBytes - 1) / kSlotBytes;
    for (size_t c = 0; c <= chunks; ++c) {
        if (c < chunks) {
            const size_t off = c * kSlotBytes;
            const size_t len = std::min(kSlotBytes, bytes - off);
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    slots_[c % 2], static_cast<const char*>(src) + off, len, cudaMemcpyDeviceToHost,
                    stream));
            FAISS_EXT_CUDA_CHECK(cudaEventRecord(done_[c % 2], stream));
        }
        if (c > 0) {
            const size_t off = (c - 1) * kSlotBytes;
            const size_t len = std::min(kSlotBytes, bytes - off);
            FAISS_EXT_CUDA_CHECK(cudaEventSynchronize(done_[(c - 1) % 2]));
            parallelCopy(static_cast<char*>(dst) + off, slots_[(c - 1) % 2], len);
        }
    }
}

void PinnedStaging::toHost2(
        void* dstA,
        const void* srcA,
        size_t bytesA,
        void* dstB,
        const void* srcB,
        size_t bytesB,
        cudaStream_t stream) {
    if (!ready() || bytesA + bytesB > kSlotBytes) {
        toHost(dstA, srcA, bytesA, stream);
        toHost(dstB, srcB, bytesB, stream);
        return;
    }
    // Both DMAs into slot 0 (B after A), one event, one wait. Stream order keeps them
    // after any earlier DMA that read the slot.
    char* slot = static_cast<char*>(slots_[0]);
    if (bytesA > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(slot, srcA, bytesA, cudaMemcpyDeviceToHost, stream));
    }
    if (bytesB > 0) {
        FAISS_EXT_CUDA_CHECK(
                cudaMemcpyAsync(slot + bytesA, srcB, bytesB, cudaMemcpyDeviceToHost, stream));
    }
    FAISS_EXT_CUDA_CHECK(cudaEventRecord(done_[0], stream));
    FAISS_EXT_CUDA_CHECK(cudaEventSynchronize(done_[0]));
    const CopyPart parts[2] = {{dstA, slot, bytesA}, {dstB, slot + bytesA, bytesB}};
    parallelCopy(parts, 2);
}

} // namespace faiss_ext
