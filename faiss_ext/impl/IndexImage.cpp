#include <faiss_ext/impl/IndexImage.h>

#include <cmath>
#include <cstring>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/BangInnerProduct.h>
#include <faiss_ext/impl/Crc32c.h>

namespace faiss_ext {

namespace {

constexpr char kMagic[8] = {'F', 'X', 'E', 'X', 'T', 'I', 'D', 'X'};
constexpr char kEnd[8] = {'F', 'X', 'E', 'X', 'T', 'E', 'N', 'D'};
constexpr int kMaxDim = 1 << 20;
/// The first version whose header and sections carry checksums.
constexpr uint32_t kChecksumVersion = 4;
/// The first version that saves BangBuildConfig's candidateLists and candidateProbes.
constexpr uint32_t kBangCandidateSourceVersion = 5;
/// The first version that saves GpuIndexBangConfig's vectorPlacement.
constexpr uint32_t kBangPlacementVersion = 6;

// Sections (version 4 on): u64 length, u32 CRC32C of the section's bytes followed by
// the length's 8 bytes, then the bytes. The checksum is checked before anything in the
// section is parsed, so a flipped byte is reported as such, naming the section.

/// Writes one section whose bytes `body(sink)` writes. body runs twice: into a
/// ChecksumSink (length and CRC, nothing kept), then into `out`.
template <typename Body>
void writeSection(ByteSink& out, Body&& body) {
    ChecksumSink measure;
    body(measure);
    const uint64_t length = measure.bytes;
    put<uint64_t>(out, length);
    put<uint32_t>(out, crc32c(&length, sizeof(length), measure.crc));
    body(out);
}

/// Reads one section named `name` (for the messages) whose fields `body()` reads from
/// `in`. Versions before kChecksumVersion have no sections: body reads in place.
template <typename Body>
void readSection(ByteSource& in, uint32_t version, const char* name, Body&& body) {
    if (version < kChecksumVersion) {
        body();
        return;
    }
    FAISS_THROW_IF_NOT_FMT(
            in.remaining() >= 12, "index file: section '%s' is missing (file truncated)", name);
    const uint64_t length = get<uint64_t>(in);
    const uint32_t stored = get<uint32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            length <= in.remaining(),
            "index file: section '%s' is corrupted or truncated (length %llu, %llu bytes left)",
            name, (unsigned long long)length, (unsigned long long)in.remaining());
    const uint32_t computed = crc32c(&length, sizeof(length), in.crc32cOfNext(length, 0));
    FAISS_THROW_IF_NOT_FMT(
            computed == stored,
            "index file: section '%s' is corrupted (CRC32C 0x%08x stored, 0x%08x computed)", name,
            stored, computed);
    const uint64_t before = in.remaining();
    body();
    FAISS_THROW_IF_NOT_FMT(
            before - in.remaining() == length,
            "index file: section '%s' holds %llu bytes but its fields take %llu", name,
            (unsigned long long)length, (unsigned long long)(before - in.remaining()));
}

int getDim(ByteSource& in) {
    const int32_t d = get<int32_t>(in);
    FAISS_THROW_IF_NOT_FMT(d >= 1 && d <= kMaxDim, "index file: dimension %d", d);
    return d;
}

int getMetric(ByteSource& in, const char* what) {
    const int32_t m = get<int32_t>(in);
    // faiss::METRIC_INNER_PRODUCT = 0, faiss::METRIC_L2 = 1
    FAISS_THROW_IF_NOT_FMT(m == 0 || m == 1, "index file: %s metric %d", what, m);
    return m;
}

void checkFiniteArray(const std::vector<float>& v, const char* what) {
    for (float x : v) {
        FAISS_THROW_IF_NOT_FMT(std::isfinite(x), "index file: non-finite value in %s", what);
    }
}

/// An enum stored as u32, checked to name one of its `count` enumerators.
template <typename Enum>
Enum getEnum(ByteSource& in, uint32_t count, const char* what) {
    const uint32_t v = get<uint32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            v < count, "index file: %s %u is not one of its %u values", what, v, count);
    return Enum(v);
}

// Each configuration struct is written and read here, field by field, once.

void putConfig(ByteSink& out, const GpuIndexConfig& c) {
    put<uint64_t>(out, c.pageBytes);
}

void getConfig(ByteSource& in, GpuIndexConfig& c) {
    c.pageBytes = size_t(get<uint64_t>(in));
}

void putConfig(ByteSink& out, const GpuIndexFlatConfig& c) {
    putConfig(out, static_cast<const GpuIndexConfig&>(c));
    put<uint32_t>(out, uint32_t(c.precision));
}

void getConfig(ByteSource& in, GpuIndexFlatConfig& c) {
    getConfig(in, static_cast<GpuIndexConfig&>(c));
    c.precision = getEnum<GpuFlatPrecision>(in, 3, "precision");
}

void putConfig(ByteSink& out, const GpuIndexIVFFlatConfig& c) {
    putConfig(out, static_cast<const GpuIndexConfig&>(c));
    put<uint32_t>(out, uint32_t(c.mergePath));
    put<uint32_t>(out, uint32_t(c.scanPath));
    put<int64_t>(out, c.listChunkVectors);
}

void getConfig(ByteSource& in, GpuIndexIVFFlatConfig& c) {
    getConfig(in, static_cast<GpuIndexConfig&>(c));
    c.mergePath = getEnum<IvfMergePath>(in, 3, "mergePath");
    c.scanPath = getEnum<IvfScanPath>(in, 3, "scanPath");
    c.listChunkVectors = get<int64_t>(in);
}

void putConfig(ByteSink& out, const BangBuildConfig& b) {
    put<int32_t>(out, b.graphDegree);
    put<float>(out, b.alpha);
    put<int32_t>(out, b.candidates);
    put<int64_t>(out, b.hubs);
    put<int32_t>(out, b.passes);
    put<int32_t>(out, b.searchL);
    put<int64_t>(out, b.candidateLists);
    put<int32_t>(out, b.candidateProbes);
}

/// Versions before kBangCandidateSourceVersion keep the candidate source's defaults.
void getConfig(ByteSource& in, BangBuildConfig& b, uint32_t version) {
    b.graphDegree = get<int32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            b.graphDegree >= 1 && b.graphDegree <= 4096, "index file: graph degree %d",
            b.graphDegree);
    b.alpha = get<float>(in);
    FAISS_THROW_IF_NOT_FMT(std::isfinite(b.alpha), "index file: alpha %g", double(b.alpha));
    b.candidates = get<int32_t>(in);
    b.hubs = get<int64_t>(in);
    b.passes = get<int32_t>(in);
    b.searchL = get<int32_t>(in);
    if (version >= kBangCandidateSourceVersion) {
        b.candidateLists = get<int64_t>(in);
        b.candidateProbes = get<int32_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                b.candidateLists >= -1 && b.candidateProbes >= 1,
                "index file: candidate lists %lld, probes %d", (long long)b.candidateLists,
                b.candidateProbes);
    }
}

void putConfig(ByteSink& out, const GpuIndexBangConfig& c) {
    putConfig(out, static_cast<const GpuIndexConfig&>(c));
    putConfig(out, c.build);
    put<int32_t>(out, c.pqSubquantizers);
    put<uint32_t>(out, uint32_t(c.vectorPlacement));
}

int getPqSubquantizers(ByteSource& in, int d) {
    const int M = get<int32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            M >= 0 && M <= d && (M == 0 || d % M == 0), "index file: %d PQ sub-quantizers for d=%d",
            M, d);
    return M;
}

void getConfig(ByteSource& in, GpuIndexBangConfig& c, int d, uint32_t version) {
    getConfig(in, static_cast<GpuIndexConfig&>(c));
    getConfig(in, c.build, version);
    c.pqSubquantizers = getPqSubquantizers(in, d);
    if (version >= kBangPlacementVersion) {
        c.vectorPlacement = getEnum<BangVectorPlacement>(in, 2, "vectorPlacement");
    }
}

} // namespace

void writeHeader(ByteSink& out, IndexKind kind) {
    ChecksumSink crc;
    for (ByteSink* sink : {static_cast<ByteSink*>(&crc), &out}) {
        sink->write(kMagic, sizeof(kMagic));
        put<uint32_t>(*sink, kIndexFormatVersion);
        put<uint32_t>(*sink, uint32_t(kind));
    }
    put<uint32_t>(out, crc.crc);
}

IndexKind readHeader(ByteSource& in, uint32_t* versionOut) {
    FAISS_THROW_IF_NOT_FMT(
            in.remaining() >= sizeof(kMagic) + 8,
            "not a faiss_ext index: %llu bytes is shorter than the header",
            (unsigned long long)in.remaining());
    char magic[8];
    in.read(magic, sizeof(magic));
    FAISS_THROW_IF_NOT_MSG(
            std::memcmp(magic, kMagic, sizeof(kMagic)) == 0,
            "not a faiss_ext index (bad magic; FAISS's own index files are read by "
            "faiss::read_index)");
    const uint32_t version = get<uint32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            version >= kIndexFormatOldestVersion && version <= kIndexFormatVersion,
            "faiss_ext index format version %u is not supported (this build reads %u to %u)",
            version, kIndexFormatOldestVersion, kIndexFormatVersion);
    const uint32_t kind = get<uint32_t>(in);
    if (version >= kChecksumVersion) {
        uint32_t computed = crc32c(magic, sizeof(magic));
        computed = crc32c(&version, sizeof(version), computed);
        computed = crc32c(&kind, sizeof(kind), computed);
        FAISS_THROW_IF_NOT_MSG(
                in.remaining() >= 4, "index file: header checksum missing (file truncated)");
        const uint32_t stored = get<uint32_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                computed == stored,
                "index file: header is corrupted (CRC32C 0x%08x stored, 0x%08x computed)", stored,
                computed);
    }
    FAISS_THROW_IF_NOT_FMT(
            kind == uint32_t(IndexKind::kFlat) || kind == uint32_t(IndexKind::kIvfFlat) ||
                    kind == uint32_t(IndexKind::kBang),
            "faiss_ext index of unknown kind %u", kind);
    if (versionOut != nullptr) {
        *versionOut = version;
    }
    return IndexKind(kind);
}

void writeTrailer(ByteSink& out) {
    out.write(kEnd, sizeof(kEnd));
}

void readTrailer(ByteSource& in) {
    FAISS_THROW_IF_NOT_MSG(
            in.remaining() >= sizeof(kEnd), "index file: end marker missing (file truncated)");
    char end[8];
    in.read(end, sizeof(end));
    FAISS_THROW_IF_NOT_MSG(
            std::memcmp(end, kEnd, sizeof(kEnd)) == 0, "index file: end marker is corrupted");
    FAISS_THROW_IF_NOT_FMT(
            in.remaining() == 0, "index file: %llu unexpected bytes after the end marker",
            (unsigned long long)in.remaining());
}

void writeFlatImage(ByteSink& out, const FlatImage& im) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, im.d);
        put<int32_t>(s, im.metric);
        putConfig(s, im.config);
        put<int64_t>(s, im.ntotal);
    });
    writeSection(out, [&](ByteSink& s) { putArray(s, im.vectors); });
}

FlatImage readFlatImage(ByteSource& in, uint32_t version) {
    FlatImage im;
    readSection(in, version, "fields", [&] {
        im.d = getDim(in);
        im.metric = getMetric(in, "index");
        if (version >= 3) {
            getConfig(in, im.config);
        }
        im.ntotal = get<int64_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                im.ntotal >= 0 && uint64_t(im.ntotal) <= in.remaining() / (uint64_t(im.d) * 4),
                "index file: ntotal=%lld vectors of d=%d do not fit the %llu bytes left",
                (long long)im.ntotal, im.d, (unsigned long long)in.remaining());
    });
    readSection(in, version, "vectors", [&] {
        im.vectors = getArray<float>(in, uint64_t(im.ntotal) * im.d, "vectors");
        checkFiniteArray(im.vectors, "vectors");
    });
    return im;
}

void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& im) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, im.d);
        put<int32_t>(s, im.metric);
        put<int32_t>(s, im.quantizerMetric);
        put<int64_t>(s, im.nlist);
        put<uint64_t>(s, im.nprobe);
        put<uint8_t>(s, im.trained ? 1 : 0);
        putConfig(s, im.config);
    });
    writeSection(out, [&](ByteSink& s) { putArray(s, im.centroids); });
    writeSection(out, [&](ByteSink& s) {
        for (int64_t l = 0; l < im.nlist; ++l) {
            put<int64_t>(s, int64_t(im.listIds[l].size()));
            putArray(s, im.listIds[l]);
            putArray(s, im.listVectors[l]);
        }
    });
}

IvfFlatImage readIvfFlatImage(ByteSource& in, uint32_t version) {
    IvfFlatImage im;
    readSection(in, version, "fields", [&] {
        im.d = getDim(in);
        im.metric = getMetric(in, "index");
        im.quantizerMetric = getMetric(in, "quantizer");
        im.nlist = get<int64_t>(in);
        // Every list takes at least its 8-byte length.
        FAISS_THROW_IF_NOT_FMT(
                im.nlist >= 1 && im.nlist < (int64_t(1) << 31) &&
                        uint64_t(im.nlist) <= in.remaining() / 8,
                "index file: nlist=%lld with %llu bytes left", (long long)im.nlist,
                (unsigned long long)in.remaining());
        im.nprobe = get<uint64_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                im.nprobe >= 1, "index file: nprobe=%llu", (unsigned long long)im.nprobe);
        const uint8_t trained = get<uint8_t>(in);
        FAISS_THROW_IF_NOT_FMT(trained <= 1, "index file: trained flag %u", unsigned(trained));
        im.trained = trained == 1;
        if (version >= 3) {
            getConfig(in, im.config);
        }
    });
    readSection(in, version, "centroids", [&] {
        if (im.trained) {
            im.centroids = getArray<float>(in, uint64_t(im.nlist) * im.d, "centroids");
            checkFiniteArray(im.centroids, "centroids");
        }
    });
    readSection(in, version, "inverted lists", [&] {
        im.listIds.resize(size_t(im.nlist));
        im.listVectors.resize(size_t(im.nlist));
        const uint64_t entryBytes = 8 + uint64_t(im.d) * 4;
        for (int64_t l = 0; l < im.nlist; ++l) {
            const int64_t len = get<int64_t>(in);
            FAISS_THROW_IF_NOT_FMT(
                    len >= 0 && uint64_t(len) <= in.remaining() / entryBytes,
                    "index file: list %lld of length %lld does not fit the %llu bytes left",
                    (long long)l, (long long)len, (unsigned long long)in.remaining());
            FAISS_THROW_IF_NOT_FMT(
                    len == 0 || im.trained,
                    "index file: untrained index with %lld vectors in list %lld", (long long)len,
                    (long long)l);
            im.listIds[l] = getArray<int64_t>(in, uint64_t(len), "list ids");
            for (int64_t id : im.listIds[l]) {
                FAISS_THROW_IF_NOT_FMT(
                        id != -1, "index file: id -1 stored in list %lld", (long long)l);
            }
            im.listVectors[l] = getArray<float>(in, uint64_t(len) * im.d, "list vectors");
            checkFiniteArray(im.listVectors[l], "list vectors");
        }
    });
    return im;
}

void writeBangImage(ByteSink& out, const BangImage& im) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, im.d);
        put<int32_t>(s, im.metric);
        putConfig(s, im.config);
        put<int32_t>(s, im.searchL);
        put<int64_t>(s, im.ntotal);
        put<int64_t>(s, im.entry);
    });
    writeSection(out, [&](ByteSink& s) { putArray(s, im.vectors); });
    writeSection(out, [&](ByteSink& s) { putArray(s, im.graph); });
    writeSection(out, [&](ByteSink& s) {
        putArray(s, im.pqCentroids);
        putArray(s, im.pqCodes);
    });
    writeSection(out, [&](ByteSink& s) {
        put<uint64_t>(s, uint64_t(im.tombstones.size()));
        putArray(s, im.tombstones);
    });
}

BangImage readBangImage(ByteSource& in, uint32_t version) {
    BangImage im;
    readSection(in, version, "fields", [&] {
        im.d = getDim(in);
        im.metric = getMetric(in, "index");
        if (version >= 3) {
            getConfig(in, im.config, im.d, version);
        } else {
            getConfig(in, im.config.build, version); // versions 1 and 2: the build fields only
        }
        im.searchL = get<int32_t>(in);
        im.ntotal = get<int64_t>(in);
        im.entry = get<int64_t>(in);
        if (version == 2) {
            im.config.pqSubquantizers = getPqSubquantizers(in, im.d);
        }
        const BangBuildConfig& b = im.config.build;
        const uint64_t rowBytes = uint64_t(im.d) * 4 + uint64_t(b.graphDegree) * 4 +
                uint64_t(im.config.pqSubquantizers);
        FAISS_THROW_IF_NOT_FMT(
                im.ntotal >= 0 && im.ntotal < (int64_t(1) << 31) &&
                        uint64_t(im.ntotal) <= in.remaining() / rowBytes,
                "index file: ntotal=%lld vectors of d=%d and degree %d do not fit the %llu "
                "bytes left",
                (long long)im.ntotal, im.d, b.graphDegree, (unsigned long long)in.remaining());
        FAISS_THROW_IF_NOT_FMT(
                im.ntotal == 0 ? im.entry == 0 : (im.entry >= 0 && im.entry < im.ntotal),
                "index file: entry point %lld for %lld vectors", (long long)im.entry,
                (long long)im.ntotal);
    });
    readSection(in, version, "vectors", [&] {
        im.vectors = getArray<float>(in, uint64_t(im.ntotal) * im.d, "vectors");
        checkFiniteArray(im.vectors, "vectors");
    });
    readSection(in, version, "graph", [&] {
        im.graph =
                getArray<int32_t>(in, uint64_t(im.ntotal) * im.config.build.graphDegree, "graph");
        for (int32_t id : im.graph) {
            FAISS_THROW_IF_NOT_FMT(
                    id >= -1 && id < im.ntotal, "index file: graph id %d for %lld vectors", id,
                    (long long)im.ntotal);
        }
    });
    readSection(in, version, "PQ codebooks and codes", [&] {
        // Inner product codes its transformed rows (impl/BangInnerProduct.h).
        const faiss::MetricType metric = faiss::MetricType(im.metric);
        const int M = bangStoredPqM(im.config.pqSubquantizers, metric);
        if (M > 0 && im.ntotal > 0) {
            // M x 256 x width / M floats
            const int width = bangStoredDim(im.d, im.config.pqSubquantizers, metric);
            im.pqCentroids = getArray<float>(in, uint64_t(width) * 256, "PQ centroids");
            checkFiniteArray(im.pqCentroids, "PQ centroids");
            im.pqCodes = getArray<uint8_t>(in, uint64_t(im.ntotal) * uint64_t(M), "PQ codes");
        }
    });
    if (version >= kChecksumVersion) {
        readSection(in, version, "removed vectors", [&] {
            const uint64_t count = get<uint64_t>(in);
            FAISS_THROW_IF_NOT_FMT(
                    count <= uint64_t(im.ntotal), "index file: %llu removed of %lld vectors",
                    (unsigned long long)count, (long long)im.ntotal);
            im.tombstones = getArray<int64_t>(in, count, "removed vectors");
            for (size_t i = 0; i < im.tombstones.size(); ++i) {
                const int64_t id = im.tombstones[i];
                FAISS_THROW_IF_NOT_FMT(
                        id >= 0 && id < im.ntotal && (i == 0 || id > im.tombstones[i - 1]),
                        "index file: removed vector %lld is out of order or outside [0, %lld)",
                        (long long)id, (long long)im.ntotal);
            }
        });
    }
    return im;
}

} // namespace faiss_ext
