// Saving and loading faiss_ext indexes (GpuIndexFlat, GpuIndexIVFFlat, GpuIndexBang) in a versioned
// binary format (see impl/IndexImage.h). FAISS's own CPU indexes keep using
// faiss::write_index / faiss::read_index: these functions refuse them clearly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <faiss/Index.h>

#include <faiss_ext/GpuIndex.h>

namespace faiss_ext {

/// Writes a faiss_ext index to a file. Throws faiss::FaissException for other index
/// types and for I/O errors.
void write_index(const faiss::Index* index, const char* path);

/// The same bytes in memory (for the Python bindings and for tests).
std::vector<uint8_t> serialize_index(const faiss::Index* index);

/// Reads an index written by write_index onto the device of `resources` (which must
/// outlive it). A truncated, corrupted or foreign file gives a faiss::FaissException.
std::unique_ptr<GpuIndex> read_index(const char* path, GpuResources& resources);

/// Reads an index from serialize_index bytes.
std::unique_ptr<GpuIndex> deserialize_index(
        const uint8_t* data,
        size_t size,
        GpuResources& resources);

} // namespace faiss_ext
