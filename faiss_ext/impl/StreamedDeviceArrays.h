// Device arrays streamed to and from index files a piece at a time (ArrayOut / ArrayIn,
// ByteStream.h), through the resources' pinned slots (PinnedStaging.h): write_index and
// read_index move an index's arrays at the bus rate without a host copy of them whole.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/ByteStream.h>
#include <faiss_ext/impl/ResourcesAccess.h>

namespace faiss_ext {

/// rows x width elements at src (device memory of res's device) as an ArrayOut: each
/// piece copied into a host buffer of one piece, which the ArrayOut keeps.
template <typename T>
ArrayOut<T> deviceArrayOut(const GpuResources& res, const T* src, int64_t rows, int width) {
    ArrayOut<T> a;
    a.rows = rows;
    a.width = width;
    a.pieceRows = rowsPerPiece(size_t(width) * sizeof(T));
    auto piece = std::make_shared<std::vector<T>>();
    a.piece = [&res, src, width, piece](int64_t row0, int64_t n) {
        const size_t count = size_t(n) * width;
        piece->resize(std::max(piece->size(), count));
        GpuResourcesAccess::pinnedStaging(res).toHost(
                piece->data(), src + size_t(row0) * width, count * sizeof(T), res.stream());
        return piece->data();
    };
    return a;
}

/// An ArrayIn that copies each piece of rows of `width` elements to dst (device memory
/// of res's device) at its row, ordered on res's stream.
template <typename T>
ArrayIn<T> deviceArrayIn(const GpuResources& res, T* dst, int width) {
    ArrayIn<T> a;
    a.put = [&res, dst, width](int64_t row0, int64_t n, const T* x) {
        GpuResourcesAccess::pinnedStaging(res).toDevice(
                dst + size_t(row0) * width, x, size_t(n) * width * sizeof(T), res.stream());
    };
    return a;
}

} // namespace faiss_ext
