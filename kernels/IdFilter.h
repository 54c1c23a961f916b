// Host entry points of the id-filter kernels: a bitmap with one bit per stored vector
// (a "slot"), set where the vector may appear in results. Flat and Bang: slot = id (the
// row or node number). IVF: list l's vectors are slots listBitBase[l] + position, each
// list starting on a 32-bit word.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Words of a bitmap over n slots.
inline int64_t idFilterWords(int64_t nslots) {
    return (nslots + 31) / 32;
}

/// What the device evaluates for each slot's id (faiss::IDSelectorRange and
/// faiss::IDSelectorBitmap semantics).
struct IdFilterRule {
    enum Kind { kRange, kBitmap } kind = kRange;
    int64_t imin = 0; ///< kRange: ids in [imin, imax)
    int64_t imax = 0;
    const uint8_t* bitmap = nullptr; ///< kBitmap (device): bit id % 8 of byte id / 8
    int64_t bitmapBytes = 0;         ///< ids at or beyond 8 * bitmapBytes are not selected
};

/// words[w] (idFilterWords(nslots) words) = the rule over the ids of slots 32 w ..
/// 32 w + 31; slotIds (device, nslots) gives each slot's id, -1 for a slot that holds
/// no vector (never selected); null: the id of a slot is the slot. exclude (nullable,
/// same words) clears bits (tombstones).
void idFilterBuild(
        const int64_t* slotIds,
        int64_t nslots,
        const IdFilterRule& rule,
        const uint32_t* exclude,
        uint32_t* words,
        cudaStream_t stream);

/// words[w] &= ~exclude[w] for w < nwords.
void idFilterExclude(uint32_t* words, const uint32_t* exclude, int64_t nwords, cudaStream_t stream);

/// *count (device) = number of set bits of the first nslots bits of words (bits of the
/// last word at or beyond nslots are not counted).
void idFilterCount(const uint32_t* words, int64_t nslots, int64_t* count, cudaStream_t stream);

/// Largest nslots idFilterListSlots takes (CUB's select counts items in 32 bits before
/// CCCL 3).
constexpr int64_t kIdFilterListMaxSlots = (int64_t(1) << 31) - 1;

/// Temporary device bytes idFilterListSlots needs for nslots slots (CUB's select
/// storage; 0 for nslots = 0). Reads the current device's properties, launches nothing.
size_t idFilterListSlotsTempBytes(int64_t nslots);

/// Stream compaction of a bitmap (CUB's DeviceSelect::If over the slot numbers):
/// out[0, c) = the slots s < nslots whose bit is set in words, ascending, and *count
/// (device) = c, the idFilterCount of the same bits. out (device) must hold c entries;
/// temp (device) holds tempBytes >= idFilterListSlotsTempBytes(nslots). nslots <=
/// kIdFilterListMaxSlots. On `stream`, no host synchronisation.
void idFilterListSlots(
        const uint32_t* words,
        int64_t nslots,
        int64_t* out,
        int64_t* count,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream);

/// IVF: out[listBitBase[l] + p] = listIds[l][p] for p < listLen[l]; the padding slots
/// up to the next list's base are -1. out has nslots entries (the last list's base
/// plus its length, rounded up to 32).
void ivfGatherSlotIds(
        const int64_t* const* listIds,
        const int64_t* listLen,
        const int64_t* listBitBase,
        int64_t nlist,
        int64_t nslots,
        int64_t* out,
        cudaStream_t stream);

/// ids[i] = table[ids[i]] for the n entries with ids[i] >= 0 (-1 stays).
void mapIds(int64_t* ids, int64_t n, const int64_t* table, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
