// Host images of the faiss_ext indexes and their versioned binary format: plain C++
// (no device), so the format checks are tested on any machine.
//
// File layout (little-endian, no padding):
//   "FXEXTIDX" (8 bytes)  u32 version (2; 1 is still read)  u32 kind (IndexKind)
//   payload of the kind
//   "FXEXTEND" (8 bytes), then end of file
// Every size read is checked against the bytes left before anything is allocated, so
// a truncated or foreign file gives a faiss::FaissException, never a crash or a huge
// allocation. A new index type (GpuIndexBang) adds a kind, an image and its two
// functions; existing kinds keep their payloads (a payload change bumps the version).
// Version 2 added GpuIndexBang's PQ state; the other payloads are the same in 1 and 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <faiss_ext/IndexConfig.h>

namespace faiss_ext {

/// The version written; every version from kIndexFormatOldestVersion up is read.
constexpr uint32_t kIndexFormatVersion = 2;
constexpr uint32_t kIndexFormatOldestVersion = 1;

enum class IndexKind : uint32_t {
    kFlat = 1,
    kIvfFlat = 2,
    kBang = 3,
};

/// Where serialized bytes go.
class ByteSink {
   public:
    virtual ~ByteSink() = default;
    virtual void write(const void* p, size_t bytes) = 0;
};

/// Where serialized bytes come from; read throws past the end.
class ByteSource {
   public:
    virtual ~ByteSource() = default;
    virtual void read(void* p, size_t bytes) = 0;
    virtual uint64_t remaining() const = 0;
};

class VectorSink : public ByteSink {
   public:
    void write(const void* p, size_t bytes) override;
    std::vector<uint8_t> bytes;
};

class FileSink : public ByteSink {
   public:
    explicit FileSink(const char* path);
    ~FileSink() override;
    void write(const void* p, size_t bytes) override;
    /// Flushes and closes; throws if the data did not reach the file.
    void close();

   private:
    std::string path_;
    std::FILE* f_ = nullptr;
};

class MemorySource : public ByteSource {
   public:
    MemorySource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    void read(void* p, size_t bytes) override;
    uint64_t remaining() const override {
        return size_ - pos_;
    }

   private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

class FileSource : public ByteSource {
   public:
    explicit FileSource(const char* path);
    ~FileSource() override;
    void read(void* p, size_t bytes) override;
    uint64_t remaining() const override {
        return size_ - pos_;
    }

   private:
    std::string path_;
    std::FILE* f_ = nullptr;
    uint64_t size_ = 0;
    uint64_t pos_ = 0;
};

struct FlatImage {
    int d = 0;
    int metric = 1; ///< faiss::MetricType
    int64_t ntotal = 0;
    std::vector<float> vectors; ///< ntotal x d
};

struct IvfFlatImage {
    int d = 0;
    int metric = 1;          ///< faiss::MetricType of the lists
    int quantizerMetric = 1; ///< faiss::MetricType of the coarse quantizer
    int64_t nlist = 0;
    uint64_t nprobe = 1;
    bool trained = false;
    std::vector<float> centroids;               ///< nlist x d when trained, else empty
    std::vector<std::vector<float>> listVectors; ///< per list, length x d
    std::vector<std::vector<int64_t>> listIds;   ///< per list, length
};

struct BangImage {
    int d = 0;
    int metric = 1; ///< faiss::MetricType (L2)
    /// The index's configuration (version 1 files have no PQ state: exact mode).
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
};

void writeHeader(ByteSink& out, IndexKind kind);
/// Reads and checks the magic and version; returns the kind (checked to be known) and,
/// when version is not null, the file's format version.
IndexKind readHeader(ByteSource& in, uint32_t* version = nullptr);
/// Writes / checks the end marker (and that nothing follows it).
void writeTrailer(ByteSink& out);
void readTrailer(ByteSource& in);

void writeFlatImage(ByteSink& out, const FlatImage& image);
FlatImage readFlatImage(ByteSource& in);
void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& image);
IvfFlatImage readIvfFlatImage(ByteSource& in);
void writeBangImage(ByteSink& out, const BangImage& image);
/// Checks sizes, finiteness, ids and the build parameters' ranges (not the rules the
/// index constructor checks again: degree, alpha and sub-quantizer limits). version:
/// the file's (readHeader); version 1 payloads have no PQ fields.
BangImage readBangImage(ByteSource& in, uint32_t version = kIndexFormatVersion);

} // namespace faiss_ext
