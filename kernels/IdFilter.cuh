// Device side of the id filter (IdFilter.h): the one test every scan makes.
#pragma once

#include <cstdint>

namespace faiss_ext {
namespace kernels {

/// Whether slot `slot` is set in the bitmap.
__device__ __forceinline__ bool idFilterAllows(const uint32_t* words, int64_t slot) {
    return (__ldg(words + (slot >> 5)) >> (slot & 31)) & 1u;
}

} // namespace kernels
} // namespace faiss_ext
