// Host images of the faiss_ext indexes and their versioned binary format: plain C++
// (no device), so the format checks are tested on any machine. docs/DESIGN.md has the
// same notes with the history of the versions.
//
// File layout (little-endian, no padding):
//   "FXEXTIDX" (8 bytes)  u32 version  u32 kind (IndexKind)  u32 CRC32C of those 16
//   payload of the kind: its sections, each  u64 length  u32 CRC32C  bytes
//   "FXEXTEND" (8 bytes), then end of file
// The CRC32C (Crc32c.h) of a section covers its bytes followed by its length, and is
// checked before anything in the section is parsed: a flipped byte anywhere is refused
// with a faiss::FaissException naming the header, the section or the end marker.
// Sections: Flat "fields" (d .. ntotal), "vectors"; IVF-Flat "fields" (d .. config),
// "centroids", "inverted lists"; Bang "fields" (d .. entry), "vectors", "graph", "PQ
// codebooks and codes". Every size read is also checked against the bytes left before
// anything is allocated (see ByteStream.h), so files of the versions without checksums
// are refused safely too. A new index type adds a kind, an image and its two
// functions; a payload change bumps the version, and every older version stays
// readable.
//
// What a saved index keeps: its data, its default search knob (IVF nprobe, Bang
// search_L) and its whole configuration struct (IndexConfig.h: GpuIndexConfig's
// pageBytes, IVF's mergePath / scanPath / listChunkVectors, Bang's build,
// pqSubquantizers and vectorPlacement), each struct written field by field in one place
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
//   6  (written) GpuIndexBangConfig ends with vectorPlacement (u32) after
//      pqSubquantizers. Files of versions 1 to 5 load with the vectors on the device.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss_ext/IndexConfig.h>
#include <faiss_ext/impl/ByteStream.h>

namespace faiss_ext {

/// The version written; every version from kIndexFormatOldestVersion up is read.
constexpr uint32_t kIndexFormatVersion = 6;
constexpr uint32_t kIndexFormatOldestVersion = 1;

enum class IndexKind : uint32_t {
    kFlat = 1,
    kIvfFlat = 2,
    kBang = 3,
};

struct FlatImage {
    int d = 0;
    int metric = 1; ///< faiss::MetricType
    GpuIndexFlatConfig config;
    int64_t ntotal = 0;
    std::vector<float> vectors; ///< ntotal x d
};

struct IvfFlatImage {
    int d = 0;
    int metric = 1;          ///< faiss::MetricType of the lists
    int quantizerMetric = 1; ///< faiss::MetricType of the coarse quantizer
    int64_t nlist = 0;
    GpuIndexIVFFlatConfig config;
    uint64_t nprobe = 1;
    bool trained = false;
    std::vector<float> centroids;                ///< nlist x d when trained, else empty
    std::vector<std::vector<float>> listVectors; ///< per list, length x d
    std::vector<std::vector<int64_t>> listIds;   ///< per list, length
};

struct BangImage {
    int d = 0;
    int metric = 1; ///< faiss::MetricType (L2)
    /// Version 1 files have no PQ state: exact mode.
    GpuIndexBangConfig config;
    int searchL = 64; ///< GpuIndexBang::search_L
    int64_t ntotal = 0;
    int64_t entry = 0;
    std::vector<float> vectors; ///< ntotal x d
    std::vector<int32_t> graph; ///< ntotal x config.build.graphDegree, ids in [-1, ntotal)
    /// PQ mode with ntotal > 0: the codebooks (M x 256 x d / M) and codes (ntotal x
    /// M); else empty.
    std::vector<float> pqCentroids;
    std::vector<uint8_t> pqCodes;
    /// Removed nodes (ascending, in [0, ntotal)): the "FXTOMBST" section.
    std::vector<int64_t> tombstones;
};

/// Writes the header of the current version, its checksum included.
void writeHeader(ByteSink& out, IndexKind kind);
/// Reads and checks the magic, the version and (version 4 on) the header's checksum;
/// returns the kind (checked to be known) and, when version is not null, the file's
/// format version.
IndexKind readHeader(ByteSource& in, uint32_t* version = nullptr);
/// Writes / checks the end marker (and that nothing follows it). With bang, the
/// optional sections of a Bang payload may come first and are read into it.
void writeTrailer(ByteSink& out);
void readTrailer(ByteSource& in);

/// The payloads, written in the current version; read in the file's `version`
/// (readHeader). The readers check each section's checksum (version 4 on), then
/// sizes, finiteness, ids and enum values, not the ranges the index constructors check
/// again when read_index builds the index.
void writeFlatImage(ByteSink& out, const FlatImage& image);
FlatImage readFlatImage(ByteSource& in, uint32_t version = kIndexFormatVersion);
void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& image);
IvfFlatImage readIvfFlatImage(ByteSource& in, uint32_t version = kIndexFormatVersion);
void writeBangImage(ByteSink& out, const BangImage& image);
BangImage readBangImage(ByteSource& in, uint32_t version = kIndexFormatVersion);

} // namespace faiss_ext
