// Saving and loading faiss_ext indexes (GpuIndexFlat, GpuIndexIVFFlat, GpuIndexBang) in a versioned
// binary format (see impl/IndexImage.h). FAISS's own CPU indexes keep using
// faiss::write_index / faiss::read_index: these functions refuse them clearly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <faiss/Index.h>

#include <faiss_ext/GpuIndex.h>

namespace faiss_ext {

/// Writes a faiss_ext index to a file, a piece of it at a time (no second copy of the
/// index in host memory), into a temporary file beside `path` that replaces it once
/// complete: a failure leaves `path` as it was. Throws faiss::FaissException for other
/// index types and for I/O errors.
void write_index(const faiss::Index* index, const char* path);

/// The same bytes in memory (for the Python bindings and for tests).
std::vector<uint8_t> serialize_index(const faiss::Index* index);

/// Reads an index written by write_index onto the device of `resources` (which must
/// outlive it), a piece at a time into the index's own storage. A truncated, corrupted
/// (each section carries a checksum) or foreign file gives a faiss::FaissException and
/// no index; files of every earlier format version load.
std::unique_ptr<GpuIndex> read_index(const char* path, GpuResources& resources);

/// What an index file holds, as read_index would find it.
struct IndexFileInfo {
    std::string kind;     ///< "GpuIndexFlat", "GpuIndexIVFFlat" or "GpuIndexBang"
    uint32_t version = 0; ///< the file's format version
    int d = 0;            ///< dimension
    faiss::MetricType metric = faiss::METRIC_L2;
    int64_t ntotal = 0; ///< vectors stored
};

/// Reads and checks serialize_index bytes on the host, every check read_index makes
/// (checksums included) but without building the index: no device needed. Throws
/// faiss::FaissException as deserialize_index would.
IndexFileInfo inspect_index(const uint8_t* data, size_t size);

/// Reads an index from serialize_index bytes.
std::unique_ptr<GpuIndex> deserialize_index(
        const uint8_t* data,
        size_t size,
        GpuResources& resources);

} // namespace faiss_ext
