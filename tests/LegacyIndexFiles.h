// Index files in the layouts of format versions 1 to 7 (impl/IndexImage.h), which the
// library reads but no longer writes: versions 1 and 2 written here field by field,
// apart from the library's writer, version 7 as the current file less Bang's vector
// storage, version 6 as a version 7 file less Flat's copy flag,
// version 5 as a version 6 file less Bang's vector placement, version 4 as a version 5
// file less Bang's candidate source, version 3 as a version 4 file without its
// checksums; where the sections of a file lie; whole files of the current version in
// and out. For the tests that old files still load and that every flipped byte is
// refused.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/Crc32c.h>
#include <faiss_ext/impl/IndexImage.h>

namespace faiss_ext {
namespace test {

namespace legacy {

inline void header(VectorSink& s, uint32_t version, IndexKind kind) {
    s.write("FXEXTIDX", 8);
    put<uint32_t>(s, version);
    put<uint32_t>(s, uint32_t(kind));
}

inline std::vector<uint8_t> trailer(VectorSink& s) {
    s.write("FXEXTEND", 8);
    return s.bytes;
}

} // namespace legacy

/// A GpuIndexFlat file of version 1 or 2 (the same payload): no configuration.
inline std::vector<uint8_t> legacyFlatFile(const FlatImage& im, uint32_t version) {
    VectorSink s;
    legacy::header(s, version, IndexKind::kFlat);
    put<int32_t>(s, im.d);
    put<int32_t>(s, im.metric);
    put<int64_t>(s, im.ntotal);
    putArray(s, im.vectors);
    return legacy::trailer(s);
}

/// A GpuIndexIVFFlat file of version 1 or 2 (the same payload): no configuration.
inline std::vector<uint8_t> legacyIvfFlatFile(const IvfFlatImage& im, uint32_t version) {
    VectorSink s;
    legacy::header(s, version, IndexKind::kIvfFlat);
    put<int32_t>(s, im.d);
    put<int32_t>(s, im.metric);
    put<int32_t>(s, im.quantizerMetric);
    put<int64_t>(s, im.nlist);
    put<uint64_t>(s, im.nprobe);
    put<uint8_t>(s, im.trained ? 1 : 0);
    putArray(s, im.centroids);
    for (int64_t l = 0; l < im.nlist; ++l) {
        put<int64_t>(s, int64_t(im.listIds[l].size()));
        putArray(s, im.listIds[l]);
        putArray(s, im.listVectors[l]);
    }
    return legacy::trailer(s);
}

/// A GpuIndexBang file: version 1 holds the build fields and no PQ state (the image
/// must be in exact mode); version 2 adds the sub-quantizer count and the PQ arrays.
inline std::vector<uint8_t> legacyBangFile(const BangImage& im, uint32_t version) {
    VectorSink s;
    legacy::header(s, version, IndexKind::kBang);
    const BangBuildConfig& b = im.config.build;
    put<int32_t>(s, im.d);
    put<int32_t>(s, im.metric);
    put<int32_t>(s, b.graphDegree);
    put<float>(s, b.alpha);
    put<int32_t>(s, b.candidates);
    put<int64_t>(s, b.hubs);
    put<int32_t>(s, b.passes);
    put<int32_t>(s, b.searchL);
    put<int32_t>(s, im.searchL);
    put<int64_t>(s, im.ntotal);
    put<int64_t>(s, im.entry);
    if (version >= 2) {
        put<int32_t>(s, im.config.pqSubquantizers);
    }
    putArray(s, im.vectors);
    putArray(s, im.graph);
    if (version >= 2) {
        putArray(s, im.pqCentroids);
        putArray(s, im.pqCodes);
    }
    return legacy::trailer(s);
}

/// A whole file of the current version: header, the image's payload, end marker.
template <typename Image>
std::vector<uint8_t> encodeFile(
        IndexKind kind,
        void (*write)(ByteSink&, const Image&),
        const Image& image) {
    VectorSink s;
    writeHeader(s, kind);
    write(s, image);
    writeTrailer(s);
    return s.bytes;
}

/// Reads a whole file of `kind` from the first `size` bytes of b, in its version.
template <typename Image>
Image decodeFile(
        IndexKind kind,
        Image (*read)(ByteSource&, uint32_t),
        const std::vector<uint8_t>& b,
        size_t size) {
    MemorySource in(b.data(), size);
    uint32_t version = 0;
    EXPECT_EQ(readHeader(in, &version), kind);
    Image image = read(in, version);
    readTrailer(in);
    return image;
}

/// Where one section of a file of version 4 or later lies: [begin, end) from its length field to
/// its last byte.
struct SectionSpan {
    size_t begin;
    size_t end;
};

/// The sections of a file of version 4 or later, in order, after the 20-byte header and before the
/// 8-byte end marker. The file must be well formed.
inline std::vector<SectionSpan> sectionSpans(const std::vector<uint8_t>& file) {
    std::vector<SectionSpan> spans;
    size_t pos = 20;
    while (pos + 8 < file.size()) {
        uint64_t length = 0;
        std::memcpy(&length, file.data() + pos, 8);
        spans.push_back({pos, pos + 12 + size_t(length)});
        pos = spans.back().end;
    }
    EXPECT_EQ(pos + 8, file.size()) << "sections do not end at the end marker";
    return spans;
}

namespace legacy {

/// `file` (version 4 or later) as version `version`, with `bytes` bytes of the fields
/// section dropped, those `tail` bytes before the section's end, when the file holds an
/// index of `kind` (the files of other kinds differ only in the version number). The
/// section's length and checksum and the header's checksum are made again.
inline std::vector<uint8_t> withoutFields(
        const std::vector<uint8_t>& file,
        uint32_t version,
        IndexKind kind,
        size_t bytes,
        size_t tail) {
    std::vector<uint8_t> out = file;
    std::memcpy(out.data() + 8, &version, 4);
    const uint32_t headerCrc = crc32c(out.data(), 16);
    std::memcpy(out.data() + 16, &headerCrc, 4);
    uint32_t fileKind = 0;
    std::memcpy(&fileKind, file.data() + 12, 4);
    if (fileKind == uint32_t(kind)) {
        const SectionSpan fields = sectionSpans(file).front();
        out.erase(out.begin() + (fields.end - tail - bytes), out.begin() + (fields.end - tail));
        const uint64_t length = fields.end - fields.begin - 12 - bytes;
        const uint32_t crc =
                crc32c(&length, sizeof(length), crc32c(out.data() + fields.begin + 12, length));
        std::memcpy(out.data() + fields.begin, &length, 8);
        std::memcpy(out.data() + fields.begin + 8, &crc, 4);
    }
    return out;
}

} // namespace legacy

/// The version 7 file of the same index as `file` (the current version, 8): Bang's
/// fields section less the config's vectorStorage (the 4 bytes before search_L, ntotal
/// and entry).
inline std::vector<uint8_t> version7File(const std::vector<uint8_t>& file) {
    return legacy::withoutFields(file, 7, IndexKind::kBang, 4, 4 + 8 + 8);
}

/// The version 6 file of the same index as `file` (the current version): version 7's
/// Flat fields section less the config's copy flag (the byte before ntotal).
inline std::vector<uint8_t> version6File(const std::vector<uint8_t>& file) {
    return legacy::withoutFields(version7File(file), 6, IndexKind::kFlat, 1, 8);
}

/// The version 5 file of the same index as `file` (the current version): version 6's
/// Bang fields section less the config's vectorPlacement (the 4 bytes before search_L,
/// ntotal and entry).
inline std::vector<uint8_t> version5File(const std::vector<uint8_t>& file) {
    return legacy::withoutFields(version6File(file), 5, IndexKind::kBang, 4, 4 + 8 + 8);
}

/// The version 4 file of the same index as `file` (the current version): version 5's
/// Bang fields less the build config's candidateLists and candidateProbes (the 12
/// bytes before pqSubquantizers, search_L, ntotal and entry).
inline std::vector<uint8_t> version4File(const std::vector<uint8_t>& file) {
    return legacy::withoutFields(version5File(file), 4, IndexKind::kBang, 12, 4 + 4 + 8 + 8);
}

/// The version 3 file of the same index as `file` (the current version): version 4's
/// fields in the same order, without the header's checksum and the sections' lengths
/// and checksums.
inline std::vector<uint8_t> version3File(const std::vector<uint8_t>& current) {
    const std::vector<uint8_t> file = version4File(current);
    std::vector<uint8_t> v3(file.begin(), file.begin() + 16);
    const uint32_t version = 3;
    std::memcpy(v3.data() + 8, &version, 4);
    std::vector<SectionSpan> spans = sectionSpans(file);
    uint32_t kind = 0;
    std::memcpy(&kind, file.data() + 12, 4);
    if (kind == uint32_t(IndexKind::kBang)) {
        spans.pop_back(); // Bang's removed vectors: a section new in version 4
    }
    for (const SectionSpan& s : spans) {
        v3.insert(v3.end(), file.begin() + s.begin + 12, file.begin() + s.end);
    }
    v3.insert(v3.end(), file.end() - 8, file.end());
    return v3;
}

} // namespace test
} // namespace faiss_ext
