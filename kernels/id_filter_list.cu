// The list of a slot bitmap's set bits (IdFilter.h: idFilterListSlots): CUB's
// DeviceSelect::If over the slot numbers 0 .. nslots - 1, the bitmap as its predicate.
// Its own file: CUB's select is the heaviest template of the id-filter kernels.
#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "IdFilter.h"

namespace faiss_ext {
namespace kernels {

namespace {

/// Whether slot s's bit is set.
struct SlotBitSet {
    const uint32_t* words;
    __device__ bool operator()(int64_t s) const {
        return (words[s >> 5] >> (s & 31)) & 1u;
    }
};

/// DeviceSelect::If (temp null: its storage size into tempBytes).
cudaError_t selectSlots(
        void* temp,
        size_t& tempBytes,
        const uint32_t* words,
        int64_t nslots,
        int64_t* out,
        int64_t* count,
        cudaStream_t stream) {
    FAISS_THROW_IF_NOT_FMT(
            nslots >= 0 && nslots <= kIdFilterListMaxSlots,
            "idFilterListSlots: %lld slots, at most %lld", (long long)nslots,
            (long long)kIdFilterListMaxSlots);
    return cub::DeviceSelect::If(
            temp, tempBytes, thrust::counting_iterator<int64_t>(0), out, count, int(nslots),
            SlotBitSet{words}, stream);
}

} // namespace

size_t idFilterListSlotsTempBytes(int64_t nslots) {
    if (nslots == 0) {
        return 0;
    }
    size_t bytes = 0;
    FAISS_EXT_CUDA_CHECK(selectSlots(nullptr, bytes, nullptr, nslots, nullptr, nullptr, nullptr));
    return bytes;
}

void idFilterListSlots(
        const uint32_t* words,
        int64_t nslots,
        int64_t* out,
        int64_t* count,
        void* temp,
        size_t tempBytes,
        cudaStream_t stream) {
    if (nslots == 0) {
        FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int64_t), stream));
        return;
    }
    // CUB refuses a tempBytes below what it needs (cudaErrorInvalidValue).
    FAISS_EXT_CUDA_CHECK(selectSlots(temp, tempBytes, words, nslots, out, count, stream));
}

} // namespace kernels
} // namespace faiss_ext
