// Host entry point of the list-major key path's exact re-rank: each query's vectors whose
// L2 key |x|^2 - 2 q.x is within the band of its k-th key (IvfKeyBand.h), re-ranked by
// the per-query scan's own FP32 distance.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Most results a query the re-rank keeps: one a lane of a warp.
constexpr int kKeyRerankMaxK = 32;

struct IvfKeyRerankArgs {
    const float* queries = nullptr; ///< nq x d
    int64_t nq = 0;
    int d = 0;
    int nprobe = 0;
    const int64_t* coarse = nullptr;    ///< nq x nprobe probed lists (-1: none)
    const int* vectorOffsets = nullptr; ///< nq x (nprobe + 1): each probe's first key
    const float* keys = nullptr;        ///< the list-major product's keys (l2Keys)
    int64_t ldKeys = 0;
    const float* rowMaxNorms = nullptr; ///< nq: at least the largest |x|^2 of each row
    /// Relative bound of the keys' dot products, of 2 |q| |x| (ivfKeyBandLimit): the FP32
    /// product's ivfKeyErrorRel(d), or the tensor cores' 3xTF32 bound (IvfListMajorArgs).
    float dotRel = 0.f;
    const float* const* listData = nullptr;
    const int64_t* const* listIds = nullptr;
    int k = 0; ///< 1 .. kKeyRerankMaxK
    /// nq x k. In: each query's k smallest keys, ascending (+inf past its finite keys),
    /// as the merge leaves them; out: its k nearest by FP32 distance (ties: smaller id
    /// first), +inf and id -1 past the vectors it probed.
    float* outD = nullptr;
    int64_t* outI = nullptr;
};

/// Dynamic shared memory of the re-rank at dimension d (its block's queries and their
/// queues of listed positions).
size_t ivfKeyRerankSmemBytes(int d);

/// Re-ranks every query's band: a warp a query reads its row of keys once and computes
/// the distance of each key at most the band limit.
void ivfKeyRerank(const IvfKeyRerankArgs& args, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
