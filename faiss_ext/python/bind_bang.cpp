#include <memory>
#include <string>

#include <faiss_ext/GpuIndexBang.h>

#include "bind.h"
#include "numpy_util.h"
#include "resources.h"
#include "selectors.h"

namespace faiss_ext {
namespace python {

namespace {

BangEntry entryFromName(const std::string& name) {
    if (name == "medoid") {
        return BangEntry::kMedoid;
    }
    if (name == "nearest_hub") {
        return BangEntry::kNearestHub;
    }
    throw py::value_error("entry='" + name + "': use 'medoid' or 'nearest_hub'");
}

std::string entryName(BangEntry entry) {
    return entry == BangEntry::kNearestHub ? "nearest_hub" : "medoid";
}

BangVectorPlacement placementFromName(const std::string& name) {
    if (name == "device") {
        return BangVectorPlacement::kDevice;
    }
    if (name == "host") {
        return BangVectorPlacement::kHost;
    }
    throw py::value_error("vector_placement='" + name + "': use 'device' or 'host'");
}

std::string placementName(BangVectorPlacement placement) {
    return placement == BangVectorPlacement::kHost ? "host" : "device";
}

BangVectorStorage storageFromName(const std::string& name) {
    if (name == "auto") {
        return BangVectorStorage::kAuto;
    }
    if (name == "float") {
        return BangVectorStorage::kFloat;
    }
    if (name == "bytes") {
        return BangVectorStorage::kBytes;
    }
    throw py::value_error("vector_storage='" + name + "': use 'auto', 'float' or 'bytes'");
}

std::string storageName(BangVectorStorage storage) {
    return storage == BangVectorStorage::kFloat    ? "float"
            : storage == BangVectorStorage::kBytes ? "bytes"
                                                   : "auto";
}

} // namespace

void bindBang(py::module_& m) {
    py::class_<SearchParametersBang, faiss::SearchParameters>(
            m, "SearchParametersBang",
            "Per-call parameters of GpuIndexBang.search: search_L (worklist size; "
            "raised to k when smaller); entry ('nearest_hub', the default: each walk starts at "
            "its query's nearest of 8 sqrt(n) evenly spaced stored vectors; 'medoid': every "
            "walk starts at the graph's entry point).")
            .def(py::init([](int searchL, faiss::IDSelector* sel, const std::string& entry) {
                     auto params = std::make_unique<SearchParametersBang>();
                     params->search_L = searchL;
                     params->sel = sel;
                     params->entry = entryFromName(entry);
                     return params;
                 }),
                 py::arg("search_L") = SearchParametersBang().search_L, py::arg("sel") = nullptr,
                 py::arg("entry") = entryName(SearchParametersBang().entry), py::keep_alive<1, 3>())
            .def_readwrite("search_L", &SearchParametersBang::search_L)
            .def_property(
                    "entry", [](const SearchParametersBang& p) { return entryName(p.entry); },
                    [](SearchParametersBang& p, const std::string& name) {
                        p.entry = entryFromName(name);
                    });

    py::class_<GpuIndexBang, GpuIndex>(
            m, "GpuIndexBang",
            "BANG graph index on the GPU (L2, or metric=METRIC_INNER_PRODUCT by the "
            "MIPS-to-L2 transform): the first add() builds a Vamana graph of "
            "degree R (its first candidates come from an exact k-NN below 200,000 vectors "
            "and from sqrt(n) IVF lists, build_probes of them searched a vector, above, or "
            "build_lists lists when given, 0 for exact); a later add() extends it (after "
            "remove_ids it rebuilds); "
            "search walks it with a worklist of search_L entries (or "
            "SearchParametersBang(search_L=...) per call). pq_subquantizers=M > 0: BANG's "
            "PQ mode (M 8-bit sub-quantizers, M divides d, trained when the graph is built; "
            "the search walks "
            "with ADC distances and re-ranks its final worklist exactly); "
            "vector_placement='host' (PQ mode only) keeps the full vectors in page-locked "
            "host memory, which the re-rank reads over the bus. vector_storage: 'auto' "
            "(default) stores vectors whose every component is an integer in [0, 255] as "
            "bytes (exact mode, L2: the same results in a quarter of the memory), 'float' "
            "always floats, 'bytes' refuses other values.")
            .def(py::init([](PyGpuResources& res, int d, int R, int metric, float alpha,
                             int buildCandidates, int buildPasses, int buildL, int64_t buildLists,
                             int buildProbes, int searchL, size_t pageBytes, int pqSubquantizers,
                             const std::string& vectorPlacement, const std::string& vectorStorage) {
                     GpuIndexBangConfig config;
                     config.build.graphDegree = R;
                     config.build.alpha = alpha;
                     config.build.candidates = buildCandidates;
                     config.build.passes = buildPasses;
                     config.build.searchL = buildL;
                     config.build.candidateLists = buildLists;
                     config.build.candidateProbes = buildProbes;
                     config.pageBytes = pageBytes;
                     config.pqSubquantizers = pqSubquantizers;
                     config.vectorPlacement = placementFromName(vectorPlacement);
                     config.vectorStorage = storageFromName(vectorStorage);
                     DeviceCall call(res);
                     auto index =
                             std::make_unique<GpuIndexBang>(res, d, checkMetric(metric), config);
                     index->search_L = searchL;
                     return index;
                 }),
                 py::arg("res"), py::arg("d"), py::arg("R") = BangBuildConfig().graphDegree,
                 py::kw_only(), py::arg("metric") = int(faiss::METRIC_L2),
                 py::arg("alpha") = BangBuildConfig().alpha,
                 py::arg("build_candidates") = BangBuildConfig().candidates,
                 py::arg("build_passes") = BangBuildConfig().passes,
                 py::arg("build_L") = BangBuildConfig().searchL,
                 py::arg("build_lists") = BangBuildConfig().candidateLists,
                 py::arg("build_probes") = BangBuildConfig().candidateProbes,
                 py::arg("search_L") = 64, py::arg("page_bytes") = GpuIndexBangConfig().pageBytes,
                 py::arg("pq_subquantizers") = GpuIndexBangConfig().pqSubquantizers,
                 py::arg("vector_placement") = placementName(GpuIndexBangConfig().vectorPlacement),
                 py::arg("vector_storage") = storageName(GpuIndexBangConfig().vectorStorage),
                 py::keep_alive<1, 2>())
            .def_readwrite(
                    "search_L", &GpuIndexBang::search_L,
                    "Worklist size when search gets no params.")
            .def_property_readonly("R", &GpuIndexBang::graphDegree)
            .def_property_readonly("entry_point", &GpuIndexBang::entryPoint)
            .def_property_readonly(
                    "pq_subquantizers",
                    [](const GpuIndexBang& index) { return index.bangConfig().pqSubquantizers; },
                    "PQ mode's sub-quantizers M (0: exact distances).")
            .def_property_readonly(
                    "vector_placement",
                    [](const GpuIndexBang& index) {
                        return placementName(index.bangConfig().vectorPlacement);
                    },
                    "Where the full vectors live: 'device' or 'host'.")
            .def_property_readonly(
                    "vector_storage",
                    [](const GpuIndexBang& index) {
                        return storageName(index.bangConfig().vectorStorage);
                    },
                    "How the device rows are stored: 'auto', 'float' or 'bytes'.")
            .def_property_readonly(
                    "stores_bytes", &GpuIndexBang::storesBytes,
                    "Whether the vectors are stored as bytes now.")
            .def(
                    "estimate_memory",
                    [](const GpuIndexBang& index, int64_t n) {
                        const BangMemoryEstimate e = GpuIndexBang::estimateMemory(
                                n, index.d, index.metric_type, index.bangConfig(),
                                index.resources().config());
                        py::dict out;
                        out["device_bytes"] = e.deviceBytes;
                        out["host_bytes"] = e.hostBytes;
                        out["build_device_bytes"] = e.buildDeviceBytes;
                        out["build_host_bytes"] = e.buildHostBytes;
                        return out;
                    },
                    py::arg("n"),
                    "Memory of this index's configuration holding n vectors "
                    "(GpuIndexBang::estimateMemory): device_bytes and host_bytes once built, "
                    "build_device_bytes and build_host_bytes at the peak of the add that "
                    "builds it (an upper bound; temporaries at their caps).")
            .def(
                    "host_memory_bytes",
                    [](const GpuIndexBang& index) { return index.hostMemoryBytes(); },
                    "Page-locked host memory the index holds (its vectors under "
                    "vector_placement='host', else 0).")
            .def(
                    "graph",
                    [](const GpuIndexBang& index) {
                        std::vector<int32_t> g;
                        {
                            DeviceCall call(index);
                            g = index.graph();
                        }
                        py::array_t<int32_t> out({index.ntotal, int64_t(index.graphDegree())});
                        std::copy(g.begin(), g.end(), out.mutable_data());
                        return out;
                    },
                    "The graph as an (ntotal, R) int32 array, rows padded with -1.");
}

} // namespace python
} // namespace faiss_ext
