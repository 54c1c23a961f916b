#include <faiss_ext/impl/ByteStream.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

FileSink::FileSink(const char* path) : path_(path ? path : "") {
    FAISS_THROW_IF_NOT_MSG(path != nullptr, "write_index: null path");
    f_ = std::fopen(path, "wb");
    FAISS_THROW_IF_NOT_FMT(
            f_ != nullptr, "write_index: cannot open %s for writing (%s)", path,
            std::strerror(errno));
}

FileSink::~FileSink() {
    if (f_) {
        std::fclose(f_);
    }
}

void FileSink::write(const void* p, size_t n) {
    FAISS_THROW_IF_NOT_FMT(
            f_ != nullptr && std::fwrite(p, 1, n, f_) == n, "write_index: writing %s failed (%s)",
            path_.c_str(), std::strerror(errno));
}

void FileSink::close() {
    std::FILE* f = f_;
    f_ = nullptr;
    FAISS_THROW_IF_NOT_FMT(
            f != nullptr && std::fclose(f) == 0, "write_index: closing %s failed (%s)",
            path_.c_str(), std::strerror(errno));
}

void MemorySource::read(void* p, size_t n) {
    FAISS_THROW_IF_NOT_FMT(
            n <= size_ - pos_, "index data truncated: %zu bytes wanted at offset %zu of %zu", n,
            pos_, size_);
    std::memcpy(p, data_ + pos_, n);
    pos_ += n;
}

uint32_t MemorySource::crc32cOfNext(uint64_t n, uint32_t crc) {
    FAISS_THROW_IF_NOT_FMT(
            n <= size_ - pos_, "index data truncated: %llu bytes wanted at offset %zu of %zu",
            (unsigned long long)n, pos_, size_);
    return crc32c(data_ + pos_, size_t(n), crc);
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

uint32_t FileSource::crc32cOfNext(uint64_t n, uint32_t crc) {
    const uint64_t start = pos_;
    std::vector<uint8_t> piece(size_t(std::min<uint64_t>(n, uint64_t(1) << 20)));
    for (uint64_t done = 0; done < n;) {
        const size_t m = size_t(std::min<uint64_t>(n - done, piece.size()));
        read(piece.data(), m);
        crc = crc32c(piece.data(), m, crc);
        done += m;
    }
    FAISS_THROW_IF_NOT_FMT(
            std::fseek(f_, long(start), SEEK_SET) == 0, "read_index: seeking in %s failed",
            path_.c_str());
    pos_ = start;
    return crc;
}

} // namespace faiss_ext
