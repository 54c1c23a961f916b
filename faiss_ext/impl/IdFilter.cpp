#include <faiss_ext/impl/IdFilter.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <string>
#include <typeinfo>

#include <faiss/impl/FaissAssert.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/impl/ResourcesAccess.h>
#include <kernels/IdFilter.h>

namespace faiss_ext {

namespace {

constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t mix(uint64_t h, uint64_t v) {
    // splitmix64 finaliser of v, folded into h.
    v += 0x9e3779b97f4a7c15ull;
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
    v ^= v >> 31;
    return (h ^ v) * kFnvPrime;
}

/// Newer FAISS (1.7.4 on) adds the boolean combinations; 1.7.3 has Not only.
#define FAISS_EXT_FAISS_VERSION \
    (FAISS_VERSION_MAJOR * 10000 + FAISS_VERSION_MINOR * 100 + FAISS_VERSION_PATCH)

uint64_t contentHash(const faiss::IDSelector& sel) {
    if (auto r = dynamic_cast<const faiss::IDSelectorRange*>(&sel)) {
        return mix(mix(1, uint64_t(r->imin)), uint64_t(r->imax));
    }
    if (auto a = dynamic_cast<const faiss::IDSelectorArray*>(&sel)) {
        uint64_t h = mix(2, a->n);
        for (size_t i = 0; i < a->n; ++i) {
            h = mix(h, uint64_t(a->ids[i]));
        }
        return h;
    }
    if (auto b = dynamic_cast<const faiss::IDSelectorBatch*>(&sel)) {
        // Order-independent over the set.
        uint64_t sum = 0;
        for (auto id : b->set) {
            sum += mix(0, uint64_t(id));
        }
        return mix(mix(3, b->set.size()), sum);
    }
    if (auto m = dynamic_cast<const faiss::IDSelectorBitmap*>(&sel)) {
        uint64_t h = mix(4, m->n);
        for (size_t i = 0; i < m->n; ++i) {
            h = mix(h, m->bitmap[i]);
        }
        return h;
    }
    if (auto n = dynamic_cast<const faiss::IDSelectorNot*>(&sel)) {
        return mix(5, n->sel ? idSelectorFingerprint(*n->sel) : 0);
    }
#if FAISS_EXT_FAISS_VERSION >= 10704
    if (auto c = dynamic_cast<const faiss::IDSelectorAnd*>(&sel)) {
        return mix(mix(6, idSelectorFingerprint(*c->lhs)), idSelectorFingerprint(*c->rhs));
    }
    if (auto c = dynamic_cast<const faiss::IDSelectorOr*>(&sel)) {
        return mix(mix(7, idSelectorFingerprint(*c->lhs)), idSelectorFingerprint(*c->rhs));
    }
    if (auto c = dynamic_cast<const faiss::IDSelectorXOr*>(&sel)) {
        return mix(mix(8, idSelectorFingerprint(*c->lhs)), idSelectorFingerprint(*c->rhs));
    }
#endif
    return mix(9, uint64_t(reinterpret_cast<uintptr_t>(&sel)));
}

/// The device rule of a selector the device evaluates itself, if it is one.
bool deviceRuleOf(const faiss::IDSelector& sel, kernels::IdFilterRule& rule) {
    if (auto r = dynamic_cast<const faiss::IDSelectorRange*>(&sel)) {
        rule.kind = kernels::IdFilterRule::kRange;
        rule.imin = r->imin;
        rule.imax = r->imax;
        return true;
    }
    if (auto m = dynamic_cast<const faiss::IDSelectorBitmap*>(&sel)) {
        FAISS_THROW_IF_NOT_MSG(
                m->n == 0 || m->bitmap != nullptr, "search: IDSelectorBitmap with a null bitmap");
        rule.kind = kernels::IdFilterRule::kBitmap;
        rule.bitmapBytes = int64_t(m->n);
        return true;
    }
    return false;
}

} // namespace

uint64_t idSelectorFingerprint(const faiss::IDSelector& sel) {
    const uint64_t type = std::hash<std::string>()(typeid(sel).name());
    return mix(type, contentHash(sel));
}

std::vector<uint32_t> evaluateIdSelector(
        const faiss::IDSelector& sel,
        int64_t nslots,
        const int64_t* hostIds) {
    std::vector<uint32_t> words(size_t(kernels::idFilterWords(nslots)), 0u);
    auto set = [&](int64_t s) { words[size_t(s >> 5)] |= 1u << (s & 31); };
    if (auto a = dynamic_cast<const faiss::IDSelectorArray*>(&sel)) {
        FAISS_THROW_IF_NOT_MSG(
                a->n == 0 || a->ids != nullptr, "search: IDSelectorArray with a null id array");
        if (hostIds == nullptr) {
            for (size_t i = 0; i < a->n; ++i) {
                if (a->ids[i] >= 0 && a->ids[i] < nslots) {
                    set(a->ids[i]);
                }
            }
            return words;
        }
        std::vector<int64_t> sorted(a->ids, a->ids + a->n);
        std::sort(sorted.begin(), sorted.end());
        for (int64_t s = 0; s < nslots; ++s) {
            if (hostIds[s] >= 0 && std::binary_search(sorted.begin(), sorted.end(), hostIds[s])) {
                set(s);
            }
        }
        return words;
    }
    for (int64_t s = 0; s < nslots; ++s) {
        const int64_t id = hostIds ? hostIds[s] : s;
        if (id >= 0 && sel.is_member(id)) {
            set(s);
        }
    }
    return words;
}

void IdFilterCache::invalidate() {
    std::lock_guard<std::mutex> lock(mutex_);
    cachedSel_ = nullptr;
    cached_.reset();
}

int64_t IdFilterCache::countAllowed(IdFilterBits& bits, int64_t nslots) const {
    if (bits.allowed < 0) {
        auto count = res_->alloc<int64_t>(1);
        kernels::idFilterCount(bits.words.data(), nslots, count.data(), res_->stream());
        copyToHost(&bits.allowed, count.data(), 1, res_->stream());
    }
    return bits.allowed;
}

std::shared_ptr<IdFilterBits> IdFilterCache::resolve(
        const faiss::IDSelector* sel,
        const IdSlots& slots,
        const uint32_t* exclude) {
    if (sel != nullptr && dynamic_cast<const faiss::IDSelectorAll*>(sel) != nullptr) {
        sel = nullptr;
    }
    if (sel == nullptr && exclude == nullptr) {
        return nullptr;
    }
    cudaStream_t stream = res_->stream();
    const int64_t nwords = kernels::idFilterWords(slots.nslots);
    auto out = std::make_shared<IdFilterBits>();
    out->words = res_->alloc<uint32_t>(size_t(std::max<int64_t>(nwords, 1)));
    auto deviceIds = [&]() -> const int64_t* { return slots.ids ? slots.ids() : nullptr; };
    if (sel == nullptr) {
        // Tombstones only: every slot that holds a vector, but the excluded ones.
        kernels::IdFilterRule all;
        all.imin = 0;
        all.imax = INT64_MAX;
        kernels::idFilterBuild(deviceIds(), slots.nslots, all, exclude, out->words.data(), stream);
        return out;
    }
    kernels::IdFilterRule rule;
    if (deviceRuleOf(*sel, rule)) {
        DeviceBuffer<uint8_t> bitmap;
        if (rule.kind == kernels::IdFilterRule::kBitmap && rule.bitmapBytes > 0) {
            auto m = static_cast<const faiss::IDSelectorBitmap*>(sel);
            bitmap = res_->alloc<uint8_t>(size_t(rule.bitmapBytes));
            // Through the pinned slots: returns once the caller's bytes are read, without
            // waiting for the stream (the build below is ordered after the copy).
            GpuResourcesAccess::pinnedStaging(*res_).toDevice(
                    bitmap.data(), m->bitmap, size_t(rule.bitmapBytes), stream);
            rule.bitmap = bitmap.data();
        }
        kernels::idFilterBuild(deviceIds(), slots.nslots, rule, exclude, out->words.data(), stream);
        return out;
    }

    std::shared_ptr<IdFilterBits> base;
    const uint64_t fingerprint = idSelectorFingerprint(*sel);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cached_ && cachedSel_ == sel && cachedFingerprint_ == fingerprint &&
            cachedSlots_ == slots.nslots) {
            base = cached_;
        }
    }
    if (!base) {
        std::vector<int64_t> hostIds;
        if (const int64_t* dev = deviceIds()) {
            hostIds = copyToHostVector(dev, size_t(slots.nslots), stream);
        }
        const std::vector<uint32_t> words =
                evaluateIdSelector(*sel, slots.nslots, slots.ids ? hostIds.data() : nullptr);
        base = std::make_shared<IdFilterBits>();
        base->words = res_->alloc<uint32_t>(size_t(std::max<int64_t>(nwords, 1)));
        copyToDevice(base->words.data(), words.data(), words.size(), stream);
        int64_t allowed = 0;
        for (uint32_t w : words) {
            allowed += __builtin_popcount(w);
        }
        base->allowed = allowed;
        std::lock_guard<std::mutex> lock(mutex_);
        cachedSel_ = sel;
        cachedFingerprint_ = fingerprint;
        cachedSlots_ = slots.nslots;
        cached_ = base;
    }
    if (exclude == nullptr) {
        return base;
    }
    if (nwords > 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemcpyAsync(
                out->words.data(), base->words.data(), size_t(nwords) * sizeof(uint32_t),
                cudaMemcpyDeviceToDevice, stream));
    }
    kernels::idFilterExclude(out->words.data(), exclude, nwords, stream);
    return out;
}

} // namespace faiss_ext
