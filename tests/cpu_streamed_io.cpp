// Index files streamed a piece at a time (ByteStream.h, IndexImage.h): payloads
// written from arrays handed out in pieces give the images' bytes, to memory and to
// files; reads hand arrays over in bounded pieces, in order; a checksum mismatch in the
// middle of a streamed section is refused; a file appears at its path only once
// complete. No device needed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/index_io.h>

#include "LegacyIndexFiles.h"
#include "TestUtil.h"

using namespace faiss_ext;

namespace {

/// v's rows of `width` as an ArrayOut that copies each piece into a buffer of its own
/// first, as the device arrays do, and asks for at most pieceRows rows.
template <typename T>
ArrayOut<T> stagedOut(const std::vector<T>& v, int width, int64_t pieceRows) {
    ArrayOut<T> a;
    a.rows = int64_t(v.size()) / width;
    a.width = width;
    a.pieceRows = pieceRows;
    auto piece = std::make_shared<std::vector<T>>(size_t(pieceRows) * width);
    a.piece = [&v, width, pieceRows, piece](int64_t row0, int64_t n) {
        EXPECT_LE(n, pieceRows);
        std::fill(piece->begin(), piece->end(), T(7));
        std::copy_n(v.begin() + row0 * width, n * width, piece->begin());
        return piece->data();
    };
    return a;
}

/// An ArrayIn of pieces of at most pieceRows rows of `width` that checks they come in
/// order and appends them to v.
template <typename T>
ArrayIn<T> orderedIn(std::vector<T>& v, int width, int64_t pieceRows) {
    ArrayIn<T> a = appendTo(v, width);
    a.pieceRows = pieceRows;
    const auto append = a.put;
    a.put = [&v, width, pieceRows, append](int64_t row0, int64_t n, const T* x) {
        EXPECT_EQ(row0 * width, int64_t(v.size()));
        EXPECT_GE(n, 1);
        EXPECT_LE(n, pieceRows);
        append(row0, n, x);
    };
    return a;
}

/// A PQ-mode Bang image of n vectors of d = 8 (M = 2), two of them removed.
BangImage bangImage(int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    BangImage im;
    im.d = 8;
    im.config.build.graphDegree = 3;
    im.config.pqSubquantizers = 2;
    im.ntotal = n;
    im.entry = n / 2;
    for (int64_t i = 0; i < n * im.d; ++i) {
        im.vectors.push_back(u(rng));
    }
    for (int64_t v = 0; v < n; ++v) {
        im.graph.insert(im.graph.end(), {int32_t((v + 1) % n), int32_t((v + 2) % n), -1});
    }
    for (int i = 0; i < 256 * im.d; ++i) {
        im.pqCentroids.push_back(u(rng));
    }
    for (int64_t i = 0; i < n * 2; ++i) {
        im.pqCodes.push_back(uint8_t(rng()));
    }
    im.tombstones = {1, n - 1};
    return im;
}

FlatImage flatImage(int64_t n, int d, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    FlatImage im;
    im.d = d;
    im.ntotal = n;
    for (int64_t i = 0; i < n * d; ++i) {
        im.vectors.push_back(u(rng));
    }
    return im;
}

/// The image's payload written from pieces of at most pieceRows rows.
void writeBangInPieces(ByteSink& out, const BangImage& im, int64_t pieceRows) {
    BangArraysOut a;
    a.vectors = stagedOut(im.vectors, im.d, pieceRows);
    a.graph = stagedOut(im.graph, im.config.build.graphDegree, pieceRows);
    a.pqCentroids = stagedOut(im.pqCentroids, 1, pieceRows);
    a.pqCodes = stagedOut(im.pqCodes, im.config.pqSubquantizers, pieceRows);
    a.removed = stagedOut(im.tombstones, 1, pieceRows);
    writeBangPayload(out, im, a);
}

std::vector<uint8_t> fileBytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(
            std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

/// bytes from memory, or from the file at path that holds them.
std::unique_ptr<ByteSource> sourceOf(
        bool fromFile,
        const std::string& path,
        const std::vector<uint8_t>& bytes) {
    if (fromFile) {
        return std::make_unique<FileSource>(path.c_str());
    }
    return std::make_unique<MemorySource>(bytes.data(), bytes.size());
}

std::string tempPath(const char* name) {
    return std::string(::testing::TempDir()) + name;
}

/// Files left beside `path` by FileSinks (their temporaries).
int temporariesBeside(const std::string& path) {
    const std::filesystem::path p(path);
    const std::string prefix = p.filename().string() + ".tmp.";
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(p.parent_path())) {
        count += entry.path().filename().string().rfind(prefix, 0) == 0 ? 1 : 0;
    }
    return count;
}

/// The message of the FaissException that f throws ("" if none).
template <typename F>
std::string refusal(F&& f) {
    try {
        f();
    } catch (const faiss::FaissException& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(StreamedIo, PiecesGiveTheImagesBytes) {
    const uint64_t seed = test::testSeed();
    const BangImage bang = bangImage(50, seed);
    const std::vector<uint8_t> expected = test::encodeFile(IndexKind::kBang, writeBangImage, bang);
    const std::string path = tempPath("faiss_ext_pieces.fx");
    for (int64_t pieceRows : {1, 3, 7, 49, 50, 1000}) {
        SCOPED_TRACE("pieces of " + std::to_string(pieceRows) + " rows");
        VectorSink memory;
        writeHeader(memory, IndexKind::kBang);
        writeBangInPieces(memory, bang, pieceRows);
        writeTrailer(memory);
        EXPECT_EQ(memory.bytes, expected);
        {
            FileSink file(path.c_str());
            writeHeader(file, IndexKind::kBang);
            writeBangInPieces(file, bang, pieceRows);
            writeTrailer(file);
            file.commit();
        }
        EXPECT_EQ(fileBytes(path), expected);
    }

    const FlatImage flat = flatImage(40, 5, seed + 1);
    VectorSink flatPieces;
    writeHeader(flatPieces, IndexKind::kFlat);
    writeFlatPayload(flatPieces, flat, stagedOut(flat.vectors, flat.d, 6));
    writeTrailer(flatPieces);
    EXPECT_EQ(flatPieces.bytes, test::encodeFile(IndexKind::kFlat, writeFlatImage, flat));

    IvfFlatImage ivf;
    ivf.d = 3;
    ivf.nlist = 3;
    ivf.trained = true;
    ivf.centroids.assign(9, 0.5f);
    ivf.listIds = {{4, 5, 6, 7, 8}, {}, {9}};
    ivf.listVectors = {std::vector<float>(15, 1.f), {}, {2.f, 3.f, 4.f}};
    VectorSink ivfPieces;
    writeHeader(ivfPieces, IndexKind::kIvfFlat);
    writeIvfFlatPayload(ivfPieces, ivf, [&](int64_t l) {
        return IvfListOut{stagedOut(ivf.listIds[l], 1, 2), stagedOut(ivf.listVectors[l], 3, 2)};
    });
    writeTrailer(ivfPieces);
    EXPECT_EQ(ivfPieces.bytes, test::encodeFile(IndexKind::kIvfFlat, writeIvfFlatImage, ivf));
    std::remove(path.c_str());
}

TEST(StreamedIo, ReadsHandOverBoundedPiecesInOrder) {
    const BangImage bang = bangImage(50, test::testSeed());
    const std::vector<uint8_t> bytes = test::encodeFile(IndexKind::kBang, writeBangImage, bang);
    const std::string path = tempPath("faiss_ext_read_pieces.fx");
    writeFile(path, bytes);
    for (bool fromFile : {false, true}) {
        SCOPED_TRACE(fromFile ? "file" : "memory");
        const std::unique_ptr<ByteSource> in = sourceOf(fromFile, path, bytes);
        uint32_t version = 0;
        ASSERT_EQ(readHeader(*in, &version), IndexKind::kBang);
        const BangFields f = readBangFields(*in, version);
        BangImage back;
        BangArraysIn a;
        a.vectors = orderedIn(back.vectors, f.d, 4);
        // A scan pass sees every row (read ahead, then back) before the first is put.
        int64_t scanned = 0;
        a.vectors.scan = [&](int64_t row0, int64_t n, const float*) {
            EXPECT_EQ(row0, scanned);
            EXPECT_TRUE(back.vectors.empty());
            scanned += n;
        };
        a.graph = orderedIn(back.graph, f.config.build.graphDegree, 5);
        a.pqCentroids = orderedIn(back.pqCentroids, 1, 300);
        a.pqCodes = orderedIn(back.pqCodes, f.config.pqSubquantizers, 3);
        a.removed = orderedIn(back.tombstones, 1, 1);
        readBangArrays(*in, version, f, a);
        readTrailer(*in);
        EXPECT_EQ(scanned, bang.ntotal);
        EXPECT_EQ(back.vectors, bang.vectors);
        EXPECT_EQ(back.graph, bang.graph);
        EXPECT_EQ(back.pqCentroids, bang.pqCentroids);
        EXPECT_EQ(back.pqCodes, bang.pqCodes);
        EXPECT_EQ(back.tombstones, bang.tombstones);
    }
    std::remove(path.c_str());
}

TEST(StreamedIo, ChecksumMismatchInTheMiddleOfAStreamedSectionIsRefused) {
    const FlatImage flat = flatImage(1000, 4, test::testSeed());
    std::vector<uint8_t> bytes = test::encodeFile(IndexKind::kFlat, writeFlatImage, flat);
    const test::SectionSpan vectors = test::sectionSpans(bytes).at(1);
    const std::string path = tempPath("faiss_ext_streamed_crc.fx");
    // Row 600's first component with its lowest bit flipped (a finite value still),
    // then made a NaN (the check of the values fails first, and the checksum names the
    // corruption).
    const size_t row600 = vectors.begin + 12 + 600 * 4 * sizeof(float);
    for (bool nan : {false, true}) {
        std::vector<uint8_t> bad = bytes;
        if (nan) {
            const float value = std::nanf("");
            std::memcpy(bad.data() + row600, &value, sizeof(value));
        } else {
            bad[row600] ^= 1;
        }
        writeFile(path, bad);
        for (bool fromFile : {false, true}) {
            SCOPED_TRACE(std::string(fromFile ? "file" : "memory") + (nan ? ", NaN" : ""));
            const std::unique_ptr<ByteSource> in = sourceOf(fromFile, path, bad);
            uint32_t version = 0;
            readHeader(*in, &version);
            const FlatFields f = readFlatFields(*in, version);
            std::vector<float> got;
            const std::string message =
                    refusal([&] { readFlatVectors(*in, version, f, orderedIn(got, f.d, 10)); });
            EXPECT_NE(message.find("section 'vectors' is corrupted"), std::string::npos) << message;
            // Pieces went to their place before the mismatch showed: the caller drops
            // them.
            EXPECT_GE(got.size(), size_t(600 * f.d));
        }
    }
    // The same bytes, intact, read whole.
    MemorySource in(bytes.data(), bytes.size());
    uint32_t version = 0;
    readHeader(in, &version);
    const FlatFields f = readFlatFields(in, version);
    std::vector<float> got;
    readFlatVectors(in, version, f, orderedIn(got, f.d, 10));
    readTrailer(in);
    EXPECT_EQ(got, flat.vectors);
    std::remove(path.c_str());
}

TEST(StreamedIo, PeekLeavesTheSourceWhereItWas) {
    std::vector<uint8_t> bytes(1000);
    for (size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = uint8_t(i * 7);
    }
    const std::string path = tempPath("faiss_ext_peek.fx");
    writeFile(path, bytes);
    for (bool fromFile : {false, true}) {
        SCOPED_TRACE(fromFile ? "file" : "memory");
        const std::unique_ptr<ByteSource> in = sourceOf(fromFile, path, bytes);
        std::vector<uint8_t> head(100);
        in->read(head.data(), head.size());
        std::vector<uint8_t> staging(64), seen;
        in->peek(500, staging.data(), staging.size(), [&](size_t n) {
            EXPECT_LE(n, staging.size());
            seen.insert(seen.end(), staging.begin(), staging.begin() + n);
        });
        EXPECT_EQ(seen, std::vector<uint8_t>(bytes.begin() + 100, bytes.begin() + 600));
        // A piece that throws: still back where it was.
        EXPECT_THROW(
                in->peek(
                        500, staging.data(), staging.size(),
                        [](size_t) { FAISS_THROW_MSG("stop"); }),
                faiss::FaissException);
        EXPECT_THROW(
                in->peek(901, staging.data(), staging.size(), [](size_t) {}),
                faiss::FaissException);
        EXPECT_EQ(in->remaining(), 900u);
        std::vector<uint8_t> next(900);
        in->read(next.data(), next.size());
        EXPECT_EQ(next, std::vector<uint8_t>(bytes.begin() + 100, bytes.end()));
    }
    std::remove(path.c_str());
}

TEST(StreamedIo, AFileAppearsAtItsPathOnlyOnceComplete) {
    const std::string path = tempPath("faiss_ext_commit.fx");
    const std::vector<uint8_t> old = {'o', 'l', 'd'};
    writeFile(path, old);
    const FlatImage flat = flatImage(30, 4, test::testSeed());
    const std::vector<uint8_t> expected = test::encodeFile(IndexKind::kFlat, writeFlatImage, flat);
    {
        FileSink out(path.c_str());
        writeHeader(out, IndexKind::kFlat);
        writeFlatImage(out, flat);
        writeTrailer(out);
        // Written, not committed: the old file is still there, the new one beside it.
        EXPECT_EQ(fileBytes(path), old);
        EXPECT_TRUE(std::filesystem::exists(out.temporaryPath()));
        EXPECT_EQ(temporariesBeside(path), 1);
        out.commit();
        EXPECT_FALSE(std::filesystem::exists(out.temporaryPath()));
    }
    EXPECT_EQ(fileBytes(path), expected);
    EXPECT_EQ(temporariesBeside(path), 0);

    // A write that fails in the middle of a section: the path keeps the last complete
    // file, and the temporary is removed.
    writeFile(path, old);
    for (int pass = 0; pass < 2; ++pass) {
        // Its second time at row 12: in the pass that writes the file, not the one that
        // computes the checksum.
        ArrayOut<float> failing = stagedOut(flat.vectors, flat.d, 4);
        auto visits = std::make_shared<int>(0);
        failing.piece = [pieces = failing.piece, visits](int64_t row0, int64_t n) {
            if (row0 == 12 && ++*visits == 2) {
                FAISS_THROW_MSG("device lost");
            }
            return pieces(row0, n);
        };
        EXPECT_THROW(
                {
                    FileSink out(path.c_str());
                    writeHeader(out, IndexKind::kFlat);
                    writeFlatPayload(out, flat, failing);
                    writeTrailer(out);
                    out.commit();
                },
                faiss::FaissException);
        if (pass == 0) {
            EXPECT_EQ(fileBytes(path), old);
            std::remove(path.c_str()); // then with no file at the path before
        } else {
            EXPECT_FALSE(std::filesystem::exists(path));
        }
        EXPECT_EQ(temporariesBeside(path), 0);
    }

    // write_index refuses what it cannot write before it creates anything.
    faiss::IndexFlat cpu(4);
    EXPECT_THROW(write_index(&cpu, path.c_str()), faiss::FaissException);
    EXPECT_THROW(write_index(nullptr, path.c_str()), faiss::FaissException);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(temporariesBeside(path), 0);
}
