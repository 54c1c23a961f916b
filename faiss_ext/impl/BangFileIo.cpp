// GpuIndexBang's payload, a piece at a time: the vectors straight from and to their
// place (the device, as floats or bytes, or with BangVectorPlacement::kHost the mapped
// host rows), the
// graph and the PQ codes from and to the device.
#include <algorithm>
#include <memory>
#include <vector>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/BangInnerProduct.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IndexFileIo.h>
#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/impl/StreamedDeviceArrays.h>
#include <faiss_ext/utils/DeviceScope.h>
#include <kernels/IdFilter.h>

namespace faiss_ext {

namespace {

/// The vectors as added (n x d): the stored rows themselves when they are the vectors
/// as floats (L2), else (inner product, or rows stored as bytes) copyNodeVectors's rows
/// (without the transform's component, or converted to floats).
ArrayOut<float> vectorsOut(const GpuIndexBang& index) {
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    const int64_t n = index.nodeCount();
    const int d = index.d;
    if (state.vectorsOnHost()) {
        return hostArrayOut(state.hostRows(), n, d);
    }
    if (state.dim() == d && !state.bytesStored()) {
        return deviceArrayOut(index.resources(), state.vectors().floats(), n, d);
    }
    ArrayOut<float> a;
    a.rows = n;
    a.width = d;
    a.pieceRows = rowsPerPiece(size_t(d) * sizeof(float));
    auto piece = std::make_shared<std::vector<float>>();
    a.piece = [&index, d, piece](int64_t row0, int64_t m) {
        piece->resize(std::max(piece->size(), size_t(m) * d));
        index.copyNodeVectors(row0, m, piece->data());
        return piece->data();
    };
    return a;
}

/// The new state of an index read from a file, filled a piece at a time: every array
/// allocated first (its size known from the fields), in its final place.
class BangStateReader {
   public:
    BangStateReader(const GpuIndexBang& index, const BangFields& f)
            : res_(index.resources()),
              f_(f),
              width_(GpuIndexBangAccess::deviceState(index).dim()),
              M_(GpuIndexBangAccess::deviceState(index).pqSubquantizers()),
              storage_(GpuIndexBangAccess::deviceState(index).storage()),
              onHost_(f.config.vectorPlacement == BangVectorPlacement::kHost),
              deviceRows_(res_, width_, onHost_ ? 0 : f.ntotal, storage_),
              graph_(res_.alloc<int32_t>(size_t(f.ntotal) * f.config.build.graphDegree)),
              codes_(res_.alloc<uint8_t>(size_t(f.ntotal) * M_)),
              removed_(size_t(kernels::idFilterWords(f.ntotal)), 0u) {
        if (onHost_) {
            hostRows_ = MappedHostBuffer<float>(size_t(f.ntotal) * width_, res_.stream());
        }
    }

    BangArraysIn arrays() {
        BangArraysIn a;
        if (width_ != f_.d) {
            // Inner product: the transform's M2 is the largest squared norm of all the
            // rows, known before the first row is stored.
            a.vectors.scan = [this](int64_t, int64_t n, const float* x) {
                maxNormSq_ = std::max(maxNormSq_, maxNormSq(x, n, f_.d));
            };
        }
        a.vectors.put = [this](int64_t row0, int64_t n, const float* x) { putRows_(row0, n, x); };
        a.graph = deviceArrayIn(res_, graph_.data(), f_.config.build.graphDegree);
        const ArrayIn<int32_t> toDevice = a.graph;
        a.graph.put = [this, toDevice](int64_t row0, int64_t n, const int32_t* ids) {
            checkGraphRows(
                    ids, row0, n, f_.config.build.graphDegree, f_.ntotal, "index file graph");
            toDevice.put(row0, n, ids);
        };
        a.pqCentroids = appendTo(centroids_);
        a.pqCodes = deviceArrayIn(res_, codes_.data(), M_);
        a.removed.put = [this](int64_t, int64_t n, const int64_t* ids) {
            for (int64_t i = 0; i < n; ++i) {
                removed_[size_t(ids[i] >> 5)] |= 1u << (ids[i] & 31);
            }
            removedCount_ += n;
        };
        return a;
    }

    /// The state, once every array is in.
    BangGraph finish() {
        BangGraph state(res_, width_, f_.config.build.graphDegree, M_, storage_);
        if (onHost_) {
            state.setVectorsOnHost(std::move(hostRows_));
        } else {
            state.setVectors(deviceRows_.finish());
        }
        state.setGraph(std::move(graph_), f_.entry);
        if (M_ > 0) {
            auto centroids = res_.alloc<float>(centroids_.size());
            copyToDevice(centroids.data(), centroids_.data(), centroids_.size(), res_.stream());
            state.setPq(std::move(centroids), std::move(codes_));
        }
        state.setTombstones(removed_, removedCount_);
        return state;
    }

    /// The inner-product transform's M2 (0 for L2).
    float ipNormSq() const {
        return float(maxNormSq_);
    }

   private:
    void putRows_(int64_t row0, int64_t n, const float* x) {
        std::vector<float> transformed;
        if (width_ != f_.d) {
            transformed = mipsRows(x, n, f_.d, width_, ipNormSq());
            x = transformed.data();
        }
        if (onHost_) {
            std::copy_n(x, size_t(n) * width_, hostRows_.data() + size_t(row0) * width_);
        } else {
            deviceRows_.put(n, x);
        }
    }

    GpuResources& res_;
    const BangFields& f_;
    const int width_; ///< of the stored rows: d, or the inner product's transform
    const int M_;     ///< stored sub-quantizers (0: exact mode)
    const BangVectorStorage storage_;
    const bool onHost_;
    double maxNormSq_ = 0;
    BangRowsWriter deviceRows_; ///< the rows placed on the device, floats or bytes
    MappedHostBuffer<float> hostRows_;
    DeviceBuffer<int32_t> graph_;
    std::vector<float> centroids_;
    DeviceBuffer<uint8_t> codes_;
    std::vector<uint32_t> removed_;
    int64_t removedCount_ = 0;
};

} // namespace

void writeBangIndex(ByteSink& out, const GpuIndexBang& index) {
    BangFields f;
    f.d = index.d;
    f.metric = int(index.metric_type);
    f.config = index.bangConfig();
    f.searchL = index.search_L;
    // Every node, the removed ones too (their ids stay until the next add).
    f.ntotal = index.nodeCount();
    f.entry = index.entryPoint();
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    GpuResources& res = index.resources();
    DeviceScope scope(res.device());
    BangArraysOut a;
    if (f.ntotal > 0) {
        a.vectors = vectorsOut(index);
        a.graph = deviceArrayOut(res, state.deviceGraph(), f.ntotal, state.degree());
        if (index.pqMode()) {
            a.pqCentroids = ownedArrayOut(state.pqCentroids());
            a.pqCodes =
                    deviceArrayOut(res, state.devicePqCodes(), f.ntotal, state.pqSubquantizers());
        }
        std::vector<int64_t> removed;
        for (int64_t v = 0; v < f.ntotal && state.tombstoneCount() > 0; ++v) {
            if (state.isTombstone(v)) {
                removed.push_back(v);
            }
        }
        a.removed = ownedArrayOut(std::move(removed));
    }
    writeBangPayload(out, f, a);
}

std::unique_ptr<GpuIndex> readBangIndex(ByteSource& in, uint32_t version, GpuResources& res) {
    const BangFields f = readBangFields(in, version);
    auto index = std::make_unique<GpuIndexBang>(res, f.d, faiss::MetricType(f.metric), f.config);
    GpuIndexBang::effectiveL(f.searchL, 1);
    index->search_L = f.searchL;
    DeviceScope scope(res.device());
    BangStateReader reader(*index, f);
    readBangArrays(in, version, f, reader.arrays());
    if (f.ntotal > 0) {
        GpuIndexBangAccess::setDeviceState(*index, reader.finish(), reader.ipNormSq());
    }
    return index;
}

} // namespace faiss_ext
