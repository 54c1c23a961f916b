// Host entry points of the merge stage (merging each query's per-chunk candidates into its
// final top-k) and of the key -> FAISS distance finish.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Shared memory the fast merge needs for rows of `candidates` entries: the row padded
/// to a power of two, one float key and one int position per entry.
size_t ivfMergeFastSmemBytes(int64_t candidates);

/// Fast path: one block per row stages the row's candidates (its first
/// rowCandidates[row] entries, or all ld when rowCandidates is null; ascending-sorted
/// groups, +inf / -1 padding allowed) in shared memory, bitonic-sorts them and writes the
/// k best as FAISS distances (see ivfFinish). Needs ivfMergeFastSmemBytes(ld) of
/// dynamic shared memory, which the caller has checked against the device limit.
void ivfMergeFast(
        const float* candD,
        const int64_t* candI,
        int64_t nrows,
        int64_t ld,
        const int* rowCandidates,
        int k,
        bool innerProduct,
        float* outD,
        int64_t* outI,
        cudaStream_t stream);

/// In place on count results: keys become FAISS distances (L2: unchanged; inner
/// product: negated), and id -1 gets +inf (L2) or -inf (inner product).
void ivfFinish(float* D, const int64_t* I, int64_t count, bool innerProduct, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
