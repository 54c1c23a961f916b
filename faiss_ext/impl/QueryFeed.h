// The queries of one search page on the device, copied in from host memory in chunks
// while the search that reads them is queued (benchs/NOTES.md, twenty-third session).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {

class PinnedStaging;

/// Queries a search takes into its first stage at a time: about a quarter of the n,
/// at least 2048 and at most one pinned slot of host copy. A search whose first stage
/// runs in chunks of this many can start on the first while the rest are on the bus.
int64_t queryChunkRows(int64_t n, int d);

/// n x d queries on the device. A search asks for the first `end` of them (ready) before
/// queuing work that reads them; host queries are copied in a chunk of queryChunkRows at
/// a time, the first time one is asked for, on the staging's copy stream.
class QueryFeed {
   public:
    /// Queries already on the device.
    QueryFeed(const float* deviceQueries, int64_t n, int d);
    /// Host queries src, copied to dst (n x d, device) through `staging` for work on
    /// `stream`; the copies start after the work queued on `stream` so far.
    QueryFeed(
            PinnedStaging& staging,
            float* dst,
            const float* src,
            int64_t n,
            int d,
            cudaStream_t stream);

    /// The n x d device array (whose rows past those made ready may not be written yet).
    const float* device() const {
        return device_;
    }
    /// Work queued on the stream from now on sees queries [0, end) on the device.
    void ready(int64_t end);

   private:
    PinnedStaging* staging_ = nullptr;
    const float* device_ = nullptr;
    float* dst_ = nullptr; ///< device_, written by the copies
    const float* src_ = nullptr;
    int64_t n_ = 0;
    int d_ = 0;
    cudaStream_t stream_ = nullptr;
    int64_t chunk_ = 0;
    /// Queries [0, copied_) are copied or on their way.
    int64_t copied_ = 0;
};

} // namespace faiss_ext
