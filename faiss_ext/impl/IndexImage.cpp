#include <faiss_ext/impl/IndexImage.h>

#include <cmath>
#include <cstring>

#include <faiss/impl/FaissAssert.h>

namespace faiss_ext {

namespace {

constexpr char kMagic[8] = {'F', 'X', 'E', 'X', 'T', 'I', 'D', 'X'};
constexpr char kEnd[8] = {'F', 'X', 'E', 'X', 'T', 'E', 'N', 'D'};
constexpr char kTombstones[8] = {'F', 'X', 'T', 'O', 'M', 'B', 'S', 'T'};
constexpr int kMaxDim = 1 << 20;

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
}

void getConfig(ByteSource& in, BangBuildConfig& b) {
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
}

void putConfig(ByteSink& out, const GpuIndexBangConfig& c) {
    putConfig(out, static_cast<const GpuIndexConfig&>(c));
    putConfig(out, c.build);
    put<int32_t>(out, c.pqSubquantizers);
}

int getPqSubquantizers(ByteSource& in, int d) {
    const int M = get<int32_t>(in);
    FAISS_THROW_IF_NOT_FMT(
            M >= 0 && M <= d && (M == 0 || d % M == 0), "index file: %d PQ sub-quantizers for d=%d",
            M, d);
    return M;
}

void getConfig(ByteSource& in, GpuIndexBangConfig& c, int d) {
    getConfig(in, static_cast<GpuIndexConfig&>(c));
    getConfig(in, c.build);
    c.pqSubquantizers = getPqSubquantizers(in, d);
}

} // namespace

void writeHeader(ByteSink& out, IndexKind kind) {
    out.write(kMagic, sizeof(kMagic));
    put<uint32_t>(out, kIndexFormatVersion);
    put<uint32_t>(out, uint32_t(kind));
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

void readTrailer(ByteSource& in, BangImage* bang) {
    char end[8];
    in.read(end, sizeof(end));
    if (bang != nullptr && std::memcmp(end, kTombstones, sizeof(kTombstones)) == 0) {
        const uint64_t count = get<uint64_t>(in);
        FAISS_THROW_IF_NOT_FMT(
                count >= 1 && count <= uint64_t(bang->ntotal),
                "index file: %llu tombstones for %lld vectors", (unsigned long long)count,
                (long long)bang->ntotal);
        bang->tombstones = getArray<int64_t>(in, count, "tombstones");
        for (size_t i = 0; i < bang->tombstones.size(); ++i) {
            const int64_t id = bang->tombstones[i];
            FAISS_THROW_IF_NOT_FMT(
                    id >= 0 && id < bang->ntotal && (i == 0 || id > bang->tombstones[i - 1]),
                    "index file: tombstone %lld is out of order or outside [0, %lld)",
                    (long long)id, (long long)bang->ntotal);
        }
        in.read(end, sizeof(end));
    }
    FAISS_THROW_IF_NOT_MSG(std::memcmp(end, kEnd, sizeof(kEnd)) == 0, "index file: bad end marker");
    FAISS_THROW_IF_NOT_FMT(
            in.remaining() == 0, "index file: %llu unexpected bytes after the end marker",
            (unsigned long long)in.remaining());
}

void writeFlatImage(ByteSink& out, const FlatImage& im) {
    put<int32_t>(out, im.d);
    put<int32_t>(out, im.metric);
    putConfig(out, im.config);
    put<int64_t>(out, im.ntotal);
    putArray(out, im.vectors);
}

FlatImage readFlatImage(ByteSource& in, uint32_t version) {
    FlatImage im;
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
    im.vectors = getArray<float>(in, uint64_t(im.ntotal) * im.d, "vectors");
    checkFiniteArray(im.vectors, "vectors");
    return im;
}

void writeIvfFlatImage(ByteSink& out, const IvfFlatImage& im) {
    put<int32_t>(out, im.d);
    put<int32_t>(out, im.metric);
    put<int32_t>(out, im.quantizerMetric);
    put<int64_t>(out, im.nlist);
    put<uint64_t>(out, im.nprobe);
    put<uint8_t>(out, im.trained ? 1 : 0);
    putConfig(out, im.config);
    putArray(out, im.centroids);
    for (int64_t l = 0; l < im.nlist; ++l) {
        put<int64_t>(out, int64_t(im.listIds[l].size()));
        putArray(out, im.listIds[l]);
        putArray(out, im.listVectors[l]);
    }
}

IvfFlatImage readIvfFlatImage(ByteSource& in, uint32_t version) {
    IvfFlatImage im;
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
    if (im.trained) {
        im.centroids = getArray<float>(in, uint64_t(im.nlist) * im.d, "centroids");
        checkFiniteArray(im.centroids, "centroids");
    }
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
            FAISS_THROW_IF_NOT_FMT(id != -1, "index file: id -1 stored in list %lld", (long long)l);
        }
        im.listVectors[l] = getArray<float>(in, uint64_t(len) * im.d, "list vectors");
        checkFiniteArray(im.listVectors[l], "list vectors");
    }
    return im;
}

void writeBangImage(ByteSink& out, const BangImage& im) {
    put<int32_t>(out, im.d);
    put<int32_t>(out, im.metric);
    putConfig(out, im.config);
    put<int32_t>(out, im.searchL);
    put<int64_t>(out, im.ntotal);
    put<int64_t>(out, im.entry);
    putArray(out, im.vectors);
    putArray(out, im.graph);
    putArray(out, im.pqCentroids);
    putArray(out, im.pqCodes);
    if (!im.tombstones.empty()) {
        out.write(kTombstones, sizeof(kTombstones));
        put<uint64_t>(out, uint64_t(im.tombstones.size()));
        putArray(out, im.tombstones);
    }
}

BangImage readBangImage(ByteSource& in, uint32_t version) {
    BangImage im;
    im.d = getDim(in);
    im.metric = getMetric(in, "index");
    if (version >= 3) {
        getConfig(in, im.config, im.d);
    } else {
        getConfig(in, im.config.build); // versions 1 and 2: the build fields only
    }
    im.searchL = get<int32_t>(in);
    im.ntotal = get<int64_t>(in);
    im.entry = get<int64_t>(in);
    if (version == 2) {
        im.config.pqSubquantizers = getPqSubquantizers(in, im.d);
    }
    const BangBuildConfig& b = im.config.build;
    const int M = im.config.pqSubquantizers;
    const uint64_t rowBytes = uint64_t(im.d) * 4 + uint64_t(b.graphDegree) * 4 + uint64_t(M);
    FAISS_THROW_IF_NOT_FMT(
            im.ntotal >= 0 && im.ntotal < (int64_t(1) << 31) &&
                    uint64_t(im.ntotal) <= in.remaining() / rowBytes,
            "index file: ntotal=%lld vectors of d=%d and degree %d do not fit the %llu bytes "
            "left",
            (long long)im.ntotal, im.d, b.graphDegree, (unsigned long long)in.remaining());
    FAISS_THROW_IF_NOT_FMT(
            im.ntotal == 0 ? im.entry == 0 : (im.entry >= 0 && im.entry < im.ntotal),
            "index file: entry point %lld for %lld vectors", (long long)im.entry,
            (long long)im.ntotal);
    im.vectors = getArray<float>(in, uint64_t(im.ntotal) * im.d, "vectors");
    checkFiniteArray(im.vectors, "vectors");
    im.graph = getArray<int32_t>(in, uint64_t(im.ntotal) * b.graphDegree, "graph");
    for (int32_t id : im.graph) {
        FAISS_THROW_IF_NOT_FMT(
                id >= -1 && id < im.ntotal, "index file: graph id %d for %lld vectors", id,
                (long long)im.ntotal);
    }
    if (M > 0 && im.ntotal > 0) {
        // M x 256 x d / M floats
        im.pqCentroids = getArray<float>(in, uint64_t(im.d) * 256, "PQ centroids");
        checkFiniteArray(im.pqCentroids, "PQ centroids");
        im.pqCodes = getArray<uint8_t>(in, uint64_t(im.ntotal) * uint64_t(M), "PQ codes");
    }
    return im;
}

} // namespace faiss_ext
