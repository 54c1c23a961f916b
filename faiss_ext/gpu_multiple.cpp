#include <faiss_ext/gpu_multiple.h>

#include <vector>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/FaissAssert.h>
#include <faiss/invlists/InvertedLists.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>

namespace faiss_ext {

namespace {

/// The CPU index as one of the two types that can be copied (the other pointer null);
/// throws for anything else.
struct CpuSource {
    const faiss::IndexFlat* flat = nullptr;
    const faiss::IndexIVFFlat* ivf = nullptr;
};

CpuSource cpuSource(const faiss::Index* index) {
    FAISS_THROW_IF_NOT_MSG(index != nullptr, "index_cpu_to_gpu_multiple: null index");
    CpuSource s;
    s.flat = dynamic_cast<const faiss::IndexFlat*>(index);
    s.ivf = dynamic_cast<const faiss::IndexIVFFlat*>(index);
    FAISS_THROW_IF_NOT_MSG(
            s.flat != nullptr || s.ivf != nullptr,
            "index_cpu_to_gpu_multiple: only faiss::IndexFlat and faiss::IndexIVFFlat can "
            "be copied to sharded or replicated faiss_ext indexes");
    if (s.ivf != nullptr) {
        FAISS_THROW_IF_NOT_MSG(
                s.ivf->is_trained, "index_cpu_to_gpu_multiple: the IndexIVFFlat is not trained");
        FAISS_THROW_IF_NOT_MSG(
                dynamic_cast<const faiss::IndexFlat*>(s.ivf->quantizer) != nullptr,
                "index_cpu_to_gpu_multiple: the IndexIVFFlat's quantizer is not a "
                "faiss::IndexFlat");
    }
    return s;
}

/// First of part `part`'s slice of n items split over `parts` (the next part's first
/// ends it).
int64_t sliceBegin(int64_t n, int part, int parts) {
    return n * part / parts;
}

/// Shard `part` of an IVF index: the CPU centroids, and of each list its slice.
std::unique_ptr<GpuIndex> ivfShard(
        GpuResources& res,
        const faiss::IndexIVFFlat& cpu,
        int part,
        int parts,
        const GpuIndexIVFFlatConfig& config) {
    auto gpu = std::make_unique<GpuIndexIVFFlat>(res, cpu.d, cpu.nlist, cpu.metric_type, config);
    gpu->setQuantizer(dynamic_cast<const faiss::IndexFlat*>(cpu.quantizer));
    gpu->nprobe = cpu.nprobe;
    std::vector<float> x;
    std::vector<int64_t> listNos;
    std::vector<int64_t> ids;
    for (size_t list = 0; list < cpu.nlist; ++list) {
        const int64_t len = int64_t(cpu.invlists->list_size(list));
        const int64_t i0 = sliceBegin(len, part, parts);
        const int64_t i1 = sliceBegin(len, part + 1, parts);
        if (i1 == i0) {
            continue;
        }
        faiss::InvertedLists::ScopedCodes codes(cpu.invlists, list);
        faiss::InvertedLists::ScopedIds listIds(cpu.invlists, list);
        const auto* vectors = reinterpret_cast<const float*>(codes.get());
        x.insert(x.end(), vectors + i0 * cpu.d, vectors + i1 * cpu.d);
        listNos.insert(listNos.end(), size_t(i1 - i0), int64_t(list));
        ids.insert(ids.end(), listIds.get() + i0, listIds.get() + i1);
    }
    if (!ids.empty()) {
        gpu->addPreassigned(int64_t(ids.size()), x.data(), listNos.data(), ids.data());
    }
    return gpu;
}

} // namespace

GpuPartFactory flatParts(int d, faiss::MetricType metric, GpuIndexFlatConfig config) {
    return [=](GpuResources& res, int) {
        return std::make_unique<GpuIndexFlat>(res, d, metric, config);
    };
}

GpuPartFactory ivfFlatParts(
        int d,
        int64_t nlist,
        faiss::MetricType metric,
        GpuIndexIVFFlatConfig config) {
    return [=](GpuResources& res, int) {
        return std::make_unique<GpuIndexIVFFlat>(res, d, nlist, metric, config);
    };
}

GpuPartFactory bangParts(int d, faiss::MetricType metric, GpuIndexBangConfig config) {
    return [=](GpuResources& res, int) {
        return std::make_unique<GpuIndexBang>(res, d, metric, config);
    };
}

std::unique_ptr<GpuIndexShards> index_cpu_to_gpu_shards(
        const faiss::Index* index,
        const GpuPartsConfig& parts,
        const GpuCopyConfigs& configs) {
    const CpuSource cpu = cpuSource(index);
    const int count = int(parts.devices.size());
    GpuPartFactory make;
    if (cpu.flat != nullptr) {
        make = [&](GpuResources& res, int part) {
            auto gpu = std::make_unique<GpuIndexFlat>(
                    res, cpu.flat->d, cpu.flat->metric_type, configs.flat);
            const int64_t i0 = sliceBegin(cpu.flat->ntotal, part, count);
            const int64_t i1 = sliceBegin(cpu.flat->ntotal, part + 1, count);
            if (i1 > i0) {
                gpu->add(i1 - i0, cpu.flat->get_xb() + i0 * cpu.flat->d);
            }
            return gpu;
        };
    } else {
        make = [&](GpuResources& res, int part) {
            return ivfShard(res, *cpu.ivf, part, count, configs.ivfFlat);
        };
    }
    return std::make_unique<GpuIndexShards>(parts, make);
}

std::unique_ptr<GpuIndexReplicas> index_cpu_to_gpu_replicas(
        const faiss::Index* index,
        const GpuPartsConfig& parts,
        const GpuCopyConfigs& configs) {
    const CpuSource cpu = cpuSource(index);
    GpuPartFactory make;
    if (cpu.flat != nullptr) {
        make = [&](GpuResources& res, int) -> std::unique_ptr<GpuIndex> {
            return std::make_unique<GpuIndexFlat>(res, cpu.flat, configs.flat);
        };
    } else {
        make = [&](GpuResources& res, int) -> std::unique_ptr<GpuIndex> {
            return std::make_unique<GpuIndexIVFFlat>(res, cpu.ivf, configs.ivfFlat);
        };
    }
    return std::make_unique<GpuIndexReplicas>(parts, make);
}

} // namespace faiss_ext
