// Host entry points of the fused IVF coarse search: the query-centroid products on tensor
// cores (3xTF32, split on the fly) with each query's best few centroids kept in
// registers, so the nq x nlist distance matrix is never written.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// Largest nextPow2(k) the fused coarse search keeps: a thread holds two rows' lists of
/// this many (value, id) pairs in registers beside its 32 accumulators.
constexpr int kCoarseFusedMaxK = 8;
/// Largest dimension it takes. Its shared memory grows with d (coarseFusedSmemBytes: 98 KB
/// at d 128, 195 KB at 256, within the H100's 227 KB; the A100's 163 KB stops at d 208,
/// which the caller checks against the device); above that the tile of queries and the
/// two buffers of centroid fragments no longer fit, and the GEMM path serves.
constexpr int kCoarseFusedMaxDim = 256;
/// Queries a block takes (4 warps of 16: the m16n8k8 tiles' rows).
constexpr int kCoarseFusedQueryTile = 64;
/// Centroids a block takes: the segment whose best k it writes. 16 segments at nlist
/// 4096 times 16 query tiles at nq 1024 is 256 blocks, one wave of 2 a SM on an H100.
constexpr int kCoarseFusedSegment = 256;
/// Centroids of one shared-memory buffer (four n8 tiles): two buffers of their 3xTF32
/// fragments (8 bytes a component) beside the 64 queries keep two blocks an SM at d 128.
constexpr int kCoarseFusedChunk = 32;

struct CoarseFusedArgs {
    const float* queries = nullptr; ///< nq x d, row-major
    int64_t nq = 0;
    int d = 0;
    /// coarseFusedFragmentBytes(nlist, d), 16-byte aligned: the centroids' 3xTF32 parts
    /// in mma fragment order (coarseFusedSplitCentroids).
    const float4* centroidFragments = nullptr;
    /// nlist squared norms (L2); unused for inner product
    const float* centroidNorms = nullptr;
    int64_t nlist = 0;
    bool innerProduct = false;
    int k = 0; ///< nextPow2(k) <= kCoarseFusedMaxK, k <= nlist
    /// nq x ldCand, ldCand = coarseFusedSegments(nlist) * k: segment s's best k of query
    /// q, ascending by (key, id), at candD[q * ldCand + s * k + j]. Keys as the flat
    /// search's selection keys: |c|^2 - 2 q.c (L2) or -q.c (inner product). A segment
    /// with fewer than k centroids pads with (+inf, -1).
    float* candD = nullptr;
    int64_t* candI = nullptr;
    /// L2 (null for inner product): nq squared query norms, for the finish.
    float* queryNorms = nullptr;
    /// nq x k: each query's best k over all segments, as FAISS's distances (finishKnn's
    /// finish; ties by id).
    float* outD = nullptr;
    int64_t* outI = nullptr;
};

/// Segments of kCoarseFusedSegment centroids covering nlist.
inline int64_t coarseFusedSegments(int64_t nlist) {
    return (nlist + kCoarseFusedSegment - 1) / kCoarseFusedSegment;
}

/// n8 tiles of the centroid fragments: nlist rounded up to whole chunks, / 8.
inline int64_t coarseFusedFragmentTiles(int64_t nlist) {
    return (nlist + kCoarseFusedChunk - 1) / kCoarseFusedChunk * (kCoarseFusedChunk / 8);
}

/// Bytes of the centroid fragments (CoarseFusedArgs::centroidFragments): 8 a component,
/// nlist and d rounded up to whole chunks and k-steps.
inline size_t coarseFusedFragmentBytes(int64_t nlist, int d) {
    return size_t(coarseFusedFragmentTiles(nlist)) * 8 * size_t((d + 7) / 8 * 8) * 8;
}

/// Dynamic shared memory of one block at dimension d.
size_t coarseFusedSmemBytes(int d);

/// Splits nlist x d centroids (row-major, d <= kCoarseFusedMaxDim) into their 3xTF32
/// fragments (coarseFusedFragmentBytes(nlist, d), 16-byte aligned), one kernel on the
/// stream: once per set of centroids where they are kept, or before each search.
void coarseFusedSplitCentroids(
        const float* centroids,
        int64_t nlist,
        int d,
        float4* fragments,
        cudaStream_t stream);

/// Writes every (query, segment)'s best k candidates from the centroids' fragments, then
/// merges each query's into its results (CoarseFusedArgs): two kernels on the stream.
/// Needs a device of compute capability 8.0 or newer (TF32 mma), d <= kCoarseFusedMaxDim
/// and coarseFusedSmemBytes(d) within the device's limit; finite inputs.
void coarseFusedSearch(const CoarseFusedArgs& args, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
