// Bytes in and out of the index file format (IndexImage.h): sinks and sources over
// memory and files, and the typed reads and writes of fields and arrays. Every read is
// checked against the bytes left, so a truncated or foreign file gives a
// faiss::FaissException, never a crash or a huge allocation. Plain C++ (no device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>

namespace faiss_ext {

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
    /// The CRC32C (Crc32c.h) of the next `bytes` bytes continuing `crc`, without
    /// consuming them; throws if fewer are left.
    virtual uint32_t crc32cOfNext(uint64_t bytes, uint32_t crc) = 0;
};

class VectorSink : public ByteSink {
   public:
    void write(const void* p, size_t bytes) override;
    std::vector<uint8_t> bytes;
};

/// Keeps only the count and the CRC32C of the bytes written to it.
class ChecksumSink : public ByteSink {
   public:
    void write(const void* p, size_t bytes) override;
    uint64_t bytes = 0;
    uint32_t crc = 0;
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
    uint32_t crc32cOfNext(uint64_t bytes, uint32_t crc) override;

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
    /// Reads ahead in pieces, then seeks back.
    uint32_t crc32cOfNext(uint64_t bytes, uint32_t crc) override;

   private:
    std::string path_;
    std::FILE* f_ = nullptr;
    uint64_t size_ = 0;
    uint64_t pos_ = 0;
};

/// Writes one field (a trivially copyable value, little-endian as in memory).
template <typename T>
void put(ByteSink& out, T v) {
    out.write(&v, sizeof(T));
}

/// Reads one field.
template <typename T>
T get(ByteSource& in) {
    T v;
    in.read(&v, sizeof(T));
    return v;
}

/// Writes an array's elements (no length).
template <typename T>
void putArray(ByteSink& out, const std::vector<T>& v) {
    if (!v.empty()) {
        out.write(v.data(), v.size() * sizeof(T));
    }
}

/// Reads count elements after checking that the source holds them.
template <typename T>
std::vector<T> getArray(ByteSource& in, uint64_t count, const char* what) {
    FAISS_THROW_IF_NOT_FMT(
            count <= in.remaining() / sizeof(T),
            "index file: %s needs %llu elements of %zu bytes, only %llu bytes are left", what,
            (unsigned long long)count, sizeof(T), (unsigned long long)in.remaining());
    std::vector<T> v(static_cast<size_t>(count));
    if (count > 0) {
        in.read(v.data(), size_t(count) * sizeof(T));
    }
    return v;
}

} // namespace faiss_ext
