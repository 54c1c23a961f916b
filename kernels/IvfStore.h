// Host entry points of the kernels that write and read the inverted lists' device
// layout (plain C++: no device code here).
//
// Layout of one list: vectors in blocks of 32; inside a block, component group g
// (4 consecutive components, the dimension padded with zeros to a multiple of 4) of
// the 32 vectors is stored as 32 consecutive float4. Vector v's group g is float4
// number (v / 32) * (32 * groups) + g * 32 + v % 32. The 32 lanes of a warp that read
// group g of 32 consecutive vectors thus read 512 contiguous bytes.
//
// The byte copy of a list (kept while every stored value is an integer in [0, 255]) has
// the same blocks of 32 vectors with 16 components a group (the dimension padded with
// zeros to a multiple of 16): vector v's byte group g is 16-byte group number
// (v / 32) * (32 * byteGroups) + g * 32 + v % 32.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Components of one stored vector: d rounded up to a multiple of 4.
constexpr int ivfPaddedDim(int d) {
    return (d + 3) / 4 * 4;
}

/// Float index of component j of vector v in a list (dp = ivfPaddedDim(d)).
constexpr int64_t ivfLayoutIndex(int64_t v, int j, int dp) {
    return (v / 32) * (int64_t(32) * dp) + int64_t(j / 4) * 128 + (v % 32) * 4 + j % 4;
}

/// 16-byte groups of one vector in a list's byte copy.
constexpr int ivfByteGroups(int d) {
    return (d + 15) / 16;
}

/// Byte index of component j of vector v in a list's byte copy.
constexpr int64_t ivfByteLayoutIndex(int64_t v, int j, int d) {
    return (v / 32) * (int64_t(32) * 16 * ivfByteGroups(d)) + int64_t(j / 16) * 512 +
            (v % 32) * 16 + j % 16;
}

/// Writes vector i of x (n x d, row-major, device) to list listNos[i] at position
/// offsets[i] in the layout above, and its id to the list's id array. With notBytes
/// (else null), sets *notBytes to 1 if a value is not an integer in [0, 255].
void ivfAppendVectors(
        const float* x,
        int64_t n,
        int d,
        const int64_t* listNos,
        const int64_t* offsets,
        const int64_t* ids,
        float* const* listData,
        int64_t* const* listIds,
        int* notBytes,
        cudaStream_t stream);

/// For each of the `count` spans (list, from, to) (device, 3 x count), writes the
/// vectors at positions [from, to) of that list from its floats (every value an integer
/// in [0, 255]) into its byte copy.
void ivfCopyToBytes(
        const float* const* listData,
        uint8_t* const* listBytes,
        int d,
        const int64_t* spans,
        int64_t count,
        cudaStream_t stream);

/// For every stored entry whose id lies in [i0, i0 + ni): count[id - i0] += 1 and
/// where[id - i0] = max(where, list << 32 | position). count must be zeroed first.
void ivfFindIds(
        const int64_t* const* listIds,
        const int64_t* listLen,
        int64_t nlist,
        int64_t i0,
        int64_t ni,
        unsigned long long* where,
        int* count,
        cudaStream_t stream);

/// out[r * d + j] = component j of the entry where[r] names, for rows with count > 0.
void ivfGatherRows(
        const float* const* listData,
        int d,
        const unsigned long long* where,
        const int* count,
        int64_t ni,
        float* out,
        cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
