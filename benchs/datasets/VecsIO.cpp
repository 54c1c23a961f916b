#include "VecsIO.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace faiss_ext {
namespace datasets {

namespace {

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

File open(const std::string& path, const char* mode) {
    File f(std::fopen(path.c_str(), mode), &std::fclose);
    if (!f) {
        throw std::runtime_error("cannot open " + path);
    }
    return f;
}

int64_t fileSize(FILE* f, const std::string& path) {
    if (std::fseek(f, 0, SEEK_END) != 0) {
        throw std::runtime_error("cannot seek in " + path);
    }
    long size = std::ftell(f);
    std::rewind(f);
    return size;
}

void readExact(FILE* f, void* dst, size_t bytes, const std::string& path) {
    if (bytes > 0 && std::fread(dst, 1, bytes, f) != bytes) {
        throw std::runtime_error("truncated file " + path);
    }
}

void writeExact(FILE* f, const void* src, size_t bytes, const std::string& path) {
    if (bytes > 0 && std::fwrite(src, 1, bytes, f) != bytes) {
        throw std::runtime_error("cannot write " + path);
    }
}

// *vecs: every row is int32 d then d components of T.
template <typename T>
Matrix<T> readVecs(const std::string& path) {
    File f = open(path, "rb");
    const int64_t size = fileSize(f.get(), path);
    Matrix<T> m;
    if (size == 0) {
        return m;
    }
    int32_t d = 0;
    readExact(f.get(), &d, sizeof(d), path);
    if (d <= 0 || d > (1 << 20)) {
        throw std::runtime_error("bad dimension in " + path);
    }
    const int64_t row = int64_t(sizeof(int32_t)) + int64_t(d) * sizeof(T);
    if (size % row != 0) {
        throw std::runtime_error("size of " + path + " is not a whole number of rows");
    }
    m.n = size / row;
    m.d = d;
    m.data.resize(size_t(m.n) * d);
    std::rewind(f.get());
    for (int64_t i = 0; i < m.n; ++i) {
        int32_t di = 0;
        readExact(f.get(), &di, sizeof(di), path);
        if (di != d) {
            throw std::runtime_error(
                    "row " + std::to_string(i) + " of " + path + " has another dimension");
        }
        readExact(f.get(), m.data.data() + size_t(i) * d, size_t(d) * sizeof(T), path);
    }
    return m;
}

template <typename T>
void writeVecs(const std::string& path, const Matrix<T>& m) {
    File f = open(path, "wb");
    const int32_t d = m.d;
    for (int64_t i = 0; i < m.n; ++i) {
        writeExact(f.get(), &d, sizeof(d), path);
        writeExact(f.get(), m.data.data() + size_t(i) * d, size_t(d) * sizeof(T), path);
    }
}

template <typename T>
Matrix<T> readBin(const std::string& path) {
    File f = open(path, "rb");
    const int64_t size = fileSize(f.get(), path);
    int32_t header[2] = {0, 0};
    readExact(f.get(), header, sizeof(header), path);
    if (header[0] < 0 || header[1] <= 0) {
        throw std::runtime_error("bad header in " + path);
    }
    Matrix<T> m;
    m.n = header[0];
    m.d = header[1];
    if (size != int64_t(sizeof(header)) + m.n * m.d * int64_t(sizeof(T))) {
        throw std::runtime_error("size of " + path + " does not match its header");
    }
    m.data.resize(size_t(m.n) * m.d);
    readExact(f.get(), m.data.data(), m.data.size() * sizeof(T), path);
    return m;
}

template <typename T>
void writeBin(const std::string& path, const Matrix<T>& m) {
    File f = open(path, "wb");
    const int32_t header[2] = {int32_t(m.n), m.d};
    writeExact(f.get(), header, sizeof(header), path);
    writeExact(f.get(), m.data.data(), m.data.size() * sizeof(T), path);
}

} // namespace

Matrix<float> readFvecs(const std::string& p) {
    return readVecs<float>(p);
}
Matrix<int32_t> readIvecs(const std::string& p) {
    return readVecs<int32_t>(p);
}
Matrix<uint8_t> readBvecs(const std::string& p) {
    return readVecs<uint8_t>(p);
}
Matrix<float> readFbin(const std::string& p) {
    return readBin<float>(p);
}
Matrix<int32_t> readIbin(const std::string& p) {
    return readBin<int32_t>(p);
}
void writeFvecs(const std::string& p, const Matrix<float>& m) {
    writeVecs(p, m);
}
void writeIvecs(const std::string& p, const Matrix<int32_t>& m) {
    writeVecs(p, m);
}
void writeBvecs(const std::string& p, const Matrix<uint8_t>& m) {
    writeVecs(p, m);
}
void writeFbin(const std::string& p, const Matrix<float>& m) {
    writeBin(p, m);
}
void writeIbin(const std::string& p, const Matrix<int32_t>& m) {
    writeBin(p, m);
}

Matrix<float> readRowsAsFloat(const std::string& dir, const std::string& stem, int64_t maxRows) {
    const std::string bvecs = dir + "/" + stem + ".bvecs";
    Matrix<float> m;
    if (std::filesystem::exists(bvecs)) {
        const Matrix<uint8_t> b = readBvecs(bvecs);
        m.n = b.n;
        m.d = b.d;
        m.data.assign(b.data.begin(), b.data.end());
    } else {
        m = readFvecs(dir + "/" + stem + ".fvecs");
    }
    m.n = std::min(m.n, maxRows);
    m.data.resize(size_t(m.n) * m.d);
    return m;
}

} // namespace datasets
} // namespace faiss_ext
