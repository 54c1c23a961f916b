#include <faiss_ext/impl/ByteStream.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <faiss_ext/impl/Crc32c.h>

namespace faiss_ext {

void VectorSink::write(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
}

void ChecksumSink::write(const void* p, size_t n) {
    crc = crc32c(p, n, crc);
    bytes += n;
}

namespace {

/// ByteSource::peek of a source that rewind() puts back where it was: in.read's the
/// next n bytes into staging, a piece of pieceBytes at a time, each handed to piece,
/// then rewinds (an exception on the way too).
template <typename Rewind>
void readPiecesAndRewind(
        ByteSource& in,
        uint64_t n,
        void* staging,
        size_t pieceBytes,
        const std::function<void(size_t)>& piece,
        Rewind&& rewind) {
    try {
        for (uint64_t done = 0; done < n;) {
            const size_t m = size_t(std::min<uint64_t>(n - done, pieceBytes));
            in.read(staging, m);
            piece(m);
            done += m;
        }
    } catch (...) {
        rewind();
        throw;
    }
    rewind();
}

/// A name beside path that no other FileSink of any process uses now.
std::string temporaryPathFor(const std::string& path) {
    static std::atomic<uint64_t> counter{0};
    return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

} // namespace

FileSink::FileSink(const char* path) : path_(path ? path : "") {
    FAISS_THROW_IF_NOT_MSG(path != nullptr, "write_index: null path");
    tmpPath_ = temporaryPathFor(path_);
    // O_EXCL: never another's file; mode 0666 less the umask, as fopen would create it.
    const int fd = ::open(tmpPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    FAISS_THROW_IF_NOT_FMT(
            fd >= 0, "write_index: cannot create %s (%s)", tmpPath_.c_str(), std::strerror(errno));
    f_ = ::fdopen(fd, "wb");
    if (f_ == nullptr) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmpPath_.c_str());
        FAISS_THROW_FMT("write_index: cannot open %s (%s)", tmpPath_.c_str(), std::strerror(err));
    }
}

FileSink::~FileSink() {
    if (f_) {
        std::fclose(f_);
    }
    if (!committed_) {
        ::unlink(tmpPath_.c_str());
    }
}

void FileSink::write(const void* p, size_t n) {
    FAISS_THROW_IF_NOT_FMT(
            f_ != nullptr && std::fwrite(p, 1, n, f_) == n, "write_index: writing %s failed (%s)",
            tmpPath_.c_str(), std::strerror(errno));
}

void FileSink::commit() {
    FAISS_THROW_IF_NOT_MSG(f_ != nullptr && !committed_, "write_index: file already closed");
    // On the disk before the rename: a crash then leaves the old file or the whole new one.
    const bool flushed = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    const int flushErr = errno;
    std::FILE* f = f_;
    f_ = nullptr;
    const bool closed = std::fclose(f) == 0;
    FAISS_THROW_IF_NOT_FMT(
            flushed && closed, "write_index: writing %s failed (%s)", tmpPath_.c_str(),
            std::strerror(flushed ? errno : flushErr));
    FAISS_THROW_IF_NOT_FMT(
            ::rename(tmpPath_.c_str(), path_.c_str()) == 0,
            "write_index: cannot rename %s to %s (%s)", tmpPath_.c_str(), path_.c_str(),
            std::strerror(errno));
    committed_ = true;
}

void MemorySource::read(void* p, size_t n) {
    FAISS_THROW_IF_NOT_FMT(
            n <= size_ - pos_, "index data truncated: %zu bytes wanted at offset %zu of %zu", n,
            pos_, size_);
    std::memcpy(p, data_ + pos_, n);
    pos_ += n;
}

void MemorySource::peek(
        uint64_t n,
        void* staging,
        size_t pieceBytes,
        const std::function<void(size_t)>& piece) {
    const size_t start = pos_;
    readPiecesAndRewind(*this, n, staging, pieceBytes, piece, [&] { pos_ = start; });
}

FileSource::FileSource(const char* path) : path_(path ? path : "") {
    FAISS_THROW_IF_NOT_MSG(path != nullptr, "read_index: null path");
    f_ = std::fopen(path, "rb");
    FAISS_THROW_IF_NOT_FMT(
            f_ != nullptr, "read_index: cannot open %s (%s)", path, std::strerror(errno));
    long size = -1;
    if (std::fseek(f_, 0, SEEK_END) == 0) {
        size = std::ftell(f_);
    }
    if (size < 0 || std::fseek(f_, 0, SEEK_SET) != 0) {
        std::fclose(f_);
        f_ = nullptr;
        FAISS_THROW_FMT("read_index: %s is not a seekable file", path);
    }
    size_ = uint64_t(size);
}

FileSource::~FileSource() {
    if (f_) {
        std::fclose(f_);
    }
}

void FileSource::read(void* p, size_t n) {
    FAISS_THROW_IF_NOT_FMT(
            n <= size_ - pos_,
            "read_index: %s is truncated (%zu bytes wanted at offset %llu of %llu)", path_.c_str(),
            n, (unsigned long long)pos_, (unsigned long long)size_);
    FAISS_THROW_IF_NOT_FMT(
            std::fread(p, 1, n, f_) == n, "read_index: reading %s failed", path_.c_str());
    pos_ += n;
}

void FileSource::peek(
        uint64_t n,
        void* staging,
        size_t pieceBytes,
        const std::function<void(size_t)>& piece) {
    const uint64_t start = pos_;
    readPiecesAndRewind(*this, n, staging, pieceBytes, piece, [&] {
        FAISS_THROW_IF_NOT_FMT(
                std::fseek(f_, long(start), SEEK_SET) == 0, "read_index: seeking in %s failed",
                path_.c_str());
        pos_ = start;
    });
}

} // namespace faiss_ext
