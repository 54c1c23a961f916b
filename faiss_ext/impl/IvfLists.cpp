#include <faiss_ext/impl/IvfLists.h>

#include <algorithm>
#include <functional>

#include <faiss_ext/utils/DeviceScope.h>
#include <faiss_ext/utils/MathUtils.h>
#include <kernels/IdFilter.h>
#include <kernels/IvfStore.h>

namespace faiss_ext {

IvfHostList ivfCompactList(
        const float* raw,
        const int64_t* ids,
        int64_t len,
        int dp,
        const std::function<bool(int64_t)>& removed) {
    IvfHostList out;
    for (int64_t p = 0; p < len; ++p) {
        out.len += removed(p) ? 0 : 1;
    }
    const int64_t cap = roundUp<int64_t>(out.len, 32);
    out.data.assign(size_t(cap) * dp, 0.f);
    out.ids.assign(size_t(cap), -1);
    int64_t v = 0;
    for (int64_t p = 0; p < len; ++p) {
        if (removed(p)) {
            continue;
        }
        for (int j = 0; j < dp; ++j) {
            out.data[kernels::ivfLayoutIndex(v, j, dp)] = raw[kernels::ivfLayoutIndex(p, j, dp)];
        }
        out.ids[size_t(v)] = ids[p];
        ++v;
    }
    return out;
}

IvfLists::IvfLists(const GpuResources& res, int d, int64_t nlist)
        : res_(&res),
          d_(d),
          dp_(kernels::ivfPaddedDim(d)),
          nlist_(nlist),
          len_(size_t(nlist), 0),
          cap_(size_t(nlist), 0),
          data_(size_t(nlist)),
          ids_(size_t(nlist)),
          bytes_(size_t(nlist)) {
    // The resources' device, whichever is current (an index part on a second GPU is
    // made from the caller's thread): the copies below run on its stream.
    DeviceScope scope(res.device());
    dataPtrs_ = res.alloc<float*>(size_t(nlist));
    idPtrs_ = res.alloc<int64_t*>(size_t(nlist));
    bytePtrs_ = res.alloc<uint8_t*>(size_t(nlist));
    lenDev_ = res.alloc<int64_t>(size_t(nlist));
    slotBaseDev_ = res.alloc<int64_t>(size_t(nlist));
    uploadPointers_();
    copyToDevice(lenDev_.data(), len_.data(), len_.size(), res.stream());
    lengthsChanged_();
}

void IvfLists::lengthsChanged_() {
    slotBase_.resize(size_t(nlist_));
    int64_t base = 0;
    for (int64_t l = 0; l < nlist_; ++l) {
        slotBase_[l] = base;
        base += roundUp<int64_t>(len_[l], 32);
    }
    nslots_ = base;
    copyToDevice(slotBaseDev_.data(), slotBase_.data(), slotBase_.size(), res_->stream());
    lenDesc_ = len_;
    std::sort(lenDesc_.begin(), lenDesc_.end(), std::greater<int64_t>());
    slotIds_ = DeviceBuffer<int64_t>();
}

const int64_t* IvfLists::slotIds() const {
    if (slotIds_.size() == 0) {
        auto table = res_->alloc<int64_t>(size_t(std::max<int64_t>(nslots_, 1)));
        kernels::ivfGatherSlotIds(
                idPtrs_.data(), lenDev_.data(), slotBaseDev_.data(), nlist_, nslots_, table.data(),
                res_->stream());
        slotIds_ = std::move(table);
    }
    return slotIds_.data();
}

int64_t IvfLists::removeSlots(const std::vector<uint32_t>& removeSlots) {
    FAISS_THROW_IF_NOT_FMT(
            int64_t(removeSlots.size()) == kernels::idFilterWords(nslots_),
            "removeSlots: %zu words for %lld slots", removeSlots.size(), (long long)nslots_);
    auto removed = [&](int64_t slot) {
        return (removeSlots[size_t(slot >> 5)] >> (slot & 31)) & 1u;
    };
    cudaStream_t stream = res_->stream();
    // The changed lists, rebuilt on the host in the interleaved layout, then uploaded
    // into new buffers: nothing of the lists changes before every buffer exists.
    std::vector<int64_t> changed, newLen;
    std::vector<DeviceBuffer<float>> newData;
    std::vector<DeviceBuffer<int64_t>> newIds;
    int64_t count = 0;
    for (int64_t l = 0; l < nlist_; ++l) {
        const int64_t len = len_[l];
        int64_t gone = 0;
        for (int64_t p = 0; p < len; ++p) {
            gone += removed(slotBase_[l] + p);
        }
        if (gone == 0) {
            continue;
        }
        std::vector<float> raw(size_t(roundUp<int64_t>(len, 32)) * dp_);
        copyToHost(raw.data(), data_[l].data(), raw.size(), stream);
        std::vector<int64_t> ids = copyToHostVector(ids_[l].data(), size_t(len), stream);
        const int64_t base = slotBase_[l];
        IvfHostList out = ivfCompactList(
                raw.data(), ids.data(), len, dp_, [&](int64_t p) { return removed(base + p); });
        // Both buffers sized for the capacity: append writes ids up to cap_[l] in place.
        DeviceBuffer<float> data;
        DeviceBuffer<int64_t> idBuf;
        if (out.len > 0) {
            data = res_->alloc<float>(out.data.size());
            idBuf = res_->alloc<int64_t>(out.ids.size());
            copyToDevice(data.data(), out.data.data(), out.data.size(), stream);
            copyToDevice(idBuf.data(), out.ids.data(), out.ids.size(), stream);
        }
        changed.push_back(l);
        newLen.push_back(out.len);
        newData.push_back(std::move(data));
        newIds.push_back(std::move(idBuf));
        count += gone;
    }
    if (changed.empty()) {
        return 0;
    }
    for (size_t c = 0; c < changed.size(); ++c) {
        const int64_t l = changed[c];
        data_[l] = std::move(newData[c]);
        ids_[l] = std::move(newIds[c]);
        len_[l] = newLen[c];
        cap_[l] = int64_t(ids_[l].size()); // what the buffers hold, not what was kept
    }
    total_ -= count;
    uploadPointers_();
    copyToDevice(lenDev_.data(), len_.data(), len_.size(), stream);
    lengthsChanged_();
    refreshBytes_(changed, std::vector<int64_t>(changed.size(), 0));
    return count;
}

void IvfLists::uploadPointers_() {
    std::vector<float*> dp(static_cast<size_t>(nlist_));
    std::vector<int64_t*> ip(static_cast<size_t>(nlist_));
    std::vector<uint8_t*> bp(static_cast<size_t>(nlist_));
    for (int64_t l = 0; l < nlist_; ++l) {
        dp[l] = data_[l].data();
        ip[l] = ids_[l].data();
        bp[l] = bytes_[l].data();
    }
    copyToDevice(dataPtrs_.data(), dp.data(), dp.size(), res_->stream());
    copyToDevice(idPtrs_.data(), ip.data(), ip.size(), res_->stream());
    copyToDevice(bytePtrs_.data(), bp.data(), bp.size(), res_->stream());
}

size_t IvfLists::byteCopyBytes_(int64_t cap) const {
    return size_t(cap) * 16 * kernels::ivfByteGroups(d_);
}

void IvfLists::dropBytes_() {
    for (auto& b : bytes_) {
        b = DeviceBuffer<uint8_t>();
    }
    bytesKept_ = false;
    uploadPointers_();
}

void IvfLists::refreshBytes_(const std::vector<int64_t>& lists, const std::vector<int64_t>& from) {
    if (!bytesKept_ || lists.empty()) {
        return;
    }
    cudaStream_t stream = res_->stream();
    // Buffers sized for the lists' capacities, all allocated before any changes. The copy
    // only speeds up searches: without the memory for it, the lists go on without it.
    std::vector<size_t> resized;
    std::vector<DeviceBuffer<uint8_t>> fresh;
    DeviceBuffer<int64_t> spansDev;
    try {
        for (size_t i = 0; i < lists.size(); ++i) {
            const size_t need = byteCopyBytes_(cap_[lists[i]]);
            if (bytes_[lists[i]].bytes() != need) {
                resized.push_back(i);
                fresh.push_back(need > 0 ? res_->alloc<uint8_t>(need) : DeviceBuffer<uint8_t>());
            }
        }
        spansDev = res_->alloc<int64_t>(3 * lists.size());
    } catch (const faiss::FaissException&) {
        dropBytes_();
        return;
    }
    // Whole blocks of 32 of the kept prefix move over; the rest is zeroed (the padding
    // of the last block and past d is read as zeros).
    for (size_t r = 0; r < resized.size(); ++r) {
        const size_t i = resized[r];
        const int64_t l = lists[i];
        DeviceBuffer<uint8_t>& b = fresh[r];
        if (b.bytes() > 0) {
            FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, b.bytes(), stream));
        }
        const size_t kept = std::min(byteCopyBytes_(roundUp<int64_t>(from[i], 32)), b.bytes());
        if (kept > 0) {
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    b.data(), bytes_[l].data(), kept, cudaMemcpyDeviceToDevice, stream));
        }
        bytes_[l] = std::move(b);
    }
    if (!resized.empty()) {
        uploadPointers_();
    }
    std::vector<int64_t> spans;
    for (size_t i = 0; i < lists.size(); ++i) {
        spans.insert(spans.end(), {lists[i], from[i], len_[lists[i]]});
    }
    copyToDevice(spansDev.data(), spans.data(), spans.size(), stream);
    kernels::ivfCopyToBytes(
            dataPtrs_.data(), bytePtrs_.data(), d_, spansDev.data(), int64_t(lists.size()), stream);
}

void IvfLists::append(
        int64_t n,
        const float* x,
        const int64_t* listNos,
        const int64_t* ids,
        size_t pageBytes,
        const Progress& progress) {
    if (n == 0) {
        return;
    }
    cudaStream_t stream = res_->stream();
    // Destination of every vector, on the host.
    std::vector<int64_t> newLen = len_;
    std::vector<int64_t> offsets(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t l = listNos[i];
        FAISS_THROW_IF_NOT_FMT(
                l >= 0 && l < nlist_, "list number %lld of vector %lld is outside [0, %lld)",
                (long long)l, (long long)i, (long long)nlist_);
        offsets[i] = newLen[l]++;
    }

    // Grow: allocate every new buffer first (a failure throws with nothing changed).
    std::vector<int64_t> grown;
    std::vector<DeviceBuffer<float>> newData;
    std::vector<DeviceBuffer<int64_t>> newIds;
    std::vector<int64_t> newCap;
    for (int64_t l = 0; l < nlist_; ++l) {
        if (newLen[l] > cap_[l]) {
            const int64_t cap = roundUp<int64_t>(std::max(newLen[l], cap_[l] + cap_[l] / 4), 32);
            grown.push_back(l);
            newCap.push_back(cap);
            newData.push_back(res_->alloc<float>(size_t(cap) * dp_));
            newIds.push_back(res_->alloc<int64_t>(size_t(cap)));
        }
    }
    const size_t bytesPerVector = size_t(d_) * sizeof(float) + 3 * sizeof(int64_t);
    const int64_t page =
            std::min<int64_t>(n, std::max<int64_t>(1, int64_t(pageBytes / bytesPerVector)));
    auto xDev = res_->alloc<float>(size_t(page) * d_);
    auto listDev = res_->alloc<int64_t>(size_t(page));
    auto offDev = res_->alloc<int64_t>(size_t(page));
    auto idDev = res_->alloc<int64_t>(size_t(page));
    // Set by the store kernel if a value is not a byte: the byte copy is then dropped.
    DeviceBuffer<int> notBytes;
    if (bytesKept_) {
        notBytes = res_->alloc<int>(1);
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(notBytes.data(), 0, sizeof(int), stream));
    }

    // Nothing below allocates: move the old contents over. Blocks of 32 vectors are
    // whole in the layout, so the used part is a prefix of the buffer. The rest is
    // zeroed: a block's unused slots are then defined when whole blocks are read (the
    // list copies to the host, the scans).
    for (size_t g = 0; g < grown.size(); ++g) {
        const int64_t l = grown[g];
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(newData[g].data(), 0, newData[g].bytes(), stream));
        if (len_[l] > 0) {
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    newData[g].data(), data_[l].data(),
                    size_t(roundUp<int64_t>(len_[l], 32)) * dp_ * sizeof(float),
                    cudaMemcpyDeviceToDevice, stream));
            FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                    newIds[g].data(), ids_[l].data(), size_t(len_[l]) * sizeof(int64_t),
                    cudaMemcpyDeviceToDevice, stream));
        }
        data_[l] = std::move(newData[g]);
        ids_[l] = std::move(newIds[g]);
        cap_[l] = newCap[g];
    }
    if (!grown.empty()) {
        uploadPointers_();
    }
    for (int64_t i0 = 0; i0 < n; i0 += page) {
        const int64_t m = std::min(page, n - i0);
        copyToDevice(xDev.data(), x + i0 * d_, size_t(m) * d_, stream);
        copyToDevice(listDev.data(), listNos + i0, size_t(m), stream);
        copyToDevice(offDev.data(), offsets.data() + i0, size_t(m), stream);
        copyToDevice(idDev.data(), ids + i0, size_t(m), stream);
        kernels::ivfAppendVectors(
                xDev.data(), m, d_, listDev.data(), offDev.data(), idDev.data(), dataPtrs_.data(),
                idPtrs_.data(), notBytes.data(), stream);
        progress.step("vectors stored", i0 + m, n);
    }
    // The new entries become visible only with the new lengths.
    copyToDevice(lenDev_.data(), newLen.data(), newLen.size(), stream);
    std::vector<int64_t> oldLen = std::move(len_);
    len_ = std::move(newLen);
    total_ += n;
    lengthsChanged_();
    if (bytesKept_) {
        int notByte = 0;
        copyToHost(&notByte, notBytes.data(), 1, stream);
        if (notByte) {
            dropBytes_();
        } else {
            std::vector<int64_t> lists, from;
            for (int64_t l = 0; l < nlist_; ++l) {
                if (len_[l] > oldLen[l]) {
                    lists.push_back(l);
                    from.push_back(oldLen[l]);
                }
            }
            refreshBytes_(lists, from);
        }
    }
}

void IvfLists::clear() {
    for (int64_t l = 0; l < nlist_; ++l) {
        data_[l] = DeviceBuffer<float>();
        ids_[l] = DeviceBuffer<int64_t>();
        bytes_[l] = DeviceBuffer<uint8_t>();
        len_[l] = 0;
        cap_[l] = 0;
    }
    bytesKept_ = true;
    total_ = 0;
    uploadPointers_();
    copyToDevice(lenDev_.data(), len_.data(), len_.size(), res_->stream());
    lengthsChanged_();
}

std::vector<float> IvfLists::listVectors(int64_t list) const {
    FAISS_THROW_IF_NOT_FMT(
            list >= 0 && list < nlist_, "list %lld is outside [0, %lld)", (long long)list,
            (long long)nlist_);
    const int64_t len = len_[list];
    std::vector<float> raw(size_t(roundUp<int64_t>(len, 32)) * dp_);
    copyToHost(raw.data(), data_[list].data(), raw.size(), res_->stream());
    std::vector<float> out(size_t(len) * d_);
    for (int64_t v = 0; v < len; ++v) {
        for (int j = 0; j < d_; ++j) {
            out[size_t(v) * d_ + j] = raw[kernels::ivfLayoutIndex(v, j, dp_)];
        }
    }
    return out;
}

std::vector<int64_t> IvfLists::listIds(int64_t list) const {
    FAISS_THROW_IF_NOT_FMT(
            list >= 0 && list < nlist_, "list %lld is outside [0, %lld)", (long long)list,
            (long long)nlist_);
    return copyToHostVector(ids_[list].data(), static_cast<size_t>(len_[list]), res_->stream());
}

std::vector<int> IvfLists::gatherByIds(int64_t i0, int64_t ni, float* out) const {
    cudaStream_t stream = res_->stream();
    auto where = res_->alloc<unsigned long long>(size_t(ni));
    auto count = res_->alloc<int>(size_t(ni));
    auto rows = res_->alloc<float>(size_t(ni) * d_);
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, size_t(ni) * sizeof(int), stream));
    // Rows of ids not stored are not gathered; zeroed, the whole buffer is defined.
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(rows.data(), 0, rows.bytes(), stream));
    kernels::ivfFindIds(
            idPtrs_.data(), lenDev_.data(), nlist_, i0, ni, where.data(), count.data(), stream);
    std::vector<int> hostCount(static_cast<size_t>(ni));
    copyToHost(hostCount.data(), count.data(), hostCount.size(), stream);
    kernels::ivfGatherRows(
            dataPtrs_.data(), d_, where.data(), count.data(), ni, rows.data(), stream);
    std::vector<float> hostRows(size_t(ni) * d_);
    copyToHost(hostRows.data(), rows.data(), hostRows.size(), stream);
    for (int64_t r = 0; r < ni; ++r) {
        FAISS_THROW_IF_NOT_FMT(
                hostCount[r] <= 1, "id %lld is stored %d times: it names no single vector",
                (long long)(i0 + r), hostCount[r]);
    }
    for (int64_t r = 0; r < ni; ++r) {
        if (hostCount[r] == 1) {
            std::copy_n(hostRows.data() + r * d_, d_, out + r * d_);
        }
    }
    return hostCount;
}

size_t IvfLists::deviceBytes() const {
    size_t b = dataPtrs_.bytes() + idPtrs_.bytes() + bytePtrs_.bytes() + lenDev_.bytes() +
            slotIds_.bytes();
    for (int64_t l = 0; l < nlist_; ++l) {
        b += data_[l].bytes() + ids_[l].bytes() + bytes_[l].bytes();
    }
    return b;
}

} // namespace faiss_ext
