#include <faiss_ext/impl/QueryFeed.h>

#include <algorithm>

#include <faiss_ext/impl/PinnedStaging.h>

namespace faiss_ext {

int64_t queryChunkRows(int64_t n, int d) {
    constexpr int64_t kMinRows = 2048;
    const int64_t slotRows =
            std::max<int64_t>(1, int64_t(PinnedStaging::kSlotBytes / (size_t(d) * sizeof(float))));
    return std::max<int64_t>(1, std::min({n, slotRows, std::max(kMinRows, (n + 3) / 4)}));
}

QueryFeed::QueryFeed(const float* deviceQueries, int64_t n, int d)
        : device_(deviceQueries), n_(n), d_(d), copied_(n) {}

QueryFeed::QueryFeed(
        PinnedStaging& staging,
        float* dst,
        const float* src,
        int64_t n,
        int d,
        cudaStream_t stream)
        : staging_(&staging),
          device_(dst),
          dst_(dst),
          src_(src),
          n_(n),
          d_(d),
          stream_(stream),
          chunk_(queryChunkRows(n, d)) {
    staging.orderCopiesAfter(stream);
}

void QueryFeed::ready(int64_t end) {
    end = std::min(end, n_);
    while (copied_ < end) {
        const int64_t rows = std::min(chunk_, n_ - copied_);
        const size_t offset = size_t(copied_) * d_;
        staging_->toDeviceBeside(
                dst_ + offset, src_ + offset, size_t(rows) * d_ * sizeof(float), stream_);
        copied_ += rows;
    }
}

} // namespace faiss_ext
