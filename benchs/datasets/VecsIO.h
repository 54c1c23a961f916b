// Readers and writers for the .fvecs / .ivecs / .bvecs formats (TEXMEX: each vector
// is a little-endian int32 dimension followed by its components) and .fbin / .ibin
// (big-ann-benchmarks: int32 n, int32 d, then n x d components).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace faiss_ext {
namespace datasets {

/// A row-major matrix read from or written to one of the formats.
template <typename T>
struct Matrix {
    int64_t n = 0;
    int d = 0;
    std::vector<T> data;
};

Matrix<float> readFvecs(const std::string& path);
Matrix<int32_t> readIvecs(const std::string& path);
Matrix<uint8_t> readBvecs(const std::string& path);
Matrix<float> readFbin(const std::string& path);
Matrix<int32_t> readIbin(const std::string& path);

/// The first (at most) maxRows rows of DIR/stem.bvecs as floats or, without that file,
/// of DIR/stem.fvecs (a SIFT directory: base and query).
Matrix<float> readRowsAsFloat(const std::string& dir, const std::string& stem, int64_t maxRows);

void writeFvecs(const std::string& path, const Matrix<float>& m);
void writeIvecs(const std::string& path, const Matrix<int32_t>& m);
void writeBvecs(const std::string& path, const Matrix<uint8_t>& m);
void writeFbin(const std::string& path, const Matrix<float>& m);
void writeIbin(const std::string& path, const Matrix<int32_t>& m);

} // namespace datasets
} // namespace faiss_ext
