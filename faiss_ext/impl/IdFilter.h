// Filtered search's one conversion: a faiss::IDSelector becomes a device bitmap with
// one bit per stored vector (kernels/IdFilter.h: "slots"), built on the device for
// IDSelectorRange and IDSelectorBitmap, evaluated on the host (is_member once per stored
// vector, IDSelectorArray by its ids) for every other selector and then cached while the
// selector object and the index are unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <faiss_ext/GpuResources.h>

namespace faiss {
struct IDSelector;
}

namespace faiss_ext {

/// The ids of an index's stored vectors, by slot.
struct IdSlots {
    int64_t nslots = 0; ///< bits of the bitmap
    /// The nslots ids in device memory (-1: no vector), valid until the index changes;
    /// asked for only when a bitmap is built. Empty: the id of a slot is the slot.
    std::function<const int64_t*()> ids;
};

/// A resolved filter: idFilterWords(nslots) device words, and how many bits are set.
struct IdFilterBits {
    DeviceBuffer<uint32_t> words;
    int64_t allowed = -1; ///< -1 until counted (IdFilterCache::countAllowed)
};

/// Host evaluation: bit s of the result is sel.is_member(id of slot s) (hostIds: nslots
/// ids, -1 never selected; null: id = slot). IDSelectorArray is read through its ids
/// (its is_member is a linear scan); every other selector through is_member.
std::vector<uint32_t> evaluateIdSelector(
        const faiss::IDSelector& sel,
        int64_t nslots,
        const int64_t* hostIds);

/// What identifies a selector's answers beyond its address: its dynamic type and, for
/// the faiss types whose contents can be read (Range, Array, Batch, Bitmap, Not and,
/// with FAISS >= 1.7.4, And / Or / Xor), a hash of them. A selector of another type is
/// known by its address and type only: changing what it selects while the same object
/// is passed again is not seen (pass a new object).
uint64_t idSelectorFingerprint(const faiss::IDSelector& sel);

/// One per index: resolves the selector of each filtered search.
class IdFilterCache {
   public:
    explicit IdFilterCache(const GpuResources& res) : res_(&res) {}

    /// The index's contents (ids, order, count) changed: forget the cached bitmap.
    void invalidate();

    /// The bitmap of sel over slots, with the bits of `exclude` (nullable device words
    /// over the same slots: tombstones) cleared. Null when sel is null (or an
    /// IDSelectorAll) and exclude is null: no filter.
    std::shared_ptr<IdFilterBits> resolve(
            const faiss::IDSelector* sel,
            const IdSlots& slots,
            const uint32_t* exclude);

    /// Sets and returns bits->allowed (one read from the device the first time).
    int64_t countAllowed(IdFilterBits& bits, int64_t nslots) const;

   private:
    const GpuResources* res_;
    std::mutex mutex_;
    // The last host-evaluated selector (before exclude) and its words on the device.
    const faiss::IDSelector* cachedSel_ = nullptr;
    uint64_t cachedFingerprint_ = 0;
    int64_t cachedSlots_ = -1;
    std::shared_ptr<IdFilterBits> cached_;
};

} // namespace faiss_ext
