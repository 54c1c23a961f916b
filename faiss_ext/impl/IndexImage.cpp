#include <faiss_ext/impl/IndexImage.h>

#include <algorithm>
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
/// The first version that saves GpuIndexFlatConfig's float16Copy and int8Copy.
constexpr uint32_t kFlatFloat16CopyVersion = 7;
/// The first version that saves GpuIndexBangConfig's vectorStorage.
constexpr uint32_t kBangVectorStorageVersion = 8;

// Sections (version 4 on): u64 length, u32 CRC32C of the section's bytes followed by
// the length's 8 bytes, then the bytes.

/// Writes one section whose bytes `body(sink)` writes. body runs twice: into a
/// ChecksumSink (length and CRC, nothing kept), then into `out`. The CRC comes before
/// the bytes; this first pass reads an index's arrays twice (a piece at a time, the
/// second read costs less than the disk the bytes go to) and asks nothing of the sink,
/// where writing a placeholder and patching it afterwards would need every sink to
/// seek back.
template <typename Body>
void writeSection(ByteSink& out, Body&& body) {
    ChecksumSink measure;
    body(measure);
    const uint64_t length = measure.bytes;
    put<uint64_t>(out, length);
    put<uint32_t>(out, crc32c(&length, sizeof(length), measure.crc));
    body(out);
}

/// Reads through `in`, keeping the CRC32C of the first `length` bytes read: a
/// section's, checked as the section is read (its bytes read once).
class SectionSource : public ByteSource {
   public:
    SectionSource(ByteSource& in, uint64_t length) : in_(in), length_(length) {}
    void read(void* p, size_t n) override {
        in_.read(p, n);
        const uint64_t covered = std::min<uint64_t>(n, length_ - std::min(consumed_, length_));
        crc_ = crc32c(p, size_t(covered), crc_);
        consumed_ += n;
    }
    uint64_t remaining() const override {
        return in_.remaining();
    }
    void peek(
            uint64_t bytes,
            void* staging,
            size_t pieceBytes,
            const std::function<void(size_t)>& piece) override {
        in_.peek(bytes, staging, pieceBytes, piece);
    }
    uint64_t consumed() const {
        return consumed_;
    }
    /// The CRC32C the file stores for the section: of its bytes (those read, then any
    /// not read yet, read ahead) followed by its length.
    uint32_t sectionCrc() {
        uint32_t crc = crc_;
        if (consumed_ < length_) {
            std::vector<uint8_t> staging(size_t(std::min<uint64_t>(length_ - consumed_, 1 << 20)));
            in_.peek(length_ - consumed_, staging.data(), staging.size(), [&](size_t n) {
                crc = crc32c(staging.data(), n, crc);
            });
        }
        return crc32c(&length_, sizeof(length_), crc);
    }

   private:
    ByteSource& in_;
    uint64_t length_;
    uint64_t consumed_ = 0;
    uint32_t crc_ = 0;
};

/// Reads one section named `name` (for the messages) whose fields `body(source)` reads.
/// Versions before kChecksumVersion have no sections: body reads from `in` in place.
template <typename Body>
void readSection(ByteSource& in, uint32_t version, const char* name, Body&& body) {
    if (version < kChecksumVersion) {
        body(in);
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
    SectionSource section(in, length);
    auto checkCrc = [&] {
        const uint32_t computed = section.sectionCrc();
        FAISS_THROW_IF_NOT_FMT(
                computed == stored,
                "index file: section '%s' is corrupted (CRC32C 0x%08x stored, 0x%08x computed)",
                name, stored, computed);
    };
    try {
        body(section);
    } catch (...) {
        // A corrupted section may fail a check of its fields (or an allocation) before
        // its end: the checksum tells the corruption from a bad value written as such.
        checkCrc();
        throw;
    }
    checkCrc();
    FAISS_THROW_IF_NOT_FMT(
            section.consumed() == length,
            "index file: section '%s' holds %llu bytes but its fields take %llu", name,
            (unsigned long long)length, (unsigned long long)section.consumed());
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

/// The check of getRows that every value of an array named `what` is finite.
auto finiteValues(const char* what) {
    return [what](const float* x, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            FAISS_THROW_IF_NOT_FMT(std::isfinite(x[i]), "index file: non-finite value in %s", what);
        }
    };
}

/// The check of getRows for arrays whose every value is valid.
template <typename T>
void anyValues(const T*, size_t) {}

/// A host vector's elements (one a row) as an ArrayOut.
template <typename T>
ArrayOut<T> viewOf(const std::vector<T>& v) {
    return hostArrayOut(v.data(), int64_t(v.size()), 1);
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
    put<uint8_t>(out, c.float16Copy ? 1 : c.int8Copy ? 2 : 0);
}

/// Versions before kFlatFloat16CopyVersion keep the copies' defaults (none).
void getConfig(ByteSource& in, GpuIndexFlatConfig& c, uint32_t version) {
    getConfig(in, static_cast<GpuIndexConfig&>(c));
    c.precision = getEnum<GpuFlatPrecision>(in, 3, "precision");
    if (version >= kFlatFloat16CopyVersion) {
        const uint8_t copy = get<uint8_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                copy <= 2,
                "index file: the copy %u is not 0 (none), 1 (float16Copy) or 2 (int8Copy)", copy);
        c.float16Copy = copy == 1;
        c.int8Copy = copy == 2;
    }
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
    c.scanPath = getEnum<IvfScanPath>(in, 4, "scanPath");
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
    put<uint32_t>(out, uint32_t(c.vectorStorage));
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
    // Earlier files keep floats: the storage they were written with.
    c.vectorStorage = version >= kBangVectorStorageVersion
            ? getEnum<BangVectorStorage>(in, 3, "vectorStorage")
            : BangVectorStorage::kFloat;
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

// Flat

void writeFlatPayload(ByteSink& out, const FlatFields& f, const ArrayOut<float>& vectors) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, f.d);
        put<int32_t>(s, f.metric);
        putConfig(s, f.config);
        put<int64_t>(s, f.ntotal);
    });
    writeSection(out, [&](ByteSink& s) { putRows(s, vectors); });
}

FlatFields readFlatFields(ByteSource& in, uint32_t version) {
    FlatFields f;
    readSection(in, version, "fields", [&](ByteSource& s) {
        f.d = getDim(s);
        f.metric = getMetric(s, "index");
        if (version >= 3) {
            getConfig(s, f.config, version);
        }
        f.ntotal = get<int64_t>(s);
        FAISS_THROW_IF_NOT_FMT(
                f.ntotal >= 0 && uint64_t(f.ntotal) <= s.remaining() / (uint64_t(f.d) * 4),
                "index file: ntotal=%lld vectors of d=%d do not fit the %llu bytes left",
                (long long)f.ntotal, f.d, (unsigned long long)s.remaining());
    });
    return f;
}

void readFlatVectors(
        ByteSource& in,
        uint32_t version,
        const FlatFields& f,
        const ArrayIn<float>& vectors) {
    readSection(in, version, "vectors", [&](ByteSource& s) {
        getRows(s, f.ntotal, f.d, "vectors", vectors, finiteValues("vectors"));
    });
}

// IVF-Flat

void writeIvfFlatPayload(
        ByteSink& out,
        const IvfFlatFields& f,
        const std::function<IvfListOut(int64_t list)>& list) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, f.d);
        put<int32_t>(s, f.metric);
        put<int32_t>(s, f.quantizerMetric);
        put<int64_t>(s, f.nlist);
        put<uint64_t>(s, f.nprobe);
        put<uint8_t>(s, f.trained ? 1 : 0);
        putConfig(s, f.config);
    });
    writeSection(out, [&](ByteSink& s) { putArray(s, f.centroids); });
    writeSection(out, [&](ByteSink& s) {
        for (int64_t l = 0; l < f.nlist; ++l) {
            const IvfListOut one = list(l);
            put<int64_t>(s, one.ids.rows);
            putRows(s, one.ids);
            putRows(s, one.vectors);
        }
    });
}

IvfFlatFields readIvfFlatFields(ByteSource& in, uint32_t version) {
    IvfFlatFields f;
    readSection(in, version, "fields", [&](ByteSource& s) {
        f.d = getDim(s);
        f.metric = getMetric(s, "index");
        f.quantizerMetric = getMetric(s, "quantizer");
        f.nlist = get<int64_t>(s);
        // Every list takes at least its 8-byte length.
        FAISS_THROW_IF_NOT_FMT(
                f.nlist >= 1 && f.nlist < (int64_t(1) << 31) &&
                        uint64_t(f.nlist) <= s.remaining() / 8,
                "index file: nlist=%lld with %llu bytes left", (long long)f.nlist,
                (unsigned long long)s.remaining());
        f.nprobe = get<uint64_t>(s);
        FAISS_THROW_IF_NOT_FMT(
                f.nprobe >= 1, "index file: nprobe=%llu", (unsigned long long)f.nprobe);
        const uint8_t trained = get<uint8_t>(s);
        FAISS_THROW_IF_NOT_FMT(trained <= 1, "index file: trained flag %u", unsigned(trained));
        f.trained = trained == 1;
        if (version >= 3) {
            getConfig(s, f.config);
        }
    });
    readSection(in, version, "centroids", [&](ByteSource& s) {
        if (f.trained) {
            f.centroids = getArray<float>(s, uint64_t(f.nlist) * f.d, "centroids");
            finiteValues("centroids")(f.centroids.data(), f.centroids.size());
        }
    });
    return f;
}

void readIvfFlatLists(
        ByteSource& in,
        uint32_t version,
        const IvfFlatFields& f,
        const IvfListsIn& lists) {
    readSection(in, version, "inverted lists", [&](ByteSource& s) {
        const uint64_t entryBytes = 8 + uint64_t(f.d) * 4;
        for (int64_t l = 0; l < f.nlist; ++l) {
            const int64_t len = get<int64_t>(s);
            FAISS_THROW_IF_NOT_FMT(
                    len >= 0 && uint64_t(len) <= s.remaining() / entryBytes,
                    "index file: list %lld of length %lld does not fit the %llu bytes left",
                    (long long)l, (long long)len, (unsigned long long)s.remaining());
            FAISS_THROW_IF_NOT_FMT(
                    len == 0 || f.trained,
                    "index file: untrained index with %lld vectors in list %lld", (long long)len,
                    (long long)l);
            std::vector<int64_t> ids = getArray<int64_t>(s, uint64_t(len), "list ids");
            for (int64_t id : ids) {
                FAISS_THROW_IF_NOT_FMT(
                        id != -1, "index file: id -1 stored in list %lld", (long long)l);
            }
            if (lists.start) {
                lists.start(l, std::move(ids));
            }
            getRows(s, len, f.d, "list vectors", lists.vectors, finiteValues("list vectors"));
        }
    });
}

// Bang

void writeBangPayload(ByteSink& out, const BangFields& f, const BangArraysOut& a) {
    writeSection(out, [&](ByteSink& s) {
        put<int32_t>(s, f.d);
        put<int32_t>(s, f.metric);
        putConfig(s, f.config);
        put<int32_t>(s, f.searchL);
        put<int64_t>(s, f.ntotal);
        put<int64_t>(s, f.entry);
    });
    writeSection(out, [&](ByteSink& s) { putRows(s, a.vectors); });
    writeSection(out, [&](ByteSink& s) { putRows(s, a.graph); });
    writeSection(out, [&](ByteSink& s) {
        putRows(s, a.pqCentroids);
        putRows(s, a.pqCodes);
    });
    writeSection(out, [&](ByteSink& s) {
        put<uint64_t>(s, uint64_t(a.removed.rows));
        putRows(s, a.removed);
    });
}

BangFields readBangFields(ByteSource& in, uint32_t version) {
    BangFields f;
    readSection(in, version, "fields", [&](ByteSource& s) {
        f.d = getDim(s);
        f.metric = getMetric(s, "index");
        if (version >= 3) {
            getConfig(s, f.config, f.d, version);
        } else {
            getConfig(s, f.config.build, version); // versions 1 and 2: the build fields only
        }
        f.searchL = get<int32_t>(s);
        f.ntotal = get<int64_t>(s);
        f.entry = get<int64_t>(s);
        if (version == 2) {
            f.config.pqSubquantizers = getPqSubquantizers(s, f.d);
        }
        const BangBuildConfig& b = f.config.build;
        const uint64_t rowBytes = uint64_t(f.d) * 4 + uint64_t(b.graphDegree) * 4 +
                uint64_t(f.config.pqSubquantizers);
        FAISS_THROW_IF_NOT_FMT(
                f.ntotal >= 0 && f.ntotal < (int64_t(1) << 31) &&
                        uint64_t(f.ntotal) <= s.remaining() / rowBytes,
                "index file: ntotal=%lld vectors of d=%d and degree %d do not fit the %llu "
                "bytes left",
                (long long)f.ntotal, f.d, b.graphDegree, (unsigned long long)s.remaining());
        FAISS_THROW_IF_NOT_FMT(
                f.ntotal == 0 ? f.entry == 0 : (f.entry >= 0 && f.entry < f.ntotal),
                "index file: entry point %lld for %lld vectors", (long long)f.entry,
                (long long)f.ntotal);
    });
    return f;
}

void readBangArrays(ByteSource& in, uint32_t version, const BangFields& f, const BangArraysIn& a) {
    readSection(in, version, "vectors", [&](ByteSource& s) {
        getRows(s, f.ntotal, f.d, "vectors", a.vectors, finiteValues("vectors"));
    });
    readSection(in, version, "graph", [&](ByteSource& s) {
        getRows(s, f.ntotal, f.config.build.graphDegree, "graph", a.graph,
                [&](const int32_t* ids, size_t n) {
                    for (size_t i = 0; i < n; ++i) {
                        FAISS_THROW_IF_NOT_FMT(
                                ids[i] >= -1 && ids[i] < f.ntotal,
                                "index file: graph id %d for %lld vectors", ids[i],
                                (long long)f.ntotal);
                    }
                });
    });
    readSection(in, version, "PQ codebooks and codes", [&](ByteSource& s) {
        // Inner product codes its transformed rows (impl/BangInnerProduct.h).
        const faiss::MetricType metric = faiss::MetricType(f.metric);
        const int M = bangStoredPqM(f.config.pqSubquantizers, metric);
        if (M > 0 && f.ntotal > 0) {
            // M x 256 x width / M floats
            const int width = bangStoredDim(f.d, f.config.pqSubquantizers, metric);
            getRows(s, int64_t(width) * 256, 1, "PQ centroids", a.pqCentroids,
                    finiteValues("PQ centroids"));
            getRows(s, f.ntotal, M, "PQ codes", a.pqCodes, anyValues<uint8_t>);
        }
    });
    if (version >= kChecksumVersion) {
        readSection(in, version, "removed vectors", [&](ByteSource& s) {
            const uint64_t count = get<uint64_t>(s);
            FAISS_THROW_IF_NOT_FMT(
                    count <= uint64_t(f.ntotal), "index file: %llu removed of %lld vectors",
                    (unsigned long long)count, (long long)f.ntotal);
            int64_t last = -1;
            getRows(s, int64_t(count), 1, "removed vectors", a.removed,
                    [&](const int64_t* ids, size_t n) {
                        for (size_t i = 0; i < n; ++i) {
                            FAISS_THROW_IF_NOT_FMT(
                                    ids[i] > last && ids[i] < f.ntotal,
                                    "index file: removed vector %lld is out of order or outside "
                                    "[0, %lld)",
                                    (long long)ids[i], (long long)f.ntotal);
                            last = ids[i];
                        }
                    });
        });
    }
}

// The images

void writeFlatImage(ByteSink& out, const FlatImage& im) {
    writeFlatPayload(out, im, viewOf(im.vectors));
}

FlatImage readFlatImage(ByteSource& in, uint32_t version) {
    FlatImage im;
    static_cast<FlatFields&>(im) = readFlatFields(in, version);
    readFlatVectors(in, version, im, appendTo(im.vectors, im.d));
    return im;
}

void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& im) {
    writeIvfFlatPayload(out, im, [&](int64_t l) {
        return IvfListOut{viewOf(im.listIds[l]), viewOf(im.listVectors[l])};
    });
}

IvfFlatImage readIvfFlatImage(ByteSource& in, uint32_t version) {
    IvfFlatImage im;
    static_cast<IvfFlatFields&>(im) = readIvfFlatFields(in, version);
    im.listIds.resize(size_t(im.nlist));
    im.listVectors.resize(size_t(im.nlist));
    int64_t current = 0;
    IvfListsIn lists;
    lists.start = [&](int64_t l, std::vector<int64_t> ids) {
        current = l;
        im.listIds[l] = std::move(ids);
    };
    lists.vectors.put = [&](int64_t, int64_t n, const float* x) {
        im.listVectors[current].insert(im.listVectors[current].end(), x, x + size_t(n) * im.d);
    };
    readIvfFlatLists(in, version, im, lists);
    return im;
}

void writeBangImage(ByteSink& out, const BangImage& im) {
    writeBangPayload(
            out, im,
            {viewOf(im.vectors), viewOf(im.graph), viewOf(im.pqCentroids), viewOf(im.pqCodes),
             viewOf(im.tombstones)});
}

BangImage readBangImage(ByteSource& in, uint32_t version) {
    BangImage im;
    static_cast<BangFields&>(im) = readBangFields(in, version);
    readBangArrays(
            in, version, im,
            {appendTo(im.vectors, im.d), appendTo(im.graph, im.config.build.graphDegree),
             appendTo(im.pqCentroids),
             appendTo(
                     im.pqCodes,
                     bangStoredPqM(im.config.pqSubquantizers, faiss::MetricType(im.metric))),
             appendTo(im.tombstones)});
    return im;
}

} // namespace faiss_ext
