#include <faiss_ext/index_io.h>

#include <faiss/IndexFlat.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/IndexImage.h>

namespace faiss_ext {

namespace {

void writeAny(ByteSink& out, const faiss::Index* index) {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "write_index: null index");
    if (auto ivf = dynamic_cast<const GpuIndexIVFFlat*>(index)) {
        IvfFlatImage im;
        im.d = ivf->d;
        im.metric = int(ivf->metric_type);
        im.quantizerMetric = int(ivf->quantizer().metric_type);
        im.nlist = ivf->nlist();
        im.config = ivf->ivfConfig();
        im.nprobe = ivf->nprobe;
        im.trained = ivf->is_trained;
        FAISS_THROW_IF_NOT_MSG(im.nprobe >= 1, "write_index: nprobe=0");
        if (im.trained) {
            im.centroids.resize(size_t(im.nlist) * im.d);
            ivf->quantizer().reconstruct_n(0, im.nlist, im.centroids.data());
        }
        im.listVectors.resize(size_t(im.nlist));
        im.listIds.resize(size_t(im.nlist));
        for (int64_t l = 0; l < im.nlist; ++l) {
            if (ivf->listLength(l) > 0) {
                im.listVectors[l] = ivf->listVectors(l);
                im.listIds[l] = ivf->listIds(l);
            }
        }
        writeHeader(out, IndexKind::kIvfFlat);
        writeIvfFlatImage(out, im);
    } else if (auto flat = dynamic_cast<const GpuIndexFlat*>(index)) {
        FlatImage im;
        im.d = flat->d;
        im.metric = int(flat->metric_type);
        im.config = flat->flatConfig();
        im.ntotal = flat->ntotal;
        im.vectors.resize(size_t(im.ntotal) * im.d);
        if (im.ntotal > 0) {
            flat->reconstruct_n(0, im.ntotal, im.vectors.data());
        }
        writeHeader(out, IndexKind::kFlat);
        writeFlatImage(out, im);
    } else if (auto bang = dynamic_cast<const GpuIndexBang*>(index)) {
        BangImage im;
        im.d = bang->d;
        im.metric = int(bang->metric_type);
        im.config = bang->bangConfig();
        im.searchL = bang->search_L;
        // Every node, the removed ones too (their ids stay until the next add).
        im.ntotal = bang->nodeCount();
        im.entry = bang->entryPoint();
        if (im.ntotal > 0) {
            im.vectors.resize(size_t(im.ntotal) * im.d);
            bang->copyNodeVectors(0, im.ntotal, im.vectors.data());
            for (int64_t v = 0; v < im.ntotal; ++v) {
                if (bang->isRemoved(v)) {
                    im.tombstones.push_back(v);
                }
            }
            im.graph = bang->graph();
            im.pqCentroids = bang->pqCentroids();
            im.pqCodes = bang->pqCodes();
        }
        writeHeader(out, IndexKind::kBang);
        writeBangImage(out, im);
    } else {
        FAISS_THROW_MSG(
                "write_index: not a faiss_ext GpuIndexFlat, GpuIndexIVFFlat or GpuIndexBang "
                "(CPU indexes: use faiss::write_index)");
    }
    writeTrailer(out);
}

/// A whole file, parsed and checked on the host: one of the images, by kind.
struct ParsedFile {
    IndexKind kind;
    uint32_t version = 0;
    FlatImage flat;
    IvfFlatImage ivf;
    BangImage bang;
};

ParsedFile parseAny(ByteSource& in) {
    ParsedFile f;
    f.kind = readHeader(in, &f.version);
    if (f.kind == IndexKind::kFlat) {
        f.flat = readFlatImage(in, f.version);
    } else if (f.kind == IndexKind::kBang) {
        f.bang = readBangImage(in, f.version);
    } else {
        f.ivf = readIvfFlatImage(in, f.version);
    }
    readTrailer(in);
    return f;
}

std::unique_ptr<GpuIndex> buildIvf(IvfFlatImage& im, GpuResources& res) {
    auto index = std::make_unique<GpuIndexIVFFlat>(
            res, im.d, im.nlist, faiss::MetricType(im.metric), im.config);
    index->nprobe = size_t(im.nprobe);
    if (!im.trained) {
        return index;
    }
    faiss::IndexFlat q(im.d, faiss::MetricType(im.quantizerMetric));
    q.add(im.nlist, im.centroids.data());
    index->setQuantizer(&q);
    int64_t total = 0;
    for (int64_t l = 0; l < im.nlist; ++l) {
        total += int64_t(im.listIds[l].size());
    }
    if (total == 0) {
        return index;
    }
    std::vector<float> x;
    std::vector<int64_t> listNos, ids;
    x.reserve(size_t(total) * im.d);
    listNos.reserve(size_t(total));
    ids.reserve(size_t(total));
    for (int64_t l = 0; l < im.nlist; ++l) {
        x.insert(x.end(), im.listVectors[l].begin(), im.listVectors[l].end());
        ids.insert(ids.end(), im.listIds[l].begin(), im.listIds[l].end());
        listNos.insert(listNos.end(), im.listIds[l].size(), l);
        std::vector<float>().swap(im.listVectors[l]);
    }
    index->addPreassigned(total, x.data(), listNos.data(), ids.data());
    return index;
}

std::unique_ptr<GpuIndex> readAny(ByteSource& in, GpuResources& res) {
    // The whole file is parsed and checked on the host before anything is built.
    ParsedFile f = parseAny(in);
    if (f.kind == IndexKind::kFlat) {
        const FlatImage& im = f.flat;
        auto index =
                std::make_unique<GpuIndexFlat>(res, im.d, faiss::MetricType(im.metric), im.config);
        if (im.ntotal > 0) {
            index->add(im.ntotal, im.vectors.data());
        }
        return index;
    }
    if (f.kind == IndexKind::kBang) {
        const BangImage& im = f.bang;
        auto index =
                std::make_unique<GpuIndexBang>(res, im.d, faiss::MetricType(im.metric), im.config);
        GpuIndexBang::effectiveL(im.searchL, 1);
        index->search_L = im.searchL;
        if (im.ntotal > 0) {
            index->setGraph(
                    im.ntotal, im.vectors.data(), im.graph.data(), im.entry,
                    im.config.pqSubquantizers > 0 ? im.pqCentroids.data() : nullptr,
                    im.config.pqSubquantizers > 0 ? im.pqCodes.data() : nullptr);
        }
        if (!im.tombstones.empty()) {
            index->remove_ids(faiss::IDSelectorArray(im.tombstones.size(), im.tombstones.data()));
        }
        return index;
    }
    return buildIvf(f.ivf, res);
}

} // namespace

void write_index(const faiss::Index* index, const char* path) {
    // Serialise first: a failure then leaves no half-written file behind the path.
    VectorSink bytes;
    writeAny(bytes, index);
    FileSink out(path);
    out.write(bytes.bytes.data(), bytes.bytes.size());
    out.close();
}

std::vector<uint8_t> serialize_index(const faiss::Index* index) {
    VectorSink out;
    writeAny(out, index);
    return std::move(out.bytes);
}

std::unique_ptr<GpuIndex> read_index(const char* path, GpuResources& resources) {
    FileSource in(path);
    return readAny(in, resources);
}

IndexFileInfo inspect_index(const uint8_t* data, size_t size) {
    FAISS_THROW_IF_NOT_MSG(data != nullptr || size == 0, "inspect_index: null data");
    MemorySource in(data, size);
    const ParsedFile f = parseAny(in);
    IndexFileInfo info;
    info.version = f.version;
    if (f.kind == IndexKind::kFlat) {
        info.kind = "GpuIndexFlat";
        info.d = f.flat.d;
        info.metric = faiss::MetricType(f.flat.metric);
        info.ntotal = f.flat.ntotal;
    } else if (f.kind == IndexKind::kBang) {
        info.kind = "GpuIndexBang";
        info.d = f.bang.d;
        info.metric = faiss::MetricType(f.bang.metric);
        info.ntotal = f.bang.ntotal - int64_t(f.bang.tombstones.size());
    } else {
        info.kind = "GpuIndexIVFFlat";
        info.d = f.ivf.d;
        info.metric = faiss::MetricType(f.ivf.metric);
        for (const std::vector<int64_t>& ids : f.ivf.listIds) {
            info.ntotal += int64_t(ids.size());
        }
    }
    return info;
}

std::unique_ptr<GpuIndex> deserialize_index(
        const uint8_t* data,
        size_t size,
        GpuResources& resources) {
    FAISS_THROW_IF_NOT_MSG(data != nullptr || size == 0, "deserialize_index: null data");
    MemorySource in(data, size);
    return readAny(in, resources);
}

} // namespace faiss_ext
