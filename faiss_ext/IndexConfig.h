// The configuration of every faiss_ext index: plain aggregates with their defaults,
// passed by value to the index constructors and kept whole by write_index /
// read_index. Also read by impl/ (the graph build, the search plans, the file format),
// so this header includes nothing of the library. docs/TUNING.md says what each knob
// trades.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faiss_ext {

/// What every index takes.
struct GpuIndexConfig {
    /// Host queries are copied to the device in pages of at most this many bytes
    /// (queries plus results), so that a search of any size needs bounded memory;
    /// adds stage their vectors the same way. At least 1 MiB.
    size_t pageBytes = size_t(256) << 20;
};

/// How GpuIndexFlat computes the query-base products.
enum class GpuFlatPrecision {
    /// Results that match FAISS CPU's to 1e-4. Batches of at least 256 queries over a
    /// large base take the threshold path (impl/FlatThresholdSearch.h): bf16x3 products
    /// on tensor cores (each operand split into three bf16 parts; 3xTF32 on devices
    /// before compute capability 8.0), kept only under a
    /// bound from a sample of the base plus a proven margin for their rounding, then
    /// re-ranked in FP32 (1M x 128, 10000 queries, k 10: ~44 ms against 116 for FP32
    /// alone; benchs/NOTES.md). Other searches: FP32 GEMM
    kAuto,
    /// FP32 GEMM on CUDA cores everywhere (the threshold path too)
    kFloat32,
    /// 3xTF32 on tensor cores everywhere (the threshold path's main pass too): each
    /// operand split into a TF32 part and its FP32 remainder, one TF32 GEMM over the
    /// three cross products that matter. On the threshold path its results are FP32's
    /// (re-ranked); elsewhere the tensor cores'
    /// truncating accumulation leaves a dot product with a relative error up to about
    /// (3d / 8) 2^-23, one-sided: where near neighbours are much closer to each other
    /// than to the origin (tight clusters far from 0), distances can differ from FP32's
    /// beyond 1e-4 and near ties reorder
    kTF32x3,
};

struct GpuIndexFlatConfig : GpuIndexConfig {
    /// The product's precision (see GpuFlatPrecision).
    GpuFlatPrecision precision = GpuFlatPrecision::kAuto;
    /// Also keep a float16 copy of the vectors on the device (+50% of the vectors' bytes:
    /// d rounded up to a multiple of 8 halves and a scale a vector). With kAuto, one
    /// query against at least 65536 vectors then reads the copy (half the bytes of the
    /// base, which is nearly all of such a search) and re-ranks in FP32 the vectors its
    /// proven error bound cannot rule out: the same exact results, about twice as fast
    /// where the base is large (impl/FlatRadixSearch.h). Other searches, and
    /// reconstruct, copyTo and save, use the FP32 vectors.
    bool float16Copy = false;
    /// As float16Copy with an int8 copy instead (+25% of the vectors' bytes: d rounded up
    /// to 16 bytes and a scale a vector): a quarter of the base's bytes read, each row
    /// at ~0.5-1% of its norm (its largest magnitude over 127), so more ids to re-rank
    /// (the same exact results). At most one of the two.
    bool int8Copy = false;
};

/// How GpuIndexIVFFlat's merge stage reduces each query's nprobe x chunks x k
/// candidates to its top k.
enum class IvfMergePath {
    /// heap for k <= 32 (a warp a query); above, fast when its shared memory fits the
    /// device's per-block limit and a query has at most 1024 candidates, else heap
    kAuto,
    /// stage the whole candidate row in shared memory and sort it once; a search whose
    /// row does not fit is refused
    kFast,
    /// streaming selection over the row in global memory (shared memory for k only)
    kHeap,
};

/// Which list scan GpuIndexIVFFlat runs. All give the same results: the same FP32
/// distances, bit for bit, and the same ids except which of exactly tied ones.
enum class IvfScanPath {
    /// list-major when a tile of queries shares lists (on average at least
    /// 0.75 sqrt(128 / max(d, 128)) queries per non-empty list), else per-query; the
    /// list-major scan with keys for L2 at k <= 32 from d = 256, batch 1024 and 2048
    /// probed vectors a query (nprobe x the mean list length); chosen per search by the
    /// planner
    kAuto,
    /// one block per (query, chunk of a probed list): each query reads its lists
    kPerQuery,
    /// probes grouped by list on the device, one FP32 product per (list tile, group of
    /// 16-64 of its queries) into a distance buffer, then a warp (k <= 256) or block selection
    /// per (query, chunk) over it: each list tile is read once per group of queries
    kListMajor,
    /// kListMajor whose product writes L2 keys |x|^2 - 2 q.x (one FP32 instruction a
    /// component instead of two), then re-ranks by the exact distance every vector whose
    /// key is within the keys' error bound of the query's k-th; for inner product or
    /// k > 32 it runs kListMajor
    kListMajorKeys,
};

struct GpuIndexIVFFlatConfig : GpuIndexConfig {
    /// The merge stage's path (see IvfMergePath).
    IvfMergePath mergePath = IvfMergePath::kAuto;
    /// The list scan's path (see IvfScanPath).
    IvfScanPath scanPath = IvfScanPath::kAuto;
    /// Vectors one list-scan block reads (a multiple of 32, at most 2^30); longer
    /// lists are split into chunks of this size (list-major scan: the windows of a
    /// query's distance row each warp selects over). 0: chosen per search from the
    /// batch shape, k and the device (list-major: 2048 columns; above k = 32 up to
    /// 65536, longer for larger batches).
    int64_t listChunkVectors = 0;
};

/// How GpuIndexBang::add builds its graph (DiskANN's Vamana; impl/BangBuild.h).
struct BangBuildConfig {
    /// R: most neighbours per vector, in [1, 128]. Each search iteration reads the R
    /// neighbours of one vector.
    int graphDegree = 64;
    /// RobustPrune's alpha, in [1, 1e6] (larger keeps more long edges).
    float alpha = 1.2f;
    /// Nearest neighbours of each vector in the first graph's candidates, in [1, 1024].
    int candidates = 64;
    /// Where those neighbours come from. 0: an exact k-NN search of every vector against
    /// all (n^2 d work: ~6 s at 1M x 128 on an H100). > 0: that many IVF lists (k-means
    /// on the GPU), each vector's neighbours searched exactly in its candidateProbes
    /// nearest lists, a GEMM per list (impl/IvfSelfKnn.h): approximate, n^1.5 d work
    /// (~1 s at 1M). -1 (default):
    /// exact below kBangIvfCandidatesFrom vectors, else IVF with sqrt(n) lists. At most
    /// n lists are used.
    int64_t candidateLists = -1;
    /// Lists probed per vector when the candidates come from IVF lists, in [1, 2048].
    /// 4: the same recall as 8 on SIFT 1M and on 4M and 10M x 128 blobs, with the k-NN
    /// stage ~35% shorter at 10M (benchs/NOTES.md, twenty-eighth session); the
    /// refinement passes find what fewer probes miss.
    int candidateProbes = 4;
    /// Evenly spaced hub vectors linked into the first graph (0: 4 sqrt(ntotal)).
    int64_t hubs = 0;
    /// Vamana refinement passes after the first graph, in [0, 16].
    int passes = 2;
    /// Worklist of the refinement passes' searches, in [1, 1024].
    int searchL = 64;
};

/// Where each query's walk in GpuIndexBang starts (SearchParametersBang::entry).
enum class BangEntry {
    /// The graph's entry point (the medoid), for every query: BANG's own start.
    kMedoid,
    /// The default: each query's nearest of 8 sqrt(n) evenly spaced stored vectors (twice
    /// the build's default hubs), found by an exact search of the batch against them
    /// before the walk (nq x 8 sqrt(n) x d multiply-adds). On data of many well separated
    /// clusters a walk from the medoid never leaves the medoid's cluster (500K x 768
    /// blobs: recall@10 0.002-0.02 from the medoid, 0.94-0.99 from the nearest hub); on
    /// other data the walks start nearer their answers, for a higher recall at every L.
    kNearestHub,
};

/// Where GpuIndexBang keeps its full vectors once the graph is built
/// (GpuIndexBangConfig::vectorPlacement).
enum class BangVectorPlacement {
    /// In device memory (default): every search distance can be exact.
    kDevice,
    /// In page-locked host memory that the search kernel reads over the bus (BANG's own
    /// placement): PQ mode only, where a search reads full vectors only for its final
    /// re-rank (L rows a query). The graph, the PQ codes and the entry hubs' rows stay
    /// on the device. The add that builds or extends the graph still holds every
    /// vector on the device while it builds (the next add uploads them again), and is
    /// refused before it builds when the host's available memory (MemAvailable) is
    /// below the rows' bytes.
    kHost,
};

/// How GpuIndexBang stores its full vectors on the device
/// (GpuIndexBangConfig::vectorStorage). Bytes hold vectors whose every component is an
/// integer in [0, 255] (SIFT and its kind) in a quarter of the memory; every kernel reads
/// a byte as the float it stands for, so the graph, the distances and the results are
/// exactly those of the same vectors stored as floats. Exact mode with METRIC_L2 only:
/// PQ mode and inner product store floats.
enum class BangVectorStorage {
    /// As bytes when every component of every vector is an integer in [0, 255], else as
    /// floats (default).
    kAuto,
    /// As floats.
    kFloat,
    /// As bytes: add refuses vectors with a component that is not an integer in
    /// [0, 255].
    kBytes,
};

struct GpuIndexBangConfig : GpuIndexConfig {
    /// The graph build.
    BangBuildConfig build;
    /// BANG's PQ mode: M sub-quantizers of 8 bits each (faiss::ProductQuantizer,
    /// trained by the add that builds the graph on up to 65536 evenly spaced stored
    /// vectors with k-means on the GPU; an add that extends the graph encodes its
    /// vectors with them; impl/BangPq.h). The search walks the graph with ADC distances from the
    /// codes (M bytes per vector) and a per-query table in shared memory (M KiB), then
    /// re-ranks its final worklist with exact distances from the full vectors (on the
    /// GPU, or in host memory: vectorPlacement). The graph is built with exact distances either
    /// way. 0: exact distances throughout (default); else in [1, 128], dividing d, and add needs at
    /// least 256 vectors in all.
    int pqSubquantizers = 0;
    /// Where the full vectors live between adds (BangVectorPlacement); kHost needs PQ
    /// mode. GpuIndexBang::deviceMemoryBytes and hostMemoryBytes say where the bytes are.
    BangVectorPlacement vectorPlacement = BangVectorPlacement::kDevice;
    /// Floats or bytes on the device (BangVectorStorage); kBytes needs exact mode and
    /// METRIC_L2, kAuto gives floats outside them.
    BangVectorStorage vectorStorage = BangVectorStorage::kAuto;
};

} // namespace faiss_ext
