// Sharded and replicated faiss_ext indexes from a configuration or from a CPU faiss
// index, as faiss::gpu::index_cpu_to_gpu_multiple builds FAISS's.
#pragma once

#include <cstdint>
#include <memory>

#include <faiss/Index.h>

#include <faiss_ext/GpuIndexParts.h>
#include <faiss_ext/GpuIndexReplicas.h>
#include <faiss_ext/GpuIndexShards.h>
#include <faiss_ext/IndexConfig.h>

namespace faiss_ext {

/// Factories of empty parts, for the GpuIndexShards / GpuIndexReplicas constructors:
/// the wrapper then trains (IVF: one k-means, the centroids shared) and adds (Bang:
/// each shard builds the graph of its own slice).
GpuPartFactory flatParts(
        int d,
        faiss::MetricType metric = faiss::METRIC_L2,
        GpuIndexFlatConfig config = GpuIndexFlatConfig());
GpuPartFactory ivfFlatParts(
        int d,
        int64_t nlist,
        faiss::MetricType metric = faiss::METRIC_L2,
        GpuIndexIVFFlatConfig config = GpuIndexIVFFlatConfig());
GpuPartFactory bangParts(
        int d,
        faiss::MetricType metric = faiss::METRIC_L2,
        GpuIndexBangConfig config = GpuIndexBangConfig());

/// The configurations of the GPU copies of a CPU index, one per CPU type.
struct GpuCopyConfigs {
    GpuIndexFlatConfig flat;
    GpuIndexIVFFlatConfig ivfFlat;
};

/// The CPU index (faiss::IndexFlat or a trained faiss::IndexIVFFlat with an IndexFlat
/// quantizer) split over one shard per part: IndexFlat shard i gets the i-th contiguous
/// slice of the vectors (search returns the CPU ids); every IndexIVFFlat shard gets the
/// CPU centroids and, of each inverted list, its i-th slice with its ids. Throws for
/// other index types before any device is touched.
std::unique_ptr<GpuIndexShards> index_cpu_to_gpu_shards(
        const faiss::Index* index,
        const GpuPartsConfig& parts,
        const GpuCopyConfigs& configs = GpuCopyConfigs());

/// A whole copy of the CPU index (as index_cpu_to_gpu_shards accepts) on every part.
std::unique_ptr<GpuIndexReplicas> index_cpu_to_gpu_replicas(
        const faiss::Index* index,
        const GpuPartsConfig& parts,
        const GpuCopyConfigs& configs = GpuCopyConfigs());

} // namespace faiss_ext
