#include <faiss_ext/impl/PinnedStaging.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <faiss_ext/impl/ParallelCopy.h>
#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

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
        parallelCopyForDma(slots_[slot], static_cast<const char*>(src) + off, len);
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
            expectParallelCopy(len);
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
    expectParallelCopy(bytesA + bytesB);
    FAISS_EXT_CUDA_CHECK(cudaEventSynchronize(done_[0]));
    const CopyPart parts[2] = {{dstA, slot, bytesA}, {dstB, slot + bytesA, bytesB}};
    parallelCopy(parts, 2);
}

} // namespace faiss_ext
