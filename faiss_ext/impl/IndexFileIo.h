// Each index's payload in an index file (IndexImage.h), written from the index's own
// storage and read into a new index's, a piece at a time: write_index / read_index
// (index_io.cpp) hold no second copy of an index. A read that fails (a bad file, memory
// exhausted) throws and frees what it had built.
#pragma once

#include <cstdint>
#include <memory>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/impl/ByteStream.h>

namespace faiss_ext {

class GpuIndexFlat;
class GpuIndexIVFFlat;
class GpuIndexBang;

/// The payloads (after the header written for their kind); the readers read the
/// payload of a file of `version` (readHeader) onto the device of `res`.
void writeFlatIndex(ByteSink& out, const GpuIndexFlat& index);
std::unique_ptr<GpuIndex> readFlatIndex(ByteSource& in, uint32_t version, GpuResources& res);
void writeIvfFlatIndex(ByteSink& out, const GpuIndexIVFFlat& index);
std::unique_ptr<GpuIndex> readIvfFlatIndex(ByteSource& in, uint32_t version, GpuResources& res);
void writeBangIndex(ByteSink& out, const GpuIndexBang& index);
std::unique_ptr<GpuIndex> readBangIndex(ByteSource& in, uint32_t version, GpuResources& res);

} // namespace faiss_ext
