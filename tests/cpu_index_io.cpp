// The faiss_ext index file format: round trips, older versions, and refusal of
// truncated, corrupted (every flipped byte) and foreign data, on the host images (no
// device needed).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/index_io.h>

#include "FlippedBytes.h"
#include "LegacyIndexFiles.h"
#include "TestUtil.h"

using namespace faiss_ext;

namespace {

IvfFlatImage sampleIvf(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    IvfFlatImage im;
    im.d = 5;
    im.metric = 0;
    im.quantizerMetric = 1;
    im.nlist = 4;
    im.nprobe = 3;
    im.trained = true;
    im.config.pageBytes = size_t(3) << 20;
    im.config.mergePath = IvfMergePath::kHeap;
    im.config.scanPath = IvfScanPath::kPerQuery;
    im.config.listChunkVectors = 96;
    for (int i = 0; i < im.nlist * im.d; ++i) {
        im.centroids.push_back(u(rng));
    }
    im.listIds.resize(4);
    im.listVectors.resize(4);
    const int lens[4] = {3, 0, 1, 7};
    for (int l = 0; l < 4; ++l) {
        for (int i = 0; i < lens[l]; ++i) {
            im.listIds[l].push_back(int64_t(rng()));
            for (int j = 0; j < im.d; ++j) {
                im.listVectors[l].push_back(u(rng));
            }
        }
    }
    im.listIds[3][2] = 1; // keep -1 out (random ids could in theory be -1)
    return im;
}

std::vector<uint8_t> encodeFlat(const FlatImage& im) {
    return test::encodeFile(IndexKind::kFlat, writeFlatImage, im);
}

std::vector<uint8_t> encode(const IvfFlatImage& im) {
    return test::encodeFile(IndexKind::kIvfFlat, writeIvfFlatImage, im);
}

IvfFlatImage decode(const std::vector<uint8_t>& b, size_t size) {
    return test::decodeFile(IndexKind::kIvfFlat, readIvfFlatImage, b, size);
}

FlatImage decodeFlat(const std::vector<uint8_t>& b) {
    return test::decodeFile(IndexKind::kFlat, readFlatImage, b, b.size());
}

/// Every field of an IVF-Flat image but its configuration.
void expectSameIvfData(const IvfFlatImage& a, const IvfFlatImage& b) {
    EXPECT_EQ(a.d, b.d);
    EXPECT_EQ(a.metric, b.metric);
    EXPECT_EQ(a.quantizerMetric, b.quantizerMetric);
    EXPECT_EQ(a.nlist, b.nlist);
    EXPECT_EQ(a.nprobe, b.nprobe);
    EXPECT_EQ(a.trained, b.trained);
    EXPECT_EQ(a.centroids, b.centroids);
    EXPECT_EQ(a.listIds, b.listIds);
    EXPECT_EQ(a.listVectors, b.listVectors);
}

/// Every field of IVF-Flat's configuration.
void expectSameConfig(const GpuIndexIVFFlatConfig& a, const GpuIndexIVFFlatConfig& b) {
    EXPECT_EQ(a.pageBytes, b.pageBytes);
    EXPECT_EQ(a.mergePath, b.mergePath);
    EXPECT_EQ(a.scanPath, b.scanPath);
    EXPECT_EQ(a.listChunkVectors, b.listChunkVectors);
}

} // namespace

TEST(IndexFormat, IvfFlatRoundTrip) {
    IvfFlatImage im = sampleIvf(test::testSeed());
    std::vector<uint8_t> b = encode(im);
    IvfFlatImage back = decode(b, b.size());
    expectSameIvfData(back, im);
    expectSameConfig(back.config, im.config);
    // Each enumerator of the paths round-trips too.
    for (IvfMergePath m : {IvfMergePath::kAuto, IvfMergePath::kFast, IvfMergePath::kHeap}) {
        for (IvfScanPath p :
             {IvfScanPath::kAuto, IvfScanPath::kPerQuery, IvfScanPath::kListMajor,
              IvfScanPath::kListMajorKeys}) {
            im.config.mergePath = m;
            im.config.scanPath = p;
            std::vector<uint8_t> c = encode(im);
            expectSameConfig(decode(c, c.size()).config, im.config);
        }
    }
}

TEST(IndexFormat, FlatRoundTrip) {
    FlatImage im;
    im.d = 3;
    im.metric = 1;
    im.ntotal = 2;
    im.vectors = {1, 2, 3, 4, 5, 6};
    im.config.pageBytes = size_t(5) << 20;
    for (GpuFlatPrecision p :
         {GpuFlatPrecision::kAuto, GpuFlatPrecision::kFloat32, GpuFlatPrecision::kTF32x3}) {
        for (int copy : {0, 1, 2}) {
            im.config.precision = p;
            im.config.float16Copy = copy == 1;
            im.config.int8Copy = copy == 2;
            FlatImage back = decodeFlat(encodeFlat(im));
            EXPECT_EQ(back.vectors, im.vectors);
            EXPECT_EQ(back.ntotal, 2);
            EXPECT_EQ(back.config.pageBytes, im.config.pageBytes);
            EXPECT_EQ(back.config.precision, p);
            EXPECT_EQ(back.config.float16Copy, copy == 1);
            EXPECT_EQ(back.config.int8Copy, copy == 2);
        }
    }
}

// Version 6 files have no copy flag: they load without a copy; a flag other than 0, 1
// or 2 is refused.
TEST(IndexFormat, Version6FlatLoadsWithoutACopy) {
    FlatImage im;
    im.d = 2;
    im.ntotal = 1;
    im.vectors = {1, 2};
    im.config.precision = GpuFlatPrecision::kFloat32;
    im.config.float16Copy = true;
    const std::vector<uint8_t> b = encodeFlat(im);
    FlatImage old = decodeFlat(test::version6File(b));
    EXPECT_EQ(old.vectors, im.vectors);
    EXPECT_EQ(old.config.precision, GpuFlatPrecision::kFloat32);
    EXPECT_FALSE(old.config.float16Copy);
    EXPECT_FALSE(old.config.int8Copy);
    // The flag's byte, before ntotal and the end of the fields section.
    const size_t flag = test::sectionSpans(b).front().end - 8 - 1;
    ASSERT_EQ(b[flag], 1);
    std::vector<uint8_t> bad = b;
    bad[flag] = 3;
    // The section's checksum made again, so that the flag's own check is the one that fails.
    bad = test::legacy::withoutFields(bad, kIndexFormatVersion, IndexKind::kFlat, 0, 0);
    try {
        decodeFlat(bad);
        ADD_FAILURE() << "a copy flag of 3 was accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("int8Copy"), std::string::npos) << e.what();
    }
}

TEST(IndexFormat, Versions1And2LoadWithTheDefaultConfig) {
    FlatImage flat;
    flat.d = 2;
    flat.metric = 0;
    flat.ntotal = 3;
    flat.vectors = {1, 2, 3, 4, 5, 6};
    flat.config.pageBytes = size_t(7) << 20; // not in the old layout: read as the default
    IvfFlatImage ivf = sampleIvf(test::testSeed() + 3);
    for (uint32_t version : {1u, 2u}) {
        SCOPED_TRACE("version " + std::to_string(version));
        FlatImage f = decodeFlat(test::legacyFlatFile(flat, version));
        EXPECT_EQ(f.d, 2);
        EXPECT_EQ(f.metric, 0);
        EXPECT_EQ(f.vectors, flat.vectors);
        EXPECT_EQ(f.config.pageBytes, GpuIndexFlatConfig().pageBytes);

        const std::vector<uint8_t> b = test::legacyIvfFlatFile(ivf, version);
        IvfFlatImage v = decode(b, b.size());
        expectSameIvfData(v, ivf);
        expectSameConfig(v.config, GpuIndexIVFFlatConfig());
        for (size_t cut = 0; cut < b.size(); cut += 13) {
            EXPECT_THROW(decode(b, cut), faiss::FaissException) << "cut at " << cut;
        }
    }
}

TEST(IndexFormat, Version3LoadsWithItsConfig) {
    const IvfFlatImage im = sampleIvf(test::testSeed() + 4);
    const std::vector<uint8_t> v3 = test::version3File(encode(im));
    EXPECT_EQ(v3.size() + 4 + 3 * 12, encode(im).size()); // no checksums, no frames
    expectSameIvfData(decode(v3, v3.size()), im);
    expectSameConfig(decode(v3, v3.size()).config, im.config);

    FlatImage flat;
    flat.d = 2;
    flat.ntotal = 2;
    flat.vectors = {1, 2, 3, 4};
    flat.config.pageBytes = size_t(7) << 20;
    flat.config.precision = GpuFlatPrecision::kTF32x3;
    FlatImage f = decodeFlat(test::version3File(encodeFlat(flat)));
    EXPECT_EQ(f.vectors, flat.vectors);
    EXPECT_EQ(f.config.pageBytes, flat.config.pageBytes);
    EXPECT_EQ(f.config.precision, GpuFlatPrecision::kTF32x3);
}

TEST(IndexFormat, EveryTruncationThrows) {
    std::vector<uint8_t> b = encode(sampleIvf(test::testSeed() + 1));
    for (size_t cut = 0; cut < b.size(); ++cut) {
        EXPECT_THROW(decode(b, cut), faiss::FaissException) << "cut at " << cut;
    }
    // Bytes after the end marker are refused too.
    b.push_back(0);
    EXPECT_THROW(decode(b, b.size()), faiss::FaissException);
}

TEST(IndexFormat, ForeignAndCorruptedDataThrow) {
    // The checks of the fields themselves, on the layout without checksums (version 3),
    // where they are the only defence.
    std::vector<uint8_t> b = test::version3File(encode(sampleIvf(test::testSeed() + 2)));
    // A FAISS index file starts with a fourcc such as "IwFl".
    std::vector<uint8_t> faiss = {'I', 'w', 'F', 'l', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_THROW(decode(faiss, faiss.size()), faiss::FaissException);
    std::vector<uint8_t> empty;
    EXPECT_THROW(decode(empty, 0), faiss::FaissException);

    auto corrupt = [&](size_t offset, const void* value, size_t n) {
        std::vector<uint8_t> c = b;
        std::memcpy(c.data() + offset, value, n);
        return c;
    };
    const uint32_t badVersion = 99, badKind = 77;
    EXPECT_THROW(decode(corrupt(8, &badVersion, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(12, &badKind, 4), b.size()), faiss::FaissException);
    // Payload: d at 16, metric 20, quantizer metric 24, nlist 28, nprobe 36, trained 44,
    // then the config: pageBytes 45, mergePath 53, scanPath 57, listChunkVectors 61.
    const int32_t badD = -3, hugeD = 1 << 30, badMetric = 5;
    const int64_t hugeNlist = int64_t(1) << 40, zeroNlist = 0;
    const uint64_t zeroNprobe = 0;
    const uint8_t badFlag = 7;
    EXPECT_THROW(decode(corrupt(16, &badD, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(16, &hugeD, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(20, &badMetric, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(24, &badMetric, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(28, &hugeNlist, 8), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(28, &zeroNlist, 8), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(36, &zeroNprobe, 8), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(44, &badFlag, 1), b.size()), faiss::FaissException);
    const uint32_t badMergePath = 3, badScanPath = 4;
    EXPECT_THROW(decode(corrupt(53, &badMergePath, 4), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(57, &badScanPath, 4), b.size()), faiss::FaissException);
    // First list length (after the config and 4 x 5 centroids): absurd and negative
    // lengths.
    const size_t len0 = 69 + 4 * 5 * 4;
    const int64_t hugeLen = int64_t(1) << 50, negLen = -1;
    EXPECT_THROW(decode(corrupt(len0, &hugeLen, 8), b.size()), faiss::FaissException);
    EXPECT_THROW(decode(corrupt(len0, &negLen, 8), b.size()), faiss::FaissException);
    // An id of -1 and a NaN component.
    const int64_t minusOne = -1;
    EXPECT_THROW(decode(corrupt(len0 + 8, &minusOne, 8), b.size()), faiss::FaissException);
    const float nan = std::nanf("");
    EXPECT_THROW(decode(corrupt(len0 + 8 + 3 * 8, &nan, 4), b.size()), faiss::FaissException);
    // The unmodified bytes still decode (the offsets above are the real fields).
    EXPECT_NO_THROW(decode(b, b.size()));
}

TEST(IndexFormat, MissingFileThrows) {
    EXPECT_THROW(FileSource("/nonexistent/dir/index.fx"), faiss::FaissException);
    EXPECT_THROW(FileSink("/nonexistent/dir/index.fx"), faiss::FaissException);
}

TEST(IndexFormat, EveryFlippedByteIsRefusedNamingTheSection) {
    const uint64_t seed = test::testSeed();
    FlatImage flat;
    flat.d = 3;
    flat.ntotal = 4;
    flat.vectors = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    test::expectEveryFlippedByteRefused(
            encodeFlat(flat), {"fields", "vectors"}, seed,
            [](const std::vector<uint8_t>& b) { decodeFlat(b); });
    flat.ntotal = 0; // an empty section too
    flat.vectors.clear();
    test::expectEveryFlippedByteRefused(
            encodeFlat(flat), {"fields", "vectors"}, seed + 1,
            [](const std::vector<uint8_t>& b) { decodeFlat(b); });

    IvfFlatImage ivf = sampleIvf(seed + 2);
    const std::vector<std::string> ivfSections = {"fields", "centroids", "inverted lists"};
    auto loadIvf = [](const std::vector<uint8_t>& b) { decode(b, b.size()); };
    test::expectEveryFlippedByteRefused(encode(ivf), ivfSections, seed + 3, loadIvf);
    IvfFlatImage untrained;
    untrained.d = 4;
    untrained.nlist = 3;
    untrained.listIds.resize(3);
    untrained.listVectors.resize(3);
    test::expectEveryFlippedByteRefused(encode(untrained), ivfSections, seed + 4, loadIvf);
}

TEST(IndexFormat, ChecksumsAreCheckedInFilesToo) {
    // Vectors of more than the 1 MiB pieces a file's checksum is computed in.
    FlatImage flat;
    flat.d = 3;
    flat.ntotal = 100000;
    std::mt19937_64 rng(test::testSeed());
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < flat.ntotal * flat.d; ++i) {
        flat.vectors.push_back(u(rng));
    }
    const std::string path = std::string(::testing::TempDir()) + "faiss_ext_checksums.fx";
    auto readFile = [&](const std::vector<uint8_t>& bytes) {
        {
            FileSink out(path.c_str());
            out.write(bytes.data(), bytes.size());
            out.commit();
        }
        FileSource in(path.c_str());
        uint32_t version = 0;
        EXPECT_EQ(readHeader(in, &version), IndexKind::kFlat);
        FlatImage im = readFlatImage(in, version);
        readTrailer(in);
        return im;
    };
    std::vector<uint8_t> b = encodeFlat(flat);
    EXPECT_EQ(readFile(b).vectors, flat.vectors); // read ahead, then back
    b[b.size() - 8 - 5] ^= 0x10;                  // a byte of the last vector
    try {
        readFile(b);
        ADD_FAILURE() << "a flipped byte in a file was accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("section 'vectors' is corrupted"), std::string::npos)
                << e.what();
    }
    std::remove(path.c_str());
}

TEST(IndexFormat, InspectIndexReadsEveryKindWithoutADevice) {
    const IvfFlatImage ivf = sampleIvf(test::testSeed() + 7);
    std::vector<uint8_t> b = encode(ivf);
    IndexFileInfo info = inspect_index(b.data(), b.size());
    EXPECT_EQ(info.kind, "GpuIndexIVFFlat");
    EXPECT_EQ(info.version, kIndexFormatVersion);
    EXPECT_EQ(info.d, ivf.d);
    EXPECT_EQ(int(info.metric), ivf.metric);
    EXPECT_EQ(info.ntotal, 3 + 0 + 1 + 7); // the lists' lengths
    const std::vector<uint8_t> v3 = test::version3File(b);
    EXPECT_EQ(inspect_index(v3.data(), v3.size()).version, 3u);

    FlatImage flat;
    flat.d = 2;
    flat.metric = 0;
    flat.ntotal = 2;
    flat.vectors = {1, 2, 3, 4};
    b = encodeFlat(flat);
    info = inspect_index(b.data(), b.size());
    EXPECT_EQ(info.kind, "GpuIndexFlat");
    EXPECT_EQ(info.metric, faiss::METRIC_INNER_PRODUCT);
    EXPECT_EQ(info.ntotal, 2);

    BangImage bang;
    bang.d = 2;
    bang.config.build.graphDegree = 1;
    bang.ntotal = 2;
    bang.vectors = {1, 2, 3, 4};
    bang.graph = {1, 0};
    b = test::encodeFile(IndexKind::kBang, writeBangImage, bang);
    info = inspect_index(b.data(), b.size());
    EXPECT_EQ(info.kind, "GpuIndexBang");
    EXPECT_EQ(info.ntotal, 2);

    b[b.size() / 2] ^= 1;
    EXPECT_THROW(inspect_index(b.data(), b.size()), faiss::FaissException);
    EXPECT_THROW(inspect_index(nullptr, 4), faiss::FaissException);
    EXPECT_THROW(inspect_index(b.data(), 0), faiss::FaissException);
}
