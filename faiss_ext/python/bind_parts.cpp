// GpuIndexShards and GpuIndexReplicas (several GPUs through faiss::IndexShards /
// IndexReplicas), numpy in and out.
#include <memory>
#include <mutex>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/gpu_multiple.h>

#include "bind.h"
#include "faiss_bytes.h"
#include "numpy_util.h"

namespace faiss_ext {
namespace python {

namespace {

/// A wrapper as the module holds it: the index and the lock that serialises its calls
/// (the GIL is released during them).
template <typename Wrapper>
struct PyParts {
    std::unique_ptr<Wrapper> index;
    std::mutex mutex;
};

/// Releases the GIL, then holds the wrapper's lock, for one call.
class PartsCall {
   public:
    explicit PartsCall(std::mutex& m) : lock_(m) {}

   private:
    py::gil_scoped_release noGil_;
    std::lock_guard<std::mutex> lock_;
};

GpuPartsConfig partsConfig(const std::vector<int>& devices, bool threaded, size_t tempMemoryBytes) {
    GpuPartsConfig c;
    c.devices = devices;
    c.threaded = threaded;
    c.tempMemoryBytes = tempMemoryBytes;
    return c;
}

template <typename Wrapper>
std::unique_ptr<PyParts<Wrapper>> make(const GpuPartsConfig& parts, const GpuPartFactory& f) {
    auto p = std::make_unique<PyParts<Wrapper>>();
    py::gil_scoped_release noGil;
    p->index = std::make_unique<Wrapper>(parts, f);
    return p;
}

template <typename Wrapper>
void bindParts(py::module_& m, const char* name, const char* doc) {
    using P = PyParts<Wrapper>;
    const auto devices = py::arg("devices");
    py::class_<P>(m, name, doc)
            .def_static(
                    "flat",
                    [](const std::vector<int>& devices, int d, int metric, bool threaded,
                       size_t temp) {
                        return make<Wrapper>(
                                partsConfig(devices, threaded, temp),
                                flatParts(d, checkMetric(metric)));
                    },
                    devices, py::arg("d"), py::arg("metric") = int(faiss::METRIC_L2), py::kw_only(),
                    py::arg("threaded") = true,
                    py::arg("temp_memory_bytes") = GpuPartsConfig().tempMemoryBytes,
                    "Empty GpuIndexFlat parts, one per entry of devices.")
            .def_static(
                    "ivf_flat",
                    [](const std::vector<int>& devices, int d, int64_t nlist, int metric,
                       size_t nprobe, bool threaded, size_t temp) {
                        GpuPartFactory ivf = ivfFlatParts(d, nlist, checkMetric(metric));
                        return make<Wrapper>(
                                partsConfig(devices, threaded, temp),
                                [ivf, nprobe](GpuResources& res, int part) {
                                    auto index = ivf(res, part);
                                    static_cast<GpuIndexIVFFlat&>(*index).nprobe = nprobe;
                                    return index;
                                });
                    },
                    devices, py::arg("d"), py::arg("nlist"),
                    py::arg("metric") = int(faiss::METRIC_L2), py::kw_only(), py::arg("nprobe") = 1,
                    py::arg("threaded") = true,
                    py::arg("temp_memory_bytes") = GpuPartsConfig().tempMemoryBytes,
                    "Empty GpuIndexIVFFlat parts; train() runs one k-means whose centroids "
                    "every part shares.")
            .def_static(
                    "bang",
                    [](const std::vector<int>& devices, int d, int metric, int searchL,
                       bool threaded, size_t temp) {
                        GpuPartFactory bang = bangParts(d, checkMetric(metric));
                        return make<Wrapper>(
                                partsConfig(devices, threaded, temp),
                                [bang, searchL](GpuResources& res, int part) {
                                    auto index = bang(res, part);
                                    static_cast<GpuIndexBang&>(*index).search_L = searchL;
                                    return index;
                                });
                    },
                    devices, py::arg("d"), py::arg("metric") = int(faiss::METRIC_L2), py::kw_only(),
                    py::arg("search_L") = 64, py::arg("threaded") = true,
                    py::arg("temp_memory_bytes") = GpuPartsConfig().tempMemoryBytes,
                    "Empty GpuIndexBang parts (default build); each builds its own graph.")
            .def_property_readonly("d", [](const P& p) { return p.index->d; })
            .def_property_readonly("ntotal", [](const P& p) { return p.index->ntotal; })
            .def_property_readonly(
                    "metric_type", [](const P& p) { return int(p.index->metric_type); })
            .def_property_readonly("is_trained", [](const P& p) { return p.index->is_trained; })
            .def_property_readonly("count", [](const P& p) { return p.index->count(); })
            .def_property_readonly(
                    "devices", [](const P& p) { return p.index->partsConfig().devices; })
            .def(
                    "train",
                    [](P& p, py::handle x) {
                        FloatMatrix v = checkVectors(x, p.index->d, "train");
                        PartsCall call(p.mutex);
                        p.index->train(v.shape(0), v.data());
                    },
                    py::arg("x"))
            .def(
                    "add",
                    [](P& p, py::handle x) {
                        FloatMatrix v = checkVectors(x, p.index->d, "add");
                        PartsCall call(p.mutex);
                        p.index->add(v.shape(0), v.data());
                    },
                    py::arg("x"))
            .def(
                    "add_with_ids",
                    [](P& p, py::handle x, py::handle ids) {
                        FloatMatrix v = checkVectors(x, p.index->d, "add_with_ids");
                        IdVector i = checkIds(ids, v.shape(0), "add_with_ids");
                        PartsCall call(p.mutex);
                        p.index->add_with_ids(v.shape(0), v.data(), i.data());
                    },
                    py::arg("x"), py::arg("ids"))
            .def(
                    "search",
                    [](P& p, py::handle x, int64_t k) {
                        checkK(k);
                        FloatMatrix q = checkVectors(x, p.index->d, "search");
                        const int64_t n = q.shape(0);
                        py::array_t<float> D({n, k});
                        py::array_t<int64_t> I({n, k});
                        float* dp = D.mutable_data();
                        int64_t* ip = I.mutable_data();
                        if (n > 0) {
                            PartsCall call(p.mutex);
                            p.index->search(n, q.data(), k, dp, ip);
                        }
                        return py::make_tuple(D, I);
                    },
                    py::arg("x"), py::arg("k"), "(distances, labels), each (n, k), as faiss.")
            .def("reset", [](P& p) {
                PartsCall call(p.mutex);
                p.index->reset();
            });
}

template <typename Wrapper, typename Copy>
void bindCopy(py::module_& m, const char* name, Copy copy, const char* doc) {
    m.def(
            name,
            [copy](py::handle index, const std::vector<int>& devices, bool threaded, size_t temp) {
                py::object bytes = py::module_::import("faiss").attr("serialize_index")(index);
                std::vector<uint8_t> data = serializedBytes(bytes);
                auto p = std::make_unique<PyParts<Wrapper>>();
                py::gil_scoped_release noGil;
                std::unique_ptr<faiss::Index> cpu = readFaissIndex(data);
                p->index = copy(cpu.get(), partsConfig(devices, threaded, temp), GpuCopyConfigs());
                return p;
            },
            py::arg("index"), py::arg("devices"), py::kw_only(), py::arg("threaded") = true,
            py::arg("temp_memory_bytes") = GpuPartsConfig().tempMemoryBytes, doc);
}

} // namespace

void bindParts(py::module_& m) {
    bindParts<GpuIndexShards>(
            m, "GpuIndexShards",
            "A data set split over several GPU indexes (faiss.IndexShards): one part per "
            "entry of devices (a device may repeat). Flat and Bang shards number vectors "
            "0 .. ntotal - 1 and are filled by one add(); IVF shards keep add_with_ids ids.");
    bindParts<GpuIndexReplicas>(
            m, "GpuIndexReplicas",
            "The same data on several GPU indexes (faiss.IndexReplicas); a search's queries "
            "are split over them.");
    bindCopy<GpuIndexShards>(
            m, "index_cpu_to_gpu_shards", &index_cpu_to_gpu_shards,
            "A faiss.IndexFlat or trained faiss.IndexIVFFlat split over one shard per "
            "device (IVF: every shard has the centroids and a slice of each list, ids kept).");
    bindCopy<GpuIndexReplicas>(
            m, "index_cpu_to_gpu_replicas", &index_cpu_to_gpu_replicas,
            "A faiss.IndexFlat or trained faiss.IndexIVFFlat copied whole to every device.");
}

} // namespace python
} // namespace faiss_ext
