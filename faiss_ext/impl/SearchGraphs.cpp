#include <faiss_ext/impl/SearchGraphs.h>

#include <algorithm>
#include <exception>

#include <faiss_ext/impl/MappedHostBuffer.h>
#include <faiss_ext/impl/ParallelCopy.h>
#include <faiss_ext/utils/CudaCheck.h>

#include <kernels/MappedCopy.h>

namespace faiss_ext {

struct SearchGraphs::Entry {
    std::vector<int64_t> key;
    bool host = false;    ///< the graph copies from and to hostX / hostD / hostI
    size_t tempBytes = 0; ///< the work's temporaries, held by the graph once captured
    uint64_t lastUse = 0;
    cudaGraphExec_t exec = nullptr; ///< null until captured
    bool failed = false;            ///< the capture failed: always run directly
    DeviceBuffer<float> x, distances;
    DeviceBuffer<int64_t> labels;
    MappedHostBuffer<float> hostX, hostD;
    MappedHostBuffer<int64_t> hostI;

    ~Entry() {
        if (exec) {
            cudaGraphExecDestroy(exec);
        }
    }
};

SearchGraphs::SearchGraphs(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

SearchGraphs::~SearchGraphs() {
    clear();
}

size_t SearchGraphs::graphCount() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return size_t(std::count_if(
            entries_.begin(), entries_.end(), [](const auto& e) { return e->exec != nullptr; }));
}

size_t SearchGraphs::heldBytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return heldBytes_();
}

size_t SearchGraphs::heldBytes_() const {
    size_t bytes = 0;
    for (const auto& e : entries_) {
        bytes += e->exec ? e->tempBytes : 0;
    }
    return bytes;
}

void SearchGraphs::clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stream_) {
        cudaStreamSynchronize(stream_); // no graph may run while it is destroyed
    }
    entries_.clear();
    releaseGraphMemory_();
}

void SearchGraphs::releaseGraphMemory_() {
    // Graph temporaries stay reserved in the device's graph pool after their graph is
    // destroyed until trimmed: return them, so an index's memory goes with it.
    if (stream_) {
        cudaDeviceGraphMemTrim(device_);
    }
}

SearchGraphs::Entry& SearchGraphs::entry_(
        const std::vector<int64_t>& key,
        bool host,
        cudaStream_t stream,
        bool& seen) {
    for (auto& e : entries_) {
        if (e->key == key && e->host == host) {
            seen = true;
            e->lastUse = ++clock_;
            return *e;
        }
    }
    seen = false;
    if (entries_.size() >= capacity_) {
        dropOldest_(nullptr, false, stream);
    }
    entries_.push_back(std::make_unique<Entry>());
    entries_.back()->key = key;
    entries_.back()->host = host;
    entries_.back()->lastUse = ++clock_;
    return *entries_.back();
}

bool SearchGraphs::dropOldest_(const Entry* keep, bool heldOnly, cudaStream_t stream) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const bool candidate = it->get() != keep && (!heldOnly || (*it)->exec != nullptr);
        if (candidate && (oldest == entries_.end() || (*it)->lastUse < (*oldest)->lastUse)) {
            oldest = it;
        }
    }
    if (oldest == entries_.end()) {
        return false;
    }
    const bool held = (*oldest)->exec != nullptr;
    if (held) {
        FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    entries_.erase(oldest);
    if (held) {
        releaseGraphMemory_();
    }
    return true;
}

void SearchGraphs::capture_(
        const GpuResources& res,
        Entry& e,
        int64_t nq,
        int d,
        int k,
        const Work& work) {
    cudaStream_t stream = res.stream();
    const size_t xBytes = size_t(nq) * d * sizeof(float);
    const size_t dBytes = size_t(nq) * k * sizeof(float);
    const size_t iBytes = size_t(nq) * k * sizeof(int64_t);
    e.x = res.alloc<float>(size_t(nq) * d);
    e.distances = res.alloc<float>(size_t(nq) * k);
    e.labels = res.alloc<int64_t>(size_t(nq) * k);
    if (e.host) {
        e.hostX = MappedHostBuffer<float>(size_t(nq) * d, stream);
        e.hostD = MappedHostBuffer<float>(size_t(nq) * k, stream);
        e.hostI = MappedHostBuffer<int64_t>(size_t(nq) * k, stream);
    }
    // Relaxed: the work may make calls that are not stream-ordered (an attribute set on
    // first use, say); a synchronisation on the stream still ends the capture in error.
    FAISS_EXT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    bool ok = true;
    try {
        // Copy kernels over the mapped host buffers, not memcpy nodes (MappedCopy.h).
        if (e.host) {
            const kernels::CopySpan in{e.x.data(), e.hostX.deviceData(), xBytes};
            kernels::copySpans(&in, 1, res.multiProcessorCount(), stream);
        }
        work(e.x.data(), e.distances.data(), e.labels.data());
        if (e.host) {
            const kernels::CopySpan out[2] = {
                    {e.hostD.deviceData(), e.distances.data(), dBytes},
                    {e.hostI.deviceData(), e.labels.data(), iBytes}};
            kernels::copySpans(out, 2, res.multiProcessorCount(), stream);
        }
    } catch (const std::exception&) {
        ok = false; // run directly below, where the error (if real) is thrown again
    }
    cudaGraph_t graph = nullptr;
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok && graph != nullptr;
    if (ok) {
        ok = cudaGraphInstantiateWithFlags(&e.exec, graph, 0) == cudaSuccess;
    }
    if (graph) {
        cudaGraphDestroy(graph);
    }
    if (!ok) {
        (void)cudaGetLastError();
        e.exec = nullptr;
        e.failed = true;
        e.x = {};
        e.distances = {};
        e.labels = {};
        e.hostX = {};
        e.hostD = {};
        e.hostI = {};
    }
}

SearchGraphs::Entry* SearchGraphs::held_(
        const GpuResources& res,
        const std::vector<int64_t>& key,
        size_t tempBytes,
        bool host,
        int64_t nq,
        int d,
        int k,
        const Work& work) {
    cudaStream_t stream = res.stream();
    stream_ = stream;
    device_ = res.device();
    bool seen = false;
    Entry& e = entry_(key, host, stream, seen);
    if (!seen) {
        return nullptr;
    }
    if (!e.exec && !e.failed) {
        // Room in the temp budget for this graph's temporaries: the least recently used
        // graphs go first.
        e.tempBytes = tempBytes;
        while (heldBytes_() + tempBytes > res.tempMemoryBytes() && dropOldest_(&e, true, stream)) {
        }
        capture_(res, e, nq, d, k, work);
    }
    return e.failed ? nullptr : &e;
}

void SearchGraphs::run(
        const GpuResources& res,
        const std::vector<int64_t>& key,
        size_t tempBytes,
        int64_t nq,
        int d,
        int k,
        const float* x,
        float* distances,
        int64_t* labels,
        const Work& work) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry* e = held_(res, key, tempBytes, false, nq, d, k, work);
    if (e == nullptr) {
        work(x, distances, labels);
        return;
    }
    cudaStream_t stream = res.stream();
    const size_t xBytes = size_t(nq) * d * sizeof(float);
    const size_t outCount = size_t(nq) * k;
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(e->x.data(), x, xBytes, cudaMemcpyDeviceToDevice, stream));
    FAISS_EXT_CUDA_CHECK(cudaGraphLaunch(e->exec, stream));
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
            distances, e->distances.data(), outCount * sizeof(float), cudaMemcpyDeviceToDevice,
            stream));
    FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
            labels, e->labels.data(), outCount * sizeof(int64_t), cudaMemcpyDeviceToDevice,
            stream));
}

bool SearchGraphs::runHost(
        const GpuResources& res,
        const std::vector<int64_t>& key,
        size_t tempBytes,
        int64_t nq,
        int d,
        int k,
        const float* x,
        float* distances,
        int64_t* labels,
        const Work& work) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry* e = held_(res, key, tempBytes, true, nq, d, k, work);
    if (e == nullptr) {
        return false;
    }
    cudaStream_t stream = res.stream();
    const size_t outCount = size_t(nq) * k;
    parallelCopyForDma(e->hostX.data(), x, size_t(nq) * d * sizeof(float));
    FAISS_EXT_CUDA_CHECK(cudaGraphLaunch(e->exec, stream));
    expectParallelCopy(outCount * (sizeof(float) + sizeof(int64_t)));
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
    const CopyPart results[2] = {
            {distances, e->hostD.data(), outCount * sizeof(float)},
            {labels, e->hostI.data(), outCount * sizeof(int64_t)}};
    parallelCopy(results, 2);
    return true;
}

} // namespace faiss_ext
