// List-major IVF distances (or L2 keys): the batch's probes grouped by list (a counting sort: one
// block for small batches, else over the grid with one-block CUB scans), then a
// persistent grid of work items (a group of at most 16 of a list's queries, 32 on the
// tensor cores, x a tile of 256 of its vectors): each thread streams one of the tile's vectors (its
// floats, or the lists' byte copy where kept) through its own slots of a shared-memory ring by
// cp.async, reading it once, and multiplies it with the group's queries, broadcast from
// shared memory (from groups of 8, a thread takes two of its warp's vectors against half
// the queries). The L2 keys of float lists take the tensor cores from groups of 8:
// 3xTF32 mma.sync, the group's queries (one or two tiles of 16) against the warp's 32
// vectors. Blocks take items from a counter as they free up.
#include <map>
#include <mutex>
#include <utility>

#include <math_constants.h>
#include <cub/block/block_scan.cuh>

#include <faiss_ext/utils/CudaCheck.h>

#include "CopyAsync.cuh"
#include "IdFilter.cuh"
#include "IvfListMajor.h"
#include "IvfStore.h"
#include "MmaTf32.cuh"
#include "SmemLimit.cuh"

namespace faiss_ext {
namespace kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Vectors of a work item's tile: 32 a warp, a vector a lane.
constexpr int kTile = 32 * kWarps;
constexpr int kMaxG = kIvfGroupMax; ///< most queries in a CUDA-core product's group
/// Most queries in any work item's group: the tensor-core keys' two tiles of 16.
constexpr int kMaxItemQueries = kIvfTensorKeysGroupMax;
/// Float4 groups (4 components each) of the queries staged in shared memory at a time.
constexpr int kStagedGroups = 32;
/// Float4 groups of a thread's vector one cp.async group brings (a batch), and batches in
/// its ring: while one is multiplied the next kRingBatches - 1 are in flight, 192 bytes a
/// thread and ~150 KB an SM, none of it in registers.
constexpr int kRingBatch = 4;
constexpr int kRingBatches = 4;
static_assert(kStagedGroups % kRingBatch == 0, "no batch straddles two staged chunks");
/// Float4 slots of one ring position, one a thread: two past kThreads, so that the
/// tensor-core keys' 16-byte loads (8 vectors x 4 positions a warp) fall on distinct banks.
constexpr int kSlot = kThreads + 2;
/// The ring's dynamic shared memory, 64.5 KB a block: with the static ItemQueries (8.4
/// KB) three blocks an SM.
constexpr size_t kRingSmemBytes = size_t(kRingBatch) * kRingBatches * kSlot * sizeof(float4);
/// The tensor-core keys take groups of at least this many queries (their mma has 16 rows
/// whatever the group); smaller groups keep the CUDA-core product, whose instructions
/// scale with the group.
constexpr int kTensorKeysMinGroup = 8;
/// From the byte copy a batch (the same 16 components) is one 16-byte slot: 8 in the
/// ring, 7 in flight (112 bytes a thread), 32 KB a block.
constexpr int kByteRingBatches = 8;
constexpr size_t kByteRingSmemBytes = size_t(kByteRingBatches) * kThreads * sizeof(uint4);

/// Queries in each group of a list probed by `count` queries: the smallest multiple of 4
/// up to maxGroup that holds them all (maxGroup above: several groups).
__device__ inline int listMajorGroup(int count, int maxGroup) {
    return count <= maxGroup ? max(4, (count + 3) / 4 * 4) : maxGroup;
}

constexpr int kScanThreads = 1024;
/// Largest dynamic shared memory of the one-block grouping, its counts and cursors (5119
/// lists): within the default limit with its scan's static storage (a few hundred bytes).
constexpr size_t kOneBlockGroupSmemBytes = size_t(40) << 10;
/// The one-block grouping's largest batch, (query, probe) pairs: 8 a thread. Above it
/// the grid kernels' parallel count and scatter win over one block's loops.
constexpr int64_t kOneBlockGroupMaxPairs = 8 * kScanThreads;

/// Scratch layout (ints): counts, listStart, cursor, work, workStart (nlist + 1 each),
/// the product's item counter, then the grouped pairs.
struct GroupScratch {
    int* counts;
    int* listStart;
    int* cursor;
    int* work;
    int* workStart;
    int* nextItem;
    int* pairs;
};

GroupScratch carve(void* scratch, int64_t nlist) {
    GroupScratch s;
    int* p = static_cast<int*>(scratch);
    s.counts = p;
    s.listStart = p + (nlist + 1);
    s.cursor = p + 2 * (nlist + 1);
    s.work = p + 3 * (nlist + 1);
    s.workStart = p + 4 * (nlist + 1);
    s.nextItem = p + 5 * (nlist + 1);
    s.pairs = p + 5 * (nlist + 1) + 1;
    return s;
}

using BlockScanInts = cub::BlockScan<int, kScanThreads>;

// Exclusive prefix sum of in[0 .. n - 1] into out by one block: each thread sums a
// contiguous run, a CUB block scan offsets the runs, each thread writes its run.
__global__ void __launch_bounds__(kScanThreads)
        exclusiveScanKernel(const int* in, int64_t n, int* out) {
    __shared__ BlockScanInts::TempStorage temp;
    const int64_t per = (n + kScanThreads - 1) / kScanThreads;
    const int64_t begin = min(n, threadIdx.x * per);
    const int64_t end = min(n, begin + per);
    int sum = 0;
    for (int64_t i = begin; i < end; ++i) {
        sum += in[i];
    }
    int offset = 0;
    BlockScanInts(temp).ExclusiveSum(sum, offset);
    for (int64_t i = begin; i < end; ++i) {
        const int v = in[i];
        out[i] = offset;
        offset += v;
    }
}

/// Work items (query groups x vector tiles) of a list probed by `count` queries.
__device__ inline int listWork(int count, int64_t length, int maxGroup) {
    const int g = listMajorGroup(count, maxGroup);
    const int64_t groups = (count + g - 1) / g;
    const int64_t tiles = (length + kTile - 1) / kTile;
    return int(groups * tiles);
}

__global__ void countProbesKernel(const int64_t* coarse, int64_t pairs, int* counts) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < pairs && coarse[i] >= 0) {
        atomicAdd(&counts[coarse[i]], 1);
    }
}

// Per list: work items (query groups x vector tiles); the cursor starts at listStart.
// Also clears the product's item counter.
__global__ void listWorkKernel(
        const int* counts,
        const int* listStart,
        const int64_t* listLen,
        int64_t nlist,
        int maxGroup,
        int* work,
        int* cursor,
        int* nextItem) {
    const int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (l < nlist) {
        work[l] = listWork(counts[l], listLen[l], maxGroup);
        cursor[l] = listStart[l];
    } else if (l == nlist) {
        work[l] = 0;
        *nextItem = 0;
    }
}

__global__ void scatterProbesKernel(
        const int64_t* coarse,
        int64_t pairs,
        int* cursor,
        int* grouped) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < pairs && coarse[i] >= 0) {
        grouped[atomicAdd(&cursor[coarse[i]], 1)] = int(i);
    }
}

/// Lists of the one-block grouping's scan a thread takes (consecutive): its shared
/// memory holds at most kOneBlockGroupSmemBytes / 8 lists and their end.
constexpr int kOneBlockListsPerThread = 5;
static_assert(
        kOneBlockListsPerThread * kScanThreads >= kOneBlockGroupSmemBytes / (2 * sizeof(int)),
        "the one-block scan covers every list it takes");

/// (pairs, work items) summed as one: both of a list's offsets from one block scan.
struct SumPairs {
    __device__ int2 operator()(const int2& a, const int2& b) const {
        return make_int2(a.x + b.x, a.y + b.y);
    }
};
/// Warp scans: their static storage is a few hundred bytes beside the counts and cursors
/// (CUB's default raking scan of int2 over 1024 threads took the block past 48 KB).
using BlockScanPairs = cub::BlockScan<int2, kScanThreads, cub::BLOCK_SCAN_WARP_SCANS>;

// The whole grouping in one block, its counts and cursors in shared memory: the same
// steps as the kernels above (count, the two scans as one, scatter) without five
// launches and their gaps, for batches whose pairs one block goes through quickly. Its
// time is latency (one SM, ~20 cycles an instruction a warp): the list lengths are read
// first, behind the count, and each thread keeps its lists' counts and work in
// registers for the one scan.
__global__ void __launch_bounds__(kScanThreads) groupOneBlockKernel(
        const int64_t* coarse,
        int64_t pairs,
        int64_t nlist,
        const int64_t* listLen,
        int maxGroup,
        int* listStart,
        int* workStart,
        int* nextItem,
        int* grouped) {
    extern __shared__ int smem[];
    int* counts = smem;               // nlist + 1
    int* cursor = smem + (nlist + 1); // nlist + 1
    const int64_t first = int64_t(threadIdx.x) * kOneBlockListsPerThread;
    int64_t length[kOneBlockListsPerThread];
#pragma unroll
    for (int j = 0; j < kOneBlockListsPerThread; ++j) {
        length[j] = first + j < nlist ? listLen[first + j] : 0;
    }
    for (int64_t l = threadIdx.x; l <= nlist; l += kScanThreads) {
        counts[l] = 0;
    }
    if (threadIdx.x == 0) {
        *nextItem = 0;
    }
    __syncthreads();
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < pairs; i += kScanThreads) {
        const int64_t l = coarse[i];
        if (l >= 0) {
            atomicAdd(&counts[l], 1);
        }
    }
    __syncthreads();
    int count[kOneBlockListsPerThread];
    int work[kOneBlockListsPerThread];
    int2 sum = make_int2(0, 0);
#pragma unroll
    for (int j = 0; j < kOneBlockListsPerThread; ++j) {
        count[j] = first + j < nlist ? counts[first + j] : 0;
        work[j] = first + j < nlist ? listWork(count[j], length[j], maxGroup) : 0;
        sum.x += count[j];
        sum.y += work[j];
    }
    __shared__ BlockScanPairs::TempStorage temp;
    int2 start;
    BlockScanPairs(temp).ExclusiveScan(sum, start, make_int2(0, 0), SumPairs());
#pragma unroll
    for (int j = 0; j < kOneBlockListsPerThread; ++j) {
        if (first + j <= nlist) {
            listStart[first + j] = start.x;
            cursor[first + j] = start.x;
            workStart[first + j] = start.y;
        }
        start.x += count[j];
        start.y += work[j];
    }
    __syncthreads();
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < pairs; i += kScanThreads) {
        const int64_t l = coarse[i];
        if (l >= 0) {
            grouped[atomicAdd(&cursor[l], 1)] = int(i);
        }
    }
}

/// One work item of the product: a group of a list's queries and a tile of its vectors.
struct ListMajorItem {
    int list;
    int first;  ///< the group's first grouped pair
    int g;      ///< queries a group (listMajorGroup)
    int gCount; ///< queries in this group
    int64_t v0; ///< the tile's first vector
    int vCount; ///< vectors in this tile
};

/// The last list l in [0, nlist) with workStart[l] <= w, found by the whole block (every
/// thread calls it with the same w): each round, the threads read evenly spaced entries of
/// the range at once and count those at most w (a prefix, as workStart ascends), which
/// narrows the range kThreads-fold. Two rounds of one load up to 65536 lists, where a
/// thread's binary search is a chain of log2(nlist) dependent loads an item. Ends with
/// a barrier.
__device__ inline int blockLastAtMost(const int* workStart, int nlist, int w) {
    int lo = 0;
    int span = nlist; // the answer is in [lo, lo + span)
    do {
        const int step = (span + kThreads - 1) / kThreads;
        const int at = threadIdx.x * step;
        const int atMost = __syncthreads_count(at < span && workStart[lo + at] <= w);
        lo += (atMost - 1) * step;
        span = min(step, span - (atMost - 1) * step);
    } while (span > 1);
    return lo;
}

// The groups of one tile are consecutive work items, so blocks that take items at about
// the same time read the same tile (from L2 after the first).
__device__ inline ListMajorItem listMajorItem(const IvfListMajorArgs& a, int w) {
    const int* workStart = a.groups.workStart;
    const int* listStart = a.groups.listStart;
    ListMajorItem it;
    it.list = blockLastAtMost(workStart, int(a.nlist), w);
    const int listFirst = listStart[it.list];
    const int nQueries = listStart[it.list + 1] - listFirst;
    it.g = listMajorGroup(nQueries, a.groups.maxGroup);
    const int groups = (nQueries + it.g - 1) / it.g;
    const int local = w - workStart[it.list];
    const int g0 = (local % groups) * it.g;
    it.first = listFirst + g0;
    it.gCount = min(it.g, nQueries - g0);
    it.v0 = int64_t(local / groups) * kTile;
    it.vCount = int(min(int64_t(kTile), a.listLen[it.list] - it.v0));
    return it;
}

/// What the threads of a block share about their work item.
struct ItemQueries {
    /// Staged components of the group's queries: kMaxG rows of kStagedGroups float4
    /// groups, or the tensor-core keys' 32 rows of half as many (the same 8 KB).
    float4 q[kMaxG][kStagedGroups];
    int row[kMaxItemQueries];     ///< each query's row in a.queries (-1: past the group)
    int64_t out[kMaxItemQueries]; ///< where each query's distances to the tile start
    int nextItem;                 ///< the block's next work item
};

/// Float4 groups [c0, c0 + cn) of the group's g queries, times `scale` (1, or -2 for the
/// keys: exact), into shared memory as rows of rowGroups float4 (zeros past d and past
/// the group); a component a thread, consecutive threads on consecutive components of
/// one query.
__device__ inline void stageQueries(
        const IvfListMajorArgs& a,
        ItemQueries& s,
        int g,
        int c0,
        int cn,
        float scale,
        int rowGroups = kStagedGroups) {
    float* staged = reinterpret_cast<float*>(s.q);
    const int width = 4 * cn;
    for (int idx = threadIdx.x; idx < g * width; idx += kThreads) {
        const int i = idx / width;
        const int e = idx - i * width;
        const int comp = 4 * c0 + e;
        const int row = s.row[i];
        staged[i * 4 * rowGroups + e] =
                row >= 0 && comp < a.d ? scale * a.queries[int64_t(row) * a.d + comp] : 0.f;
    }
}

/// One thread's tile vector streamed from its floats through its slots of the block's
/// ring: slot j at ring[j * kSlot + threadIdx.x], so a warp's 16-byte accesses are
/// consecutive. A thread reads only the slots it fills: no barrier, only its own
/// cp.async groups. Batch b is float4 groups kRingBatch b .. kRingBatch b + 3.
struct FloatStream {
    static constexpr int kBatches = kRingBatches;
    static constexpr size_t kSmemBytes = kRingSmemBytes;
    static constexpr bool kPairs = true;
    static constexpr bool kTensorKeys = true;
    float4* ring;
    unsigned slot0;  ///< shared address of this thread's slot 0
    const float4* p; ///< the vector's float4 group 0; group c at p[32 c]
    int groups;      ///< float4 groups of the vector

    /// Lanes past the list's end read the last block's padding (lists hold whole blocks
    /// of 32) and write nothing.
    __device__ FloatStream(const IvfListMajorArgs& a, int list, int64_t v, float4* smem)
            : ring(smem),
              slot0(static_cast<unsigned>(__cvta_generic_to_shared(smem + threadIdx.x))),
              groups(ivfPaddedDim(a.d) / 4) {
        p = reinterpret_cast<const float4*>(a.listData[list]) + (v >> 5) * (int64_t(32) * groups) +
                (v & 31);
    }

    /// Asks for batch b into its slots (nothing past the vector) and closes its group.
    __device__ void request(int b) const {
        const unsigned slot = slot0 + (b % kBatches) * kRingBatch * kSlot * sizeof(float4);
#pragma unroll
        for (int u = 0; u < kRingBatch; ++u) {
            const int c = b * kRingBatch + u;
            if (c < groups) {
                copyAsync16Shared(slot + u * kSlot * sizeof(float4), p + int64_t(c) * 32);
            }
        }
        commitAsync();
    }

    /// Batch b of the block's tile vector v (this thread's, or another lane's of its warp
    /// after a __syncwarp), once its wait is done: where its groups start in the ring,
    /// then its groups read one by one.
    using Batch = int;
    __device__ Batch batch(int b, int v) const {
        return (b % kBatches) * kRingBatch * kSlot + v;
    }
    __device__ float4 group(Batch at, int u) const {
        return ring[at + u * kSlot];
    }
};

/// The same vector streamed from the lists' byte copy: batch b (the same 16 components)
/// is the vector's 16-byte group b, one slot of the ring.
struct ByteStream {
    static constexpr int kBatches = kByteRingBatches;
    static constexpr size_t kSmemBytes = kByteRingSmemBytes;
    /// A vector a thread: with two, each half-warp would convert both vectors' bytes,
    /// which costs about the shared loads saved (sm_90 SASS: +15 instructions a step).
    static constexpr bool kPairs = false;
    static constexpr bool kTensorKeys = false;
    uint4* ring;
    unsigned slot0; ///< shared address of this thread's slot 0
    const uint4* p; ///< the vector's 16-byte group 0; group b at p[32 b]
    int groups;     ///< float4 groups of the vector (as FloatStream's)

    __device__ ByteStream(const IvfListMajorArgs& a, int list, int64_t v, float4* smem)
            : ring(reinterpret_cast<uint4*>(smem)),
              slot0(static_cast<unsigned>(__cvta_generic_to_shared(smem + threadIdx.x))),
              groups(ivfPaddedDim(a.d) / 4) {
        p = reinterpret_cast<const uint4*>(a.listBytes[list]) +
                (v >> 5) * (int64_t(32) * ivfByteGroups(a.d)) + (v & 31);
    }

    __device__ void request(int b) const {
        if (b * kRingBatch < groups) {
            copyAsync16Shared(
                    slot0 + (b % kBatches) * kThreads * sizeof(uint4),
                    reinterpret_cast<const float4*>(p + int64_t(b) * 32));
        }
        commitAsync();
    }

    /// Batch b's 16 bytes of tile vector v, read once from the ring; group u is its word
    /// u as 4 floats.
    using Batch = uint4;
    __device__ Batch batch(int b, int v) const {
        return ring[(b % kBatches) * kThreads + v];
    }
    __device__ float4 group(const uint4& w, int u) const {
        const uint32_t word = u == 0 ? w.x : u == 1 ? w.y : u == 2 ? w.z : w.w;
        return make_float4(
                byteAsFloat(word, 0), byteAsFloat(word, 1), byteAsFloat(word, 2),
                byteAsFloat(word, 3));
    }

    /// Byte i of word as a float, exactly: 2^23 + byte, built by a byte permute, less
    /// 2^23 (a PRMT and an FADD, no conversion unit).
    __device__ static float byteAsFloat(uint32_t word, int i) {
        return __uint_as_float(__byte_perm(word, 0x4b00u, 0x5440u | unsigned(i))) - 8388608.f;
    }
};

/// What the product writes for each (query, vector): the squared L2 distance, minus the
/// inner product, or the L2 key |x|^2 - 2 q.x.
enum class Product { kL2, kInnerProduct, kL2Keys };

/// Whether this thread's warp holds vectors of the item's tile (else it streams nothing).
__device__ inline bool warpHasVectors(const ListMajorItem& it) {
    return (threadIdx.x / 32) * 32 < it.vCount;
}

/// Tile vectors a thread multiplies in a group of G queries. From G = 8 the warp's two
/// halves (16 lanes each) take half the queries each over two vectors (lanes p and p + 16
/// of the warp), so that every query float4 loaded from shared memory feeds two vectors'
/// instructions: with a vector a thread, 17 loads went with 128 FP32 instructions at G 16
/// and the wait for them was the kernel's largest stall (benchs/NOTES.md). Only where the
/// stream allows it (Stream::kPairs).
template <typename Stream>
__device__ constexpr int vectorsPerThread(int g) {
    return Stream::kPairs && g >= 8 ? 2 : 1;
}

// Raises the group's queries' rowMaxNorms to the largest |x|^2 of the warp's vectors
// (norm: 0 past the tile), a warp maximum and one atomic a query: non-negative floats
// order as their bits do.
__device__ inline void raiseRowMaxNorms(
        const IvfListMajorArgs& a,
        const ListMajorItem& it,
        const ItemQueries& s,
        float norm) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
        norm = fmaxf(norm, __shfl_xor_sync(0xffffffffu, norm, offset));
    }
    if (threadIdx.x % 32 == 0 && norm > 0.f) {
        for (int i = 0; i < it.gCount; ++i) {
            atomicMax(reinterpret_cast<unsigned*>(a.rowMaxNorms) + s.row[i], __float_as_uint(norm));
        }
    }
}

// The products of one work item with G queries a group. The stream's first
// kRingBatches - 1 batches were asked for when the item was looked up; each step asks
// for the batch kRingBatches - 1 ahead (into the slots the previous step read), waits
// for its own and multiplies the float4 groups of the thread's V vectors with its H of
// the staged queries. Each thread streams its own tile vector (threadIdx.x); with V = 2
// it also reads another lane's, so the warp syncs before a request (the slots it refills
// are read) and after the wait (every lane's copies have landed). Components in
// increasing order, even ones into acc0 and odd ones into acc1: the per-query scan's
// operations (IvfListLoader.cuh), so both paths give the same bits. The keys take one
// FMA a component with the staged -2 q, and the vector's |x|^2 once for the group.
template <Product kProduct, int G, typename Stream>
__device__ inline void itemProducts(
        const IvfListMajorArgs& a,
        const ListMajorItem& it,
        const Stream& st,
        ItemQueries& s) {
    constexpr bool kKeys = kProduct == Product::kL2Keys;
    constexpr int V = vectorsPerThread<Stream>(G);
    constexpr int H = G / V;
    constexpr int kSpan = 32 / V; // lanes between a thread's vectors
    static_assert(G % V == 0, "each half of the warp takes as many queries");
    const int lane = threadIdx.x % 32;
    const int firstQuery = (lane / kSpan) * H;
    int vec[V]; // the thread's tile vectors
#pragma unroll
    for (int j = 0; j < V; ++j) {
        vec[j] = threadIdx.x - lane + lane % kSpan + j * kSpan;
    }
    const bool streams = warpHasVectors(it);
    float acc0[V][H], acc1[V][H];
#pragma unroll
    for (int j = 0; j < V; ++j) {
#pragma unroll
        for (int i = 0; i < H; ++i) {
            acc0[j][i] = 0.f;
            acc1[j][i] = 0.f;
        }
    }
    float norm0[V], norm1[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        norm0[j] = 0.f;
        norm1[j] = 0.f;
    }
    for (int c0 = 0; c0 < st.groups; c0 += kStagedGroups) {
        const int cn = min(kStagedGroups, st.groups - c0);
        if (c0 > 0) {
            __syncthreads(); // the previous chunk's queries are consumed
        }
        stageQueries(a, s, G, c0, cn, kKeys ? -2.f : 1.f);
        __syncthreads();
        if (!streams) {
            continue;
        }
        for (int c = 0; c < cn; c += kRingBatch) {
            const int b = (c0 + c) / kRingBatch;
            if (V > 1) {
                __syncwarp();
            }
            st.request(b + Stream::kBatches - 1);
            waitAsyncGroups<Stream::kBatches - 1>();
            if (V > 1) {
                __syncwarp();
            }
            typename Stream::Batch batch[V];
#pragma unroll
            for (int j = 0; j < V; ++j) {
                batch[j] = st.batch(b, vec[j]);
            }
#pragma unroll
            for (int u = 0; u < kRingBatch; ++u) {
                if (c + u >= cn) {
                    break;
                }
                float4 x[V];
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    x[j] = st.group(batch[j], u);
                    if (kKeys) {
                        norm0[j] = fmaf(x[j].x, x[j].x, norm0[j]);
                        norm1[j] = fmaf(x[j].y, x[j].y, norm1[j]);
                        norm0[j] = fmaf(x[j].z, x[j].z, norm0[j]);
                        norm1[j] = fmaf(x[j].w, x[j].w, norm1[j]);
                    }
                }
#pragma unroll
                for (int i = 0; i < H; ++i) {
                    const float4 q = s.q[firstQuery + i][c + u];
#pragma unroll
                    for (int j = 0; j < V; ++j) {
                        if (kProduct != Product::kL2) {
                            acc0[j][i] = fmaf(q.x, x[j].x, acc0[j][i]);
                            acc1[j][i] = fmaf(q.y, x[j].y, acc1[j][i]);
                            acc0[j][i] = fmaf(q.z, x[j].z, acc0[j][i]);
                            acc1[j][i] = fmaf(q.w, x[j].w, acc1[j][i]);
                        } else {
                            const float e0 = q.x - x[j].x, e1 = q.y - x[j].y;
                            const float e2 = q.z - x[j].z, e3 = q.w - x[j].w;
                            acc0[j][i] = fmaf(e0, e0, acc0[j][i]);
                            acc1[j][i] = fmaf(e1, e1, acc1[j][i]);
                            acc0[j][i] = fmaf(e2, e2, acc0[j][i]);
                            acc1[j][i] = fmaf(e3, e3, acc1[j][i]);
                        }
                    }
                }
            }
        }
    }
    float norm[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        norm[j] = norm0[j] + norm1[j];
    }
    if (kKeys) {
        float rowNorm = 0.f; // the largest |x|^2 of the thread's tile vectors
#pragma unroll
        for (int j = 0; j < V; ++j) {
            rowNorm = vec[j] < it.vCount ? fmaxf(rowNorm, norm[j]) : rowNorm;
        }
        raiseRowMaxNorms(a, it, s, rowNorm);
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int v = vec[j];
        if (v >= it.vCount) {
            continue;
        }
        const bool allowed =
                !a.allow || idFilterAllows(a.allow, a.listBitBase[it.list] + it.v0 + v);
#pragma unroll
        for (int i = 0; i < H; ++i) {
            if (firstQuery + i < it.gCount) {
                const float sum = acc0[j][i] + acc1[j][i];
                a.distances[s.out[firstQuery + i] + v] = !allowed ? CUDART_INF_F
                        : kProduct == Product::kInnerProduct      ? -sum
                        : kKeys                                   ? sum + norm[j]
                                                                  : sum;
            }
        }
    }
}

// The L2 keys of one work item on the tensor cores: 3xTF32 mma.sync (MmaTf32.cuh) with A
// the group's staged queries (-2 q) as kMTiles tiles of 16 rows (rows past the group are
// zero) and B the warp's 32 tile vectors as four n8 tiles: each B fragment, read and split
// once, feeds every query tile, so two tiles read a list half as often for 32 queries. K
// is permuted so that one 16-byte ring load feeds two k-steps: in a batch of kRingBatch
// float4 groups, lane (g, t) reads vector 8n + g's group t, and k-step j (0, 1) takes its
// component 2j as k = t and 2j + 1 as k = t + 4; the queries' fragments follow the same
// map. The sum over k is the same whatever its order, and its rounding is the 3xTF32
// GEMM's (3 d / 8 accumulation steps), which the re-rank's band takes
// (IvfKeyRerankArgs::dotRel). |x|^2 in FP32 beside it: each lane sums its groups of
// vectors 8n + g, joined across the four lanes t by shuffles.
template <int kMTiles, typename Stream>
__device__ inline void itemKeysTensor(
        const IvfListMajorArgs& a,
        const ListMajorItem& it,
        const Stream& st,
        ItemQueries& s) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    constexpr unsigned kFull = 0xffffffffu;
    static_assert(kRingBatch == 4, "a batch's groups are the lanes t of a k-step pair");
    // The staged rows hold 16 kMTiles queries in the same 8 KB.
    constexpr int kRowGroups = kStagedGroups / kMTiles;
    static_assert(kRowGroups % kRingBatch == 0, "no batch straddles two staged chunks");
    const float4* staged = &s.q[0][0];
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int warpBase = threadIdx.x - lane; // the warp's first tile vector
    const bool streams = warpHasVectors(it);
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    const float2 zero2 = make_float2(0.f, 0.f);
    float acc[kMTiles][4][4];
    float norm[4]; // this lane's part of |x|^2 of vector warpBase + 8n + g
#pragma unroll
    for (int n = 0; n < 4; ++n) {
        norm[n] = 0.f;
#pragma unroll
        for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                acc[m][n][e] = 0.f;
            }
        }
    }
    for (int c0 = 0; c0 < st.groups; c0 += kRowGroups) {
        const int cn = min(kRowGroups, st.groups - c0);
        if (c0 > 0) {
            __syncthreads(); // the previous chunk's queries are consumed
        }
        stageQueries(a, s, 16 * kMTiles, c0, cn, -2.f, kRowGroups);
        __syncthreads();
        if (!streams) {
            continue;
        }
        for (int c = 0; c < cn; c += kRingBatch) {
            const int b = (c0 + c) / kRingBatch;
            __syncwarp(); // the slots refilled below were read by every lane
            st.request(b + Stream::kBatches - 1);
            waitAsyncGroups<Stream::kBatches - 1>();
            __syncwarp(); // every lane's copies have landed
            // Groups past the vector's end were not streamed (the ring holds stale data
            // there) and past the staged chunk were not staged: zero on both sides.
            const bool inBatch = c + t < cn;
            // k-step j: components 2j (k = t) and 2j + 1 (k = t + 4) of the lane's group.
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                // A: rows g and g + 8 of each query tile, the two components of step j.
                unsigned ahi[kMTiles][4], alo[kMTiles][4];
#pragma unroll
                for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = 16 * m + 8 * h + g;
                        const float2 q = inBatch ? reinterpret_cast<const float2*>(
                                                           &staged[row * kRowGroups + c + t])[j]
                                                 : zero2;
                        splitTf32(q.x, ahi[m][h], alo[m][h]);
                        splitTf32(q.y, ahi[m][2 + h], alo[m][2 + h]);
                    }
                }
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    const float4 x =
                            inBatch ? st.group(st.batch(b, warpBase + 8 * n + g), t) : zero;
                    if (j == 0) {
                        norm[n] = fmaf(x.x, x.x, norm[n]);
                        norm[n] = fmaf(x.y, x.y, norm[n]);
                        norm[n] = fmaf(x.z, x.z, norm[n]);
                        norm[n] = fmaf(x.w, x.w, norm[n]);
                    }
                    unsigned bhi[2], blo[2];
                    splitTf32(j == 0 ? x.x : x.z, bhi[0], blo[0]);
                    splitTf32(j == 0 ? x.y : x.w, bhi[1], blo[1]);
#pragma unroll
                    for (int m = 0; m < kMTiles; ++m) {
                        // The small terms first, as the fused coarse search and CUTLASS's
                        // 3xTF32.
                        mmaTf32(acc[m][n], alo[m], bhi[0], bhi[1]);
                        mmaTf32(acc[m][n], ahi[m], blo[0], blo[1]);
                        mmaTf32(acc[m][n], ahi[m], bhi[0], bhi[1]);
                    }
                }
            }
        }
    }
    // |x|^2 of vector warpBase + 8n + g in the four lanes of g; the row maximum over the
    // warp's vectors in the tile.
    float rowNorm = 0.f;
#pragma unroll
    for (int n = 0; n < 4; ++n) {
        norm[n] += __shfl_xor_sync(kFull, norm[n], 1);
        norm[n] += __shfl_xor_sync(kFull, norm[n], 2);
        rowNorm = warpBase + 8 * n + g < it.vCount ? fmaxf(rowNorm, norm[n]) : rowNorm;
    }
    raiseRowMaxNorms(a, it, s, rowNorm);
    // This lane's accumulators: queries 16 m + g and 16 m + g + 8 (e / 2), vectors
    // 8n + 2t + e % 2.
#pragma unroll
    for (int n = 0; n < 4; ++n) {
        float vectorNorm[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            vectorNorm[e] = __shfl_sync(kFull, norm[n], (2 * t + e) * 4);
        }
#pragma unroll
        for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int v = warpBase + 8 * n + 2 * t + e % 2;
                const int i = 16 * m + g + 8 * (e / 2);
                if (v < it.vCount && i < it.gCount) {
                    const bool allowed =
                            !a.allow || idFilterAllows(a.allow, a.listBitBase[it.list] + it.v0 + v);
                    a.distances[s.out[i] + v] =
                            allowed ? acc[m][n][e] + vectorNorm[e % 2] : CUDART_INF_F;
                }
            }
        }
    }
#else
    __trap(); // the host runs the tensor-core keys only on compute capability 8.0 and up
#endif
}

// At most 85 registers a thread, so that 3 blocks (24 warps) share an SM; the ring takes
// the dynamic shared memory (Stream::kSmemBytes).
template <Product kProduct, typename Stream>
__global__ void __launch_bounds__(kThreads, 3) listMajorKernel(IvfListMajorArgs a) {
    __shared__ ItemQueries s;
    extern __shared__ float4 ring[];
    const int total = a.groups.workStart[a.nlist];
    // Items are taken from a counter as blocks free up (the first, blockIdx.x, without
    // it): items of 1 and of 16 queries cost ~8x apart, which a fixed stride left to a
    // tail of ~23% at batch 1024.
    int w = blockIdx.x;
    while (w < total) {
        // Its first barrier: the previous item is done with s (its nextItem read too).
        const ListMajorItem it = listMajorItem(a, w);
        // This thread's slots are free (it waited for and read all of them): the tile's
        // first batches go out before the rows and queries.
        const Stream st(a, it.list, it.v0 + threadIdx.x, ring);
        if (warpHasVectors(it)) {
#pragma unroll
            for (int b = 0; b < Stream::kBatches - 1; ++b) {
                st.request(b);
            }
        }
        // Every row: the tensor-core keys stage all of a tile's (zeros past the group).
        if (threadIdx.x < kMaxItemQueries) {
            const int i = threadIdx.x;
            int row = -1;
            if (i < it.gCount) {
                const int pair = a.groups.pairs[it.first + i];
                row = pair / a.nprobe;
                const int p = pair % a.nprobe;
                s.out[i] = int64_t(row) * a.ldDistances +
                        a.vectorOffsets[int64_t(row) * (a.nprobe + 1) + p] + it.v0;
            }
            s.row[i] = row;
        } else if (threadIdx.x == kThreads - 1) {
            s.nextItem = int(gridDim.x) + atomicAdd(a.groups.nextItem, 1);
        }
        __syncthreads();
        // The last group of a list probed by more than maxGroup queries may hold fewer. A
        // group of 1 or 2 (most lists of a batch with about one query a list) multiplies
        // only its own rows: the product's instructions, not its reads, bound it there.
        // Groups above kMaxG come only with the tensor-core keys (ivfListMajorDistances).
        const int group = it.gCount <= 2 ? it.gCount : listMajorGroup(it.gCount, a.groups.maxGroup);
        if (kProduct == Product::kL2Keys && Stream::kTensorKeys && a.tensorKeys &&
            group >= kTensorKeysMinGroup) {
            if (it.gCount > kMaxG) {
                itemKeysTensor<2>(a, it, st, s);
            } else {
                itemKeysTensor<1>(a, it, st, s);
            }
            w = s.nextItem;
            continue;
        }
        switch (group) {
            case 1:
                itemProducts<kProduct, 1>(a, it, st, s);
                break;
            case 2:
                itemProducts<kProduct, 2>(a, it, st, s);
                break;
            case 4:
                itemProducts<kProduct, 4>(a, it, st, s);
                break;
            case 8:
                itemProducts<kProduct, 8>(a, it, st, s);
                break;
            case 12:
                itemProducts<kProduct, 12>(a, it, st, s);
                break;
            default:
                itemProducts<kProduct, kMaxG>(a, it, st, s);
                break;
        }
        w = s.nextItem;
    }
}

unsigned blocksFor(int64_t n) {
    return unsigned((n + kThreads - 1) / kThreads);
}

/// The kernel's resident blocks an SM with its ring, its limit raised for the ring: asked
/// of the occupancy calculator once per (kernel, device), then remembered (a search
/// costs a lock and a lookup, not a driver call).
template <typename Kernel>
int listMajorBlocksPerSm(Kernel kernel, size_t smemBytes) {
    static std::mutex mutex;
    static std::map<std::pair<const void*, int>, int> known;
    int device = 0;
    FAISS_EXT_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex);
    const std::pair<const void*, int> key{reinterpret_cast<const void*>(kernel), device};
    auto it = known.find(key);
    if (it == known.end()) {
        raiseDynamicSmemLimit(kernel, smemBytes);
        int blocks = 0;
        FAISS_EXT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, kernel, kThreads, smemBytes));
        it = known.emplace(key, blocks).first;
    }
    return it->second;
}

// Persistent grid, one wave of resident blocks: the work count lives on the device (no
// host round trip).
template <typename Stream>
void launchListMajor(const IvfListMajorArgs& a, int smCount, cudaStream_t stream) {
    const auto kernel = a.innerProduct ? listMajorKernel<Product::kInnerProduct, Stream>
            : a.l2Keys                 ? listMajorKernel<Product::kL2Keys, Stream>
                                       : listMajorKernel<Product::kL2, Stream>;
    const int blocksPerSm = listMajorBlocksPerSm(kernel, Stream::kSmemBytes);
    const unsigned grid = unsigned(std::max(1, smCount) * std::max(1, blocksPerSm));
    kernel<<<grid, kThreads, Stream::kSmemBytes, stream>>>(a);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
}

} // namespace

size_t ivfGroupScratchBytes(int64_t nlist, int64_t pairs) {
    return (size_t(5) * (nlist + 1) + 1 + size_t(pairs)) * sizeof(int);
}

IvfProbeGroups ivfGroupProbesByList(
        const int64_t* coarse,
        int64_t nq,
        int nprobe,
        int64_t nlist,
        const int64_t* listLen,
        int maxGroup,
        void* scratch,
        size_t scratchBytes,
        cudaStream_t stream,
        IvfGroupPath path) {
    const int64_t pairs = nq * nprobe;
    FAISS_THROW_IF_NOT_FMT(
            pairs < INT32_MAX && nlist < INT32_MAX &&
                    scratchBytes >= ivfGroupScratchBytes(nlist, pairs),
            "ivfGroupProbesByList: %lld probes over %lld lists with %zu scratch bytes",
            (long long)pairs, (long long)nlist, scratchBytes);
    FAISS_THROW_IF_NOT_FMT(
            maxGroup == kIvfGroupMax || maxGroup == kIvfTensorKeysGroupMax,
            "ivfGroupProbesByList: groups of at most %d or %d queries (%d)", kIvfGroupMax,
            kIvfTensorKeysGroupMax, maxGroup);
    GroupScratch s = carve(scratch, nlist);
    IvfProbeGroups g;
    g.listStart = s.listStart;
    g.pairs = s.pairs;
    g.workStart = s.workStart;
    g.nextItem = s.nextItem;
    g.maxGroup = maxGroup;
    const size_t oneBlockSmem = size_t(2) * (nlist + 1) * sizeof(int);
    const bool oneBlockFits = oneBlockSmem <= kOneBlockGroupSmemBytes;
    if (path == IvfGroupPath::kAuto) {
        path = oneBlockFits && pairs <= kOneBlockGroupMaxPairs ? IvfGroupPath::kOneBlock
                                                               : IvfGroupPath::kKernels;
    }
    if (path == IvfGroupPath::kOneBlock) {
        FAISS_THROW_IF_NOT_FMT(
                oneBlockFits, "the one-block grouping takes at most %zu lists (%lld)",
                kOneBlockGroupSmemBytes / (2 * sizeof(int)) - 1, (long long)nlist);
        groupOneBlockKernel<<<1, kScanThreads, oneBlockSmem, stream>>>(
                coarse, pairs, nlist, listLen, maxGroup, s.listStart, s.workStart, s.nextItem,
                s.pairs);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
        return g;
    }
    FAISS_EXT_CUDA_CHECK(cudaMemsetAsync(s.counts, 0, size_t(nlist + 1) * sizeof(int), stream));
    if (pairs > 0) {
        countProbesKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(coarse, pairs, s.counts);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
    exclusiveScanKernel<<<1, kScanThreads, 0, stream>>>(s.counts, nlist + 1, s.listStart);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    listWorkKernel<<<blocksFor(nlist + 1), kThreads, 0, stream>>>(
            s.counts, s.listStart, listLen, nlist, maxGroup, s.work, s.cursor, s.nextItem);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    exclusiveScanKernel<<<1, kScanThreads, 0, stream>>>(s.work, nlist + 1, s.workStart);
    FAISS_EXT_CUDA_CHECK_LAUNCH();
    if (pairs > 0) {
        scatterProbesKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(
                coarse, pairs, s.cursor, s.pairs);
        FAISS_EXT_CUDA_CHECK_LAUNCH();
    }
    return g;
}

void ivfListMajorDistances(const IvfListMajorArgs& a, int smCount, cudaStream_t stream) {
    FAISS_THROW_IF_NOT_MSG(
            !a.tensorKeys || (a.l2Keys && !a.innerProduct && a.listBytes == nullptr),
            "ivfListMajorDistances: the tensor-core keys are L2 keys of float lists");
    FAISS_THROW_IF_NOT_FMT(
            a.groups.maxGroup == kIvfGroupMax || a.tensorKeys,
            "ivfListMajorDistances: groups of %d queries need the tensor-core keys",
            a.groups.maxGroup);
    if (a.nq == 0) {
        return;
    }
    if (a.listBytes) {
        launchListMajor<ByteStream>(a, smCount, stream);
    } else {
        launchListMajor<FloatStream>(a, smCount, stream);
    }
}

} // namespace kernels
} // namespace faiss_ext
