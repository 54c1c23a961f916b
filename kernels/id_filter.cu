// The id-filter kernels (IdFilter.h): build a slot bitmap from a range or bitmap rule,
// clear tombstones, count, gather IVF slot ids, map ids through a table. The list of a
// bitmap's slots (CUB's select) is in id_filter_list.cu.
#include <algorithm>

#include <faiss_ext/utils/CudaCheck.h>

#include "IdFilter.h"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
    return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 20));
}

__device__ bool ruleSelects(const IdFilterRule& r, int64_t id) {
    if (id < 0) {
        return false;
    }
    if (r.kind == IdFilterRule::kRange) {
        return id >= r.imin && id < r.imax;
    }
    return (id >> 3) < r.bitmapBytes && ((r.bitmap[id >> 3] >> (id & 7)) & 1);
}

// One thread per word (grid-stride): 32 slots each.
__global__ void buildKernel(
        const int64_t* slotIds,
        int64_t nslots,
        IdFilterRule rule,
        const uint32_t* exclude,
        uint32_t* words,
        int64_t nwords) {
    for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < nwords;
         w += int64_t(gridDim.x) * blockDim.x) {
        uint32_t bits = 0;
        const int64_t s0 = w * 32;
        const int n = int(nslots - s0 < 32 ? nslots - s0 : 32);
        for (int b = 0; b < n; ++b) {
            const int64_t id = slotIds ? slotIds[s0 + b] : s0 + b;
            bits |= uint32_t(ruleSelects(rule, id)) << b;
        }
        if (exclude) {
            bits &= ~exclude[w];
        }
        words[w] = bits;
    }
}

__global__ void excludeKernel(uint32_t* words, const uint32_t* exclude, int64_t nwords) {
    for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < nwords;
         w += int64_t(gridDim.x) * blockDim.x) {
        words[w] &= ~exclude[w];
    }
}

__global__ void countKernel(const uint32_t* words, int64_t nslots, unsigned long long* count) {
    const int64_t nwords = (nslots + 31) / 32;
    // The last word's bits below nslots (all of them when nslots is a multiple of 32).
    const uint32_t lastMask = (nslots & 31) ? (1u << (nslots & 31)) - 1u : ~0u;
    unsigned long long c = 0;
    for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < nwords;
         w += int64_t(gridDim.x) * blockDim.x) {
        c += __popc(w == nwords - 1 ? words[w] & lastMask : words[w]);
    }
    for (int off = 16; off > 0; off >>= 1) {
        c += __shfl_down_sync(0xffffffffu, c, off);
    }
    if ((threadIdx.x & 31) == 0 && c > 0) {
        atomicAdd(count, c);
    }
}

// One block per list (grid-stride over lists), threads over its slots.
__global__ void gatherSlotIdsKernel(
        const int64_t* const* listIds,
        const int64_t* listLen,
        const int64_t* listBitBase,
        int64_t nlist,
        int64_t nslots,
        int64_t* out) {
    for (int64_t l = blockIdx.x; l < nlist; l += gridDim.x) {
        const int64_t base = listBitBase[l];
        const int64_t len = listLen[l];
        const int64_t end = l + 1 < nlist ? listBitBase[l + 1] : nslots;
        const int64_t* ids = listIds[l];
        for (int64_t p = threadIdx.x; p < end - base; p += blockDim.x) {
            out[base + p] = p < len ? ids[p] : -1;
        }
    }
}

__global__ void mapIdsKernel(int64_t* ids, int64_t n, const int64_t* table) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t v = ids[i];
        if (v >= 0) {
            ids[i] = table[v];
        }
    }
}

} // namespace

void idFilterBuild(
        const int64_t* slotIds,
        int64_t nslots,
        const IdFilterRule& rule,
        const uint32_t* exclude,
        uint32_t* words,
        cudaStream_t stream) {
    const int64_t nwords = idFilterWords(nslots);
    if (nwords == 0) {
        return;
    }
    buildKernel<<<blocksFor(nwords), kThreads, 0, stream>>>(
            slotIds, nslots, rule, exclude, words, nwords);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void idFilterExclude(
        uint32_t* words,
        const uint32_t* exclude,
        int64_t nwords,
        cudaStream_t stream) {
    if (nwords == 0) {
        return;
    }
    excludeKernel<<<blocksFor(nwords), kThreads, 0, stream>>>(words, exclude, nwords);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void idFilterCount(const uint32_t* words, int64_t nslots, int64_t* count, cudaStream_t stream) {
    static_assert(sizeof(int64_t) == sizeof(unsigned long long), "64-bit counter");
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int64_t), stream));
    const int64_t nwords = idFilterWords(nslots);
    if (nwords == 0) {
        return;
    }
    countKernel<<<std::min(blocksFor(nwords), 1024u), kThreads, 0, stream>>>(
            words, nslots, reinterpret_cast<unsigned long long*>(count));
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void ivfGatherSlotIds(
        const int64_t* const* listIds,
        const int64_t* listLen,
        const int64_t* listBitBase,
        int64_t nlist,
        int64_t nslots,
        int64_t* out,
        cudaStream_t stream) {
    if (nlist == 0 || nslots == 0) {
        return;
    }
    gatherSlotIdsKernel<<<unsigned(std::min<int64_t>(nlist, 65535)), kThreads, 0, stream>>>(
            listIds, listLen, listBitBase, nlist, nslots, out);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

void mapIds(int64_t* ids, int64_t n, const int64_t* table, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    mapIdsKernel<<<blocksFor(n), kThreads, 0, stream>>>(ids, n, table);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace kernels
} // namespace faiss_ext
