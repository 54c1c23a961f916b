// Host <-> device copies of pageable host arrays through page-locked (pinned) memory.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace faiss_ext {

/// Two pinned slots and an event each. A copy is cut into slot-sized chunks: host
/// threads copy one chunk between the caller's array and one slot while the DMA of the
/// other slot's chunk runs. Pageable copies go through the driver's own staging at a
/// fraction of the bus rate (6.4 GB/s in, 1.1 GB/s out, measured on an H100 host;
/// benchs/NOTES.md); this keeps the bus busy and adds host threads for the memcpy.
/// Owned by one GpuResources, so used by one host thread at a time.
class PinnedStaging {
   public:
    /// Allocates nothing yet: the slots come on first use (on the resources' device).
    PinnedStaging() = default;
    ~PinnedStaging();
    PinnedStaging(const PinnedStaging&) = delete;
    PinnedStaging& operator=(const PinnedStaging&) = delete;

    /// dst (device) <- src (pageable host), bytes, on `stream`. Returns once src has
    /// been read: the caller may free it; the DMA may still be running, ordered before
    /// later work on `stream`.
    void toDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream);
    /// dst (pageable host) <- src (device), bytes, after the work queued on `stream`.
    /// Returns once dst holds the bytes.
    void toHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);
    /// Two toHost copies (a search page's distances and labels) with one wait for the
    /// device when they fit in one slot together: a small search then synchronises once.
    void toHost2(
            void* dstA,
            const void* srcA,
            size_t bytesA,
            void* dstB,
            const void* srcB,
            size_t bytesB,
            cudaStream_t stream);

    /// Bytes of one slot (a chunk of a copy).
    static constexpr size_t kSlotBytes = size_t(4) << 20;

   private:
    /// False when pinned memory cannot be had (a locked-memory limit, say): copies
    /// then go straight from and to pageable memory.
    bool ready();

    void* slots_[2] = {nullptr, nullptr};
    cudaEvent_t done_[2] = {nullptr, nullptr};
    /// The slot the next toDevice fills first (they alternate across calls too).
    int nextDeviceSlot_ = 0;
    bool tried_ = false;
};

} // namespace faiss_ext
