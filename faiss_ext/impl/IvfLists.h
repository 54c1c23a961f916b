// The inverted lists of an IVF index in device memory: per list, its vectors in the
// interleaved layout of kernels/IvfStore.h and its 64-bit ids, growable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/Progress.h>

namespace faiss_ext {

/// One list in host memory: its vectors in the interleaved layout and its ids, both
/// with room for capacity() vectors (a multiple of 32; the ids past len are -1).
struct IvfHostList {
    std::vector<float> data;  ///< capacity() * dp floats
    std::vector<int64_t> ids; ///< capacity() ids
    int64_t len = 0;
    int64_t capacity() const {
        return int64_t(ids.size());
    }
};

/// List `len` vectors (raw: the interleaved layout, roundUp(len, 32) * dp floats; ids:
/// len ids) without those whose position p has removed(p): the others in order, with
/// capacity roundUp(kept, 32), so that IvfLists::append may fill it without growing.
IvfHostList ivfCompactList(
        const float* raw,
        const int64_t* ids,
        int64_t len,
        int dp,
        const std::function<bool(int64_t)>& removed);

class IvfLists {
   public:
    IvfLists(const GpuResources& res, int d, int64_t nlist);
    IvfLists(IvfLists&&) = default;
    IvfLists& operator=(IvfLists&&) = default;

    /// Appends n vectors (host or device memory); vector i goes to list listNos[i] (in
    /// [0, nlist)) with id ids[i] (both host). Data goes through device pages of at most
    /// pageBytes, each reported to `progress`. Every buffer is allocated before any list
    /// changes, so a failure leaves the lists as they were.
    void append(
            int64_t n,
            const float* x,
            const int64_t* listNos,
            const int64_t* ids,
            size_t pageBytes,
            const Progress& progress);
    /// Empties every list and frees their memory.
    void clear();

    int64_t nlist() const {
        return nlist_;
    }
    int dim() const {
        return d_;
    }
    int64_t total() const {
        return total_;
    }
    /// Host copy of the list lengths.
    const std::vector<int64_t>& lengths() const {
        return len_;
    }
    /// The same lengths sorted in descending order (what search planning reads:
    /// the longest nprobe lists without a pass over all nlist).
    const std::vector<int64_t>& lengthsDescending() const {
        return lenDesc_;
    }
    /// Device arrays (nlist entries) of list data pointers, id pointers and lengths.
    const float* const* deviceData() const {
        return dataPtrs_.data();
    }
    const int64_t* const* deviceIds() const {
        return idPtrs_.data();
    }
    const int64_t* deviceLengths() const {
        return lenDev_.data();
    }
    /// Device array (nlist entries) of the lists' byte copies (kernels/IvfStore.h), kept
    /// while every value stored is an integer in [0, 255] (the list-major product reads
    /// a quarter of the bytes); null once a stored value is not, until clear().
    const uint8_t* const* deviceByteCopy() const {
        return bytesKept_ ? bytePtrs_.data() : nullptr;
    }

    /// Slots of the id filter (kernels/IdFilter.h): list l's vectors are slots
    /// slotBase()[l] + position, each list starting on a multiple of 32.
    int64_t slotCount() const {
        return nslots_;
    }
    const std::vector<int64_t>& slotBase() const {
        return slotBase_;
    }
    const int64_t* deviceSlotBase() const {
        return slotBaseDev_.data();
    }
    /// The id of every slot (-1 for the padding after each list), in device memory
    /// (slotCount() entries): the table is gathered on first use and kept until the
    /// lists change (append, removeSlots, clear drop it), so a filtered search reads it
    /// without gathering 8 bytes a vector every call. Valid until the next change; not
    /// for concurrent use (as the index's GpuResources).
    const int64_t* slotIds() const;

    /// Removes the vectors whose slot bit is set in `removeSlots` (slotCount() bits);
    /// the others keep their ids and order. Returns how many were removed. Builds the
    /// changed lists aside first, so a failure leaves the lists as they were.
    int64_t removeSlots(const std::vector<uint32_t>& removeSlots);

    /// List `list`'s vectors (row-major, length x d) and ids, copied to the host.
    std::vector<float> listVectors(int64_t list) const;
    std::vector<int64_t> listIds(int64_t list) const;

    /// reconstruct_n as faiss::IndexIVF defines it: for each id in [i0, i0 + ni)
    /// stored once, its vector goes to out[(id - i0) * d]; rows of ids not stored
    /// are left untouched; returns how many times each id is stored (ni entries).
    /// Throws, writing nothing, if an id in the range is stored more than once.
    std::vector<int> gatherByIds(int64_t i0, int64_t ni, float* out) const;

    /// Device memory the lists hold (the byte copy included).
    size_t deviceBytes() const;

   private:
    void uploadPointers_();
    /// Frees the byte copy for good (until clear()).
    void dropBytes_();
    /// Bytes of a list's byte copy for a capacity of cap vectors.
    size_t byteCopyBytes_(int64_t cap) const;
    /// After the floats of lists[i] changed from position from[i] on: their byte copies
    /// sized for the lists' capacities (the first from[i] vectors kept) and refilled from
    /// the floats. Drops the copy if its memory cannot be had.
    void refreshBytes_(const std::vector<int64_t>& lists, const std::vector<int64_t>& from);
    /// Recomputes what derives from the lengths: the slot bases (host and device) and
    /// the descending lengths; drops the slot-id table. Every change of the lists' contents
    /// ends here.
    void lengthsChanged_();

    const GpuResources* res_;
    int d_;
    int dp_;
    int64_t nlist_;
    int64_t total_ = 0;
    std::vector<int64_t> len_;
    std::vector<int64_t> lenDesc_;
    /// Vectors list l has room for: data_[l] holds cap_[l] * dp_ floats and ids_[l]
    /// cap_[l] ids (append writes up to cap_[l] without growing).
    std::vector<int64_t> cap_;
    std::vector<DeviceBuffer<float>> data_;
    std::vector<DeviceBuffer<int64_t>> ids_;
    /// The byte copy: bytes_[l] holds cap_[l] * 16 * ivfByteGroups(d_) bytes while
    /// bytesKept_, else nothing.
    bool bytesKept_ = true;
    std::vector<DeviceBuffer<uint8_t>> bytes_;
    DeviceBuffer<uint8_t*> bytePtrs_;
    DeviceBuffer<float*> dataPtrs_;
    DeviceBuffer<int64_t*> idPtrs_;
    DeviceBuffer<int64_t> lenDev_;
    std::vector<int64_t> slotBase_;
    DeviceBuffer<int64_t> slotBaseDev_;
    int64_t nslots_ = 0;
    /// slotIds()'s table (at least one entry once built); empty until asked for.
    mutable DeviceBuffer<int64_t> slotIds_;
};

} // namespace faiss_ext
