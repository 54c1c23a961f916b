// GpuIndexIVFFlat's payload, a list at a time: the lists keep their vectors in the
// interleaved layout of kernels/IvfStore.h, which IvfLists reads back a whole list at a
// time, so a write holds one list (the longest at most), never the index; a read adds
// the lists in batches of about a piece.
#include <faiss/IndexFlat.h>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/impl/IndexFileIo.h>
#include <faiss_ext/impl/IndexImage.h>

namespace faiss_ext {

void writeIvfFlatIndex(ByteSink& out, const GpuIndexIVFFlat& index) {
    IvfFlatFields f;
    f.d = index.d;
    f.metric = int(index.metric_type);
    f.quantizerMetric = int(index.quantizer().metric_type);
    f.nlist = index.nlist();
    f.config = index.ivfConfig();
    f.nprobe = index.nprobe;
    f.trained = index.is_trained;
    FAISS_THROW_IF_NOT_MSG(f.nprobe >= 1, "write_index: nprobe=0");
    if (f.trained) {
        f.centroids.resize(size_t(f.nlist) * f.d);
        index.quantizer().reconstruct_n(0, f.nlist, f.centroids.data());
    }
    writeIvfFlatPayload(out, f, [&](int64_t l) {
        if (index.listLength(l) == 0) {
            return IvfListOut{};
        }
        return IvfListOut{ownedArrayOut(index.listIds(l)), ownedArrayOut(index.listVectors(l))};
    });
}

std::unique_ptr<GpuIndex> readIvfFlatIndex(ByteSource& in, uint32_t version, GpuResources& res) {
    const IvfFlatFields f = readIvfFlatFields(in, version);
    auto index = std::make_unique<GpuIndexIVFFlat>(
            res, f.d, f.nlist, faiss::MetricType(f.metric), f.config);
    index->nprobe = size_t(f.nprobe);
    if (f.trained) {
        faiss::IndexFlat q(f.d, faiss::MetricType(f.quantizerMetric));
        q.add(f.nlist, f.centroids.data());
        index->setQuantizer(&q);
    }
    // addPreassigned's work is per call and per list (nlist list pointers uploaded), so
    // the lists go in batches of about a piece, not one by one.
    std::vector<float> x;
    std::vector<int64_t> ids, listNos;
    auto flush = [&] {
        if (!ids.empty()) {
            index->addPreassigned(int64_t(ids.size()), x.data(), listNos.data(), ids.data());
            x.clear();
            ids.clear();
            listNos.clear();
        }
    };
    int64_t list = 0;
    std::vector<int64_t> listIds;
    IvfListsIn lists;
    lists.start = [&](int64_t l, std::vector<int64_t> lIds) {
        list = l;
        listIds = std::move(lIds);
    };
    lists.vectors.put = [&](int64_t row0, int64_t n, const float* v) {
        x.insert(x.end(), v, v + size_t(n) * f.d);
        ids.insert(ids.end(), listIds.begin() + row0, listIds.begin() + row0 + n);
        listNos.insert(listNos.end(), size_t(n), list);
        if (x.size() * sizeof(float) >= kStreamPieceBytes) {
            flush();
        }
    };
    readIvfFlatLists(in, version, f, lists);
    flush();
    return index;
}

} // namespace faiss_ext
