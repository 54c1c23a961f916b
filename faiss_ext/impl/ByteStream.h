// Bytes in and out of the index file format (IndexImage.h): sinks and sources over
// memory and files, the typed reads and writes of fields, and arrays streamed in
// pieces. Every read is checked against the bytes left, so a truncated or foreign file
// gives a faiss::FaissException, never a crash or a huge allocation. Plain C++ (no
// device).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
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
    /// Hands the next `bytes` bytes to piece(n) without consuming them, copied into
    /// `staging` in pieces of `pieceBytes` (the last one shorter); throws if fewer are
    /// left.
    virtual void peek(
            uint64_t bytes,
            void* staging,
            size_t pieceBytes,
            const std::function<void(size_t n)>& piece) = 0;
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

/// A file that appears at `path` only once complete: the bytes go to a new temporary
/// file beside it, which commit() flushes to the disk, closes and renames over path.
/// Destroyed without a commit (an exception on the way), it removes the temporary and
/// leaves path as it was.
class FileSink : public ByteSink {
   public:
    explicit FileSink(const char* path);
    ~FileSink() override;
    void write(const void* p, size_t bytes) override;
    /// Throws if the data did not reach the file or the rename failed (the temporary
    /// is removed then too).
    void commit();
    /// The temporary file's name (for the tests).
    const std::string& temporaryPath() const {
        return tmpPath_;
    }

   private:
    std::string path_;
    std::string tmpPath_;
    std::FILE* f_ = nullptr;
    bool committed_ = false;
};

class MemorySource : public ByteSource {
   public:
    MemorySource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    void read(void* p, size_t bytes) override;
    uint64_t remaining() const override {
        return size_ - pos_;
    }
    void peek(
            uint64_t bytes,
            void* staging,
            size_t pieceBytes,
            const std::function<void(size_t n)>& piece) override;

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
    /// Reads ahead, then seeks back.
    void peek(
            uint64_t bytes,
            void* staging,
            size_t pieceBytes,
            const std::function<void(size_t n)>& piece) override;

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

// Arrays streamed in pieces of rows: an index's arrays go to a file and come back
// through a host buffer of one piece at a time, never whole.

/// Host memory a streamed array takes at a time (a piece): 16 MiB, a few milliseconds
/// of a disk or of the bus, so the per-piece costs (a system call, a wait for the
/// device) are small, and small beside any index worth streaming.
constexpr size_t kStreamPieceBytes = size_t(16) << 20;

/// Rows of rowBytes bytes in a piece (at least 1).
inline int64_t rowsPerPiece(size_t rowBytes) {
    return int64_t(std::max<size_t>(1, kStreamPieceBytes / std::max<size_t>(1, rowBytes)));
}

/// An array a writer streams: rows x width elements, handed out by piece(row0, n) (n
/// <= pieceRows, in order): rows [row0, row0 + n) in memory that stays valid until
/// the next call (the owner's own, or a buffer it filled).
template <typename T>
struct ArrayOut {
    int64_t rows = 0;
    int width = 1;
    int64_t pieceRows = 1;
    std::function<const T*(int64_t row0, int64_t n)> piece;
};

/// An array in host memory as an ArrayOut (no copy: data must outlive it).
template <typename T>
ArrayOut<T> hostArrayOut(const T* data, int64_t rows, int width) {
    ArrayOut<T> a;
    a.rows = rows;
    a.width = width;
    a.pieceRows = rowsPerPiece(size_t(width) * sizeof(T));
    a.piece = [data, width](int64_t row0, int64_t) { return data + size_t(row0) * width; };
    return a;
}

/// A host vector's elements (one a row) as an ArrayOut that keeps them.
template <typename T>
ArrayOut<T> ownedArrayOut(std::vector<T> v) {
    auto kept = std::make_shared<std::vector<T>>(std::move(v));
    ArrayOut<T> a;
    a.rows = int64_t(kept->size());
    a.pieceRows = rowsPerPiece(sizeof(T));
    a.piece = [kept](int64_t row0, int64_t) { return kept->data() + row0; };
    return a;
}

/// Writes an array's elements (no length), a piece at a time.
template <typename T>
void putRows(ByteSink& out, const ArrayOut<T>& a) {
    for (int64_t r = 0; r < a.rows; r += a.pieceRows) {
        const int64_t n = std::min(a.pieceRows, a.rows - r);
        out.write(a.piece(r, n), size_t(n) * a.width * sizeof(T));
    }
}

/// Where a reader puts an array: put(row0, n, x) with consecutive pieces of at most
/// pieceRows rows (0: as many as kStreamPieceBytes hold), each checked first. scan,
/// when set, sees every piece before any is put, in a first pass over the source (the
/// bytes read twice): for what must be known of the whole array before its rows are
/// stored.
template <typename T>
struct ArrayIn {
    std::function<void(int64_t row0, int64_t n, const T* x)> put;
    std::function<void(int64_t row0, int64_t n, const T* x)> scan;
    int64_t pieceRows = 0;
};

/// An ArrayIn that appends the elements to v.
template <typename T>
ArrayIn<T> appendTo(std::vector<T>& v, int width = 1) {
    ArrayIn<T> a;
    a.put = [&v, width](int64_t, int64_t n, const T* x) {
        v.insert(v.end(), x, x + size_t(n) * width);
    };
    return a;
}

/// Reads rows x width elements (after checking that the source holds them) into
/// `to`, a piece at a time through one host buffer; check(x, count) runs once on each
/// piece's elements, in order, before they are scanned (else put). `what` names them
/// in messages.
template <typename T, typename Check>
void getRows(
        ByteSource& in,
        int64_t rows,
        int width,
        const char* what,
        const ArrayIn<T>& to,
        Check&& check) {
    const uint64_t count = uint64_t(rows) * uint64_t(width);
    FAISS_THROW_IF_NOT_FMT(
            rows >= 0 && count <= in.remaining() / sizeof(T),
            "index file: %s needs %llu elements of %zu bytes, only %llu bytes are left", what,
            (unsigned long long)count, sizeof(T), (unsigned long long)in.remaining());
    if (rows == 0) {
        return;
    }
    const size_t rowBytes = size_t(width) * sizeof(T);
    const int64_t step = std::min(rows, to.pieceRows > 0 ? to.pieceRows : rowsPerPiece(rowBytes));
    std::vector<T> piece(size_t(step) * width);
    if (to.scan) {
        int64_t row0 = 0;
        in.peek(count * sizeof(T), piece.data(), size_t(step) * rowBytes, [&](size_t bytes) {
            const int64_t n = int64_t(bytes / rowBytes);
            check(piece.data(), size_t(n) * width);
            to.scan(row0, n, piece.data());
            row0 += n;
        });
    }
    for (int64_t r = 0; r < rows; r += step) {
        const int64_t n = std::min(step, rows - r);
        in.read(piece.data(), size_t(n) * rowBytes);
        if (!to.scan) {
            check(piece.data(), size_t(n) * width);
        }
        if (to.put) {
            to.put(r, n, piece.data());
        }
    }
}

} // namespace faiss_ext
