// The versioned binary format of the faiss_ext indexes: each payload written from its
// fields and its arrays streamed a piece at a time (ArrayOut, ByteStream.h), and read
// back as its fields, then its arrays handed over a piece at a time (ArrayIn), so
// read_index and write_index never hold a second copy of an index (impl/IndexFileIo.h).
// The host images (FlatImage, IvfFlatImage, BangImage: the fields with every array in
// host vectors) go through the same functions, for the tests of the format on any
// machine. Plain C++ (no device). docs/DESIGN.md has the same notes with the history of
// the versions.
//
// File layout (little-endian, no padding):
//   "FXEXTIDX" (8 bytes)  u32 version  u32 kind (IndexKind)  u32 CRC32C of those 16
//   payload of the kind: its sections, each  u64 length  u32 CRC32C  bytes
//   "FXEXTEND" (8 bytes), then end of file
// The CRC32C (Crc32c.h) of a section covers its bytes followed by its length. A reader
// checks it while it reads the section (the file is read once) and before it returns;
// when any check of the section's fields fails first, the checksum is checked before
// that error is reported: a flipped byte anywhere is refused with a
// faiss::FaissException naming the header, the section or the end marker.
// Sections: Flat "fields" (d .. ntotal), "vectors"; IVF-Flat "fields" (d .. config),
// "centroids", "inverted lists"; Bang "fields" (d .. entry), "vectors", "graph", "PQ
// codebooks and codes", "removed vectors". Every size read is also checked against the
// bytes left before anything is allocated (see ByteStream.h), so files of the versions
// without checksums are refused safely too. A new index type adds a kind, its fields,
// its payload functions and its image; a payload change bumps the version, and every
// older version stays readable.
//
// What a saved index keeps: its data, its default search knob (IVF nprobe, Bang
// search_L) and its whole configuration struct (IndexConfig.h: GpuIndexConfig's
// pageBytes, Flat's precision and copy, IVF's mergePath / scanPath /
// listChunkVectors, Bang's build, pqSubquantizers and vectorPlacement), each struct
// written field by field in one place
// (IndexImage.cpp); read_index builds the index with that configuration. Not kept: the GpuResources
// (device, temporary memory: the reader's) and GpuIndexIVFFlat::cp (k-means
// parameters of a train that has happened; faiss does not save them either).
//
// Versions:
//   1  Flat: d, metric, ntotal, vectors. IVF-Flat: d, metric, quantizer metric, nlist,
//      nprobe, trained, centroids, lists. Bang: d, metric, the build fields, search_L,
//      ntotal, entry, vectors, graph.
//   2  Bang adds pqSubquantizers after the entry point and the PQ codebooks and codes
//      after the graph.
//   3  every payload carries its configuration struct: Flat after the
//      metric, IVF-Flat after the trained flag, Bang in place of the build fields (the
//      same fields inside GpuIndexBangConfig). Files of versions 1 and 2 load with the
//      defaults for what they do not hold.
//   4  the header and every payload section carry a CRC32C; the fields are those of
//      version 3, in the same order. Files of versions 1 to 3 load without checksums
//      to check.
//      Bang images gain a fifth section: the removed vectors (u64 count, count int64
//      node ids, ascending; GpuIndexBang::remove_ids).
//   5  Bang's build config ends with candidateLists (i64) and candidateProbes (i32).
//      Files of versions 1 to 4 load with their defaults.
//   6  GpuIndexBangConfig ends with vectorPlacement (u32) after
//      pqSubquantizers. Files of versions 1 to 5 load with the vectors on the device.
//   7  (written) GpuIndexFlatConfig ends with its copy (u8: 0 none, 1 float16Copy, 2
//      int8Copy) after precision. Files of versions 1 to 6 load without a copy.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/ByteStream.h>

namespace faiss_ext {

/// The version written; every version from kIndexFormatOldestVersion up is read.
constexpr uint32_t kIndexFormatVersion = 8;
constexpr uint32_t kIndexFormatOldestVersion = 1;

enum class IndexKind : uint32_t {
    kFlat = 1,
    kIvfFlat = 2,
    kBang = 3,
};

struct FlatFields {
    int d = 0;
    int metric = 1; ///< faiss::MetricType
    GpuIndexFlatConfig config;
    int64_t ntotal = 0;
};

struct FlatImage : FlatFields {
    std::vector<float> vectors; ///< ntotal x d
};

/// IVF-Flat's fields and its centroids (small: read with them, before the lists).
struct IvfFlatFields {
    int d = 0;
    int metric = 1;          ///< faiss::MetricType of the lists
    int quantizerMetric = 1; ///< faiss::MetricType of the coarse quantizer
    int64_t nlist = 0;
    GpuIndexIVFFlatConfig config;
    uint64_t nprobe = 1;
    bool trained = false;
    std::vector<float> centroids; ///< nlist x d when trained, else empty
};

struct IvfFlatImage : IvfFlatFields {
    std::vector<std::vector<float>> listVectors; ///< per list, length x d
    std::vector<std::vector<int64_t>> listIds;   ///< per list, length
};

struct BangFields {
    int d = 0;
    int metric = 1; ///< faiss::MetricType
    /// Version 1 files have no PQ state: exact mode.
    GpuIndexBangConfig config;
    int searchL = 64; ///< GpuIndexBang::search_L
    int64_t ntotal = 0;
    int64_t entry = 0;
};

struct BangImage : BangFields {
    std::vector<float> vectors; ///< ntotal x d
    std::vector<int32_t> graph; ///< ntotal x config.build.graphDegree, ids in [-1, ntotal)
    /// PQ mode with ntotal > 0: the codebooks (M x 256 x d / M) and codes (ntotal x
    /// M); else empty.
    std::vector<float> pqCentroids;
    std::vector<uint8_t> pqCodes;
    /// Removed nodes (ascending, in [0, ntotal)): the "removed vectors" section.
    std::vector<int64_t> tombstones;
};

/// Writes the header of the current version, its checksum included.
void writeHeader(ByteSink& out, IndexKind kind);
/// Reads and checks the magic, the version and (version 4 on) the header's checksum;
/// returns the kind (checked to be known) and, when version is not null, the file's
/// format version.
IndexKind readHeader(ByteSource& in, uint32_t* version = nullptr);
/// Writes / checks the end marker (and that nothing follows it).
void writeTrailer(ByteSink& out);
void readTrailer(ByteSource& in);

// The payloads, written in the current version; read in the file's `version`
// (readHeader): the fields first (the sizes of the arrays), then the arrays. The readers
// check each section's checksum (version 4 on), then sizes, finiteness, ids and enum
// values, not the ranges the index constructors check again when read_index builds the
// index. An array's piece is checked before it is handed over; a failure throws, and
// what was handed over is the caller's to drop.

void writeFlatPayload(ByteSink& out, const FlatFields& fields, const ArrayOut<float>& vectors);
FlatFields readFlatFields(ByteSource& in, uint32_t version);
/// The vectors: ntotal rows of d.
void readFlatVectors(
        ByteSource& in,
        uint32_t version,
        const FlatFields& fields,
        const ArrayIn<float>& vectors);

/// One inverted list as a writer streams it: its ids (one a row; the list's length is
/// ids.rows) and its vectors (in rows of any width).
struct IvfListOut {
    ArrayOut<int64_t> ids;
    ArrayOut<float> vectors;
};
/// Where a reader puts the inverted lists, one after the other: start(list, ids) with
/// all of a list's ids (8 bytes a vector), then its vectors (rows of d, row0 counted in
/// the list) through `vectors`.
struct IvfListsIn {
    std::function<void(int64_t list, std::vector<int64_t> ids)> start;
    ArrayIn<float> vectors;
};
/// list(l) gives list l, for l = 0 .. nlist - 1 in order (twice: IndexImage.cpp's
/// writeSection).
void writeIvfFlatPayload(
        ByteSink& out,
        const IvfFlatFields& fields,
        const std::function<IvfListOut(int64_t list)>& list);
IvfFlatFields readIvfFlatFields(ByteSource& in, uint32_t version);
void readIvfFlatLists(
        ByteSource& in,
        uint32_t version,
        const IvfFlatFields& fields,
        const IvfListsIn& lists);

/// GpuIndexBang's arrays: vectors (ntotal rows of d), graph (ntotal rows of
/// graphDegree), in PQ mode with ntotal > 0 the codebooks (256 x the stored width
/// floats, one a row) and codes (ntotal rows of the stored M; impl/BangInnerProduct.h),
/// and the removed nodes (one a row).
struct BangArraysOut {
    ArrayOut<float> vectors;
    ArrayOut<int32_t> graph;
    ArrayOut<float> pqCentroids;
    ArrayOut<uint8_t> pqCodes;
    ArrayOut<int64_t> removed;
};
struct BangArraysIn {
    ArrayIn<float> vectors;
    ArrayIn<int32_t> graph;
    ArrayIn<float> pqCentroids;
    ArrayIn<uint8_t> pqCodes;
    ArrayIn<int64_t> removed;
};
void writeBangPayload(ByteSink& out, const BangFields& fields, const BangArraysOut& arrays);
BangFields readBangFields(ByteSource& in, uint32_t version);
void readBangArrays(
        ByteSource& in,
        uint32_t version,
        const BangFields& fields,
        const BangArraysIn& arrays);

/// The host images through the payload functions above.
void writeFlatImage(ByteSink& out, const FlatImage& image);
FlatImage readFlatImage(ByteSource& in, uint32_t version = kIndexFormatVersion);
void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& image);
IvfFlatImage readIvfFlatImage(ByteSource& in, uint32_t version = kIndexFormatVersion);
void writeBangImage(ByteSink& out, const BangImage& image);
BangImage readBangImage(ByteSource& in, uint32_t version = kIndexFormatVersion);

} // namespace faiss_ext
