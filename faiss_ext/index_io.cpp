#include <faiss_ext/index_io.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexFileIo.h>
#include <faiss_ext/impl/IndexImage.h>

namespace faiss_ext {

namespace {

/// The file's kind of a faiss_ext index; throws for anything else.
IndexKind kindOf(const faiss::Index* index) {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "write_index: null index");
    if (dynamic_cast<const GpuIndexIVFFlat*>(index)) {
        return IndexKind::kIvfFlat;
    }
    if (dynamic_cast<const GpuIndexFlat*>(index)) {
        return IndexKind::kFlat;
    }
    FAISS_THROW_IF_NOT_MSG(
            dynamic_cast<const GpuIndexBang*>(index) != nullptr,
            "write_index: not a faiss_ext GpuIndexFlat, GpuIndexIVFFlat or GpuIndexBang "
            "(CPU indexes: use faiss::write_index)");
    return IndexKind::kBang;
}

void writeAny(ByteSink& out, const faiss::Index* index, IndexKind kind) {
    writeHeader(out, kind);
    if (kind == IndexKind::kIvfFlat) {
        writeIvfFlatIndex(out, *static_cast<const GpuIndexIVFFlat*>(index));
    } else if (kind == IndexKind::kFlat) {
        writeFlatIndex(out, *static_cast<const GpuIndexFlat*>(index));
    } else {
        writeBangIndex(out, *static_cast<const GpuIndexBang*>(index));
    }
    writeTrailer(out);
}

/// Each section is checked as it is read into the index being built, which a failure
/// (a bad file, memory exhausted) destroys before it is handed out.
std::unique_ptr<GpuIndex> readAny(ByteSource& in, GpuResources& res) {
    uint32_t version = 0;
    const IndexKind kind = readHeader(in, &version);
    std::unique_ptr<GpuIndex> index;
    if (kind == IndexKind::kFlat) {
        index = readFlatIndex(in, version, res);
    } else if (kind == IndexKind::kBang) {
        index = readBangIndex(in, version, res);
    } else {
        index = readIvfFlatIndex(in, version, res);
    }
    readTrailer(in);
    return index;
}

} // namespace

void write_index(const faiss::Index* index, const char* path) {
    const IndexKind kind = kindOf(index);
    // Streamed into a temporary file that replaces path only once complete: a failure
    // leaves no half-written file behind the path.
    FileSink out(path);
    writeAny(out, index, kind);
    out.commit();
}

std::vector<uint8_t> serialize_index(const faiss::Index* index) {
    VectorSink out;
    writeAny(out, index, kindOf(index));
    return std::move(out.bytes);
}

std::unique_ptr<GpuIndex> read_index(const char* path, GpuResources& resources) {
    FileSource in(path);
    return readAny(in, resources);
}

IndexFileInfo inspect_index(const uint8_t* data, size_t size) {
    FAISS_THROW_IF_NOT_MSG(data != nullptr || size == 0, "inspect_index: null data");
    MemorySource in(data, size);
    IndexFileInfo info;
    // Every section read and checked, the arrays a piece at a time and dropped.
    const IndexKind kind = readHeader(in, &info.version);
    if (kind == IndexKind::kFlat) {
        const FlatFields f = readFlatFields(in, info.version);
        readFlatVectors(in, info.version, f, ArrayIn<float>());
        info.kind = "GpuIndexFlat";
        info.d = f.d;
        info.metric = faiss::MetricType(f.metric);
        info.ntotal = f.ntotal;
    } else if (kind == IndexKind::kBang) {
        const BangFields f = readBangFields(in, info.version);
        BangArraysIn arrays;
        int64_t removed = 0;
        arrays.removed.put = [&](int64_t, int64_t n, const int64_t*) { removed += n; };
        readBangArrays(in, info.version, f, arrays);
        info.kind = "GpuIndexBang";
        info.d = f.d;
        info.metric = faiss::MetricType(f.metric);
        info.ntotal = f.ntotal - removed;
    } else {
        const IvfFlatFields f = readIvfFlatFields(in, info.version);
        IvfListsIn lists;
        lists.start = [&](int64_t, std::vector<int64_t> ids) {
            info.ntotal += int64_t(ids.size());
        };
        readIvfFlatLists(in, info.version, f, lists);
        info.kind = "GpuIndexIVFFlat";
        info.d = f.d;
        info.metric = faiss::MetricType(f.metric);
    }
    readTrailer(in);
    return info;
}

std::unique_ptr<GpuIndex> deserialize_index(
        const uint8_t* data,
        size_t size,
        GpuResources& resources) {
    FAISS_THROW_IF_NOT_MSG(data != nullptr || size == 0, "deserialize_index: null data");
    MemorySource in(data, size);
    return readAny(in, resources);
}

} // namespace faiss_ext
