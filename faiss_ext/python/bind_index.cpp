// Methods every faiss_ext index shares (faiss::Index's API over numpy arrays).
#include <string>

#include <faiss/Index.h>
#include <faiss/impl/AuxIndexStructures.h>

#include "bind.h"
#include "call_args.h"
#include "resources.h"
#include "selectors.h"

namespace faiss_ext {
namespace python {

namespace {

std::string metricName(faiss::MetricType metric) {
    switch (metric) {
        case faiss::METRIC_L2:
            return "L2";
        case faiss::METRIC_INNER_PRODUCT:
            return "INNER_PRODUCT";
        default:
            return std::to_string(int(metric));
    }
}

void train(GpuIndex& index, py::handle x) {
    VectorsArg v(x, index, "train");
    DeviceCall call(index);
    index.train(v.n(), v.data());
}

void add(GpuIndex& index, py::handle x) {
    VectorsArg v(x, index, "add");
    if (v.n() == 0) {
        return;
    }
    DeviceCall call(index);
    index.add(v.n(), v.data());
}

void addWithIds(GpuIndex& index, py::handle x, py::handle ids) {
    VectorsArg v(x, index, "add_with_ids");
    IdsArg i(ids, v.n(), index, "add_with_ids");
    if (v.n() == 0) {
        return;
    }
    DeviceCall call(index);
    index.add_with_ids(v.n(), v.data(), i.data());
}

py::tuple search(const GpuIndex& index, py::handle x, int64_t k, py::handle paramsObj) {
    checkK(k);
    VectorsArg q(x, index, "search");
    const CallSelection selection = searchParamsFrom(index, paramsObj);
    const faiss::SearchParameters* params = selection.params;
    SearchResults out(q, x, k, index);
    if (q.n() > 0) {
        DeviceCall call(index);
        index.search(q.n(), q.data(), k, out.distances(), out.labels(), params);
    }
    return out.take();
}

py::tuple rangeSearch(const GpuIndex& index, py::handle x, float radius, py::handle paramsObj) {
    FloatMatrix q = checkVectors(x, index.d, "range_search");
    const int64_t n = q.shape(0);
    const CallSelection sel = searchParamsFrom(index, paramsObj);
    faiss::RangeSearchResult result(static_cast<faiss::RangeSearchResult::idx_t>(n));
    const float* queries = q.data();
    {
        DeviceCall call(index);
        index.range_search(n, queries, radius, &result, sel.params);
    }
    const int64_t total = int64_t(result.lims[n]);
    py::array_t<int64_t> lims(n + 1);
    py::array_t<float> distances(total);
    py::array_t<int64_t> labels(total);
    std::copy_n(result.lims, n + 1, lims.mutable_data());
    std::copy_n(result.distances, total, distances.mutable_data());
    std::copy_n(result.labels, total, labels.mutable_data());
    return py::make_tuple(lims, distances, labels);
}

size_t removeIds(GpuIndex& index, py::handle selObj) {
    const CallSelection sel = selectorFrom(index, selObj);
    DeviceCall call(index);
    return index.remove_ids(*sel.sel);
}

py::array_t<float> reconstructN(const GpuIndex& index, int64_t i0, int64_t n) {
    if (n < 0) {
        throw py::value_error("reconstruct_n: n=" + std::to_string(n) + " is negative");
    }
    py::array_t<float> out({n, int64_t(index.d)});
    float* dst = out.mutable_data();
    if (n == 0) {
        return out;
    }
    DeviceCall call(index);
    index.reconstruct_n(i0, n, dst);
    return out;
}

py::array_t<float> reconstruct(const GpuIndex& index, int64_t key) {
    py::array_t<float> out(py::ssize_t(index.d));
    float* dst = out.mutable_data();
    DeviceCall call(index);
    index.reconstruct(key, dst);
    return out;
}

} // namespace

void bindIndex(py::module_& m) {
    py::class_<faiss::SearchParameters> params(
            m, "SearchParameters",
            "Per-call search parameters: sel (an IDSelector filtering the results) and no "
            "knobs (indexes with knobs have their own subclass).");
    params.def(
            py::init([](faiss::IDSelector* sel) {
                auto p = std::make_unique<faiss::SearchParameters>();
                p->sel = sel;
                return p;
            }),
            py::arg("sel") = nullptr, py::keep_alive<1, 2>());
    addSelProperty(params);

    py::class_<GpuIndex>(
            m, "GpuIndex",
            "Base of the faiss_ext indexes: faiss.Index's methods over numpy arrays or "
            "CUDA device arrays (CuPy, PyTorch: DLPack or __cuda_array_interface__). "
            "Vectors are (n, d) arrays, converted to C-contiguous float32 (with a copy) "
            "when they are another real dtype or layout. search returns numpy arrays "
            "for numpy queries and arrays of the queries' framework, on the index's "
            "device, for device queries. The GIL is released during train, add and "
            "search.")
            .def_property_readonly("d", [](const GpuIndex& i) { return i.d; })
            .def_property_readonly("ntotal", [](const GpuIndex& i) { return i.ntotal; })
            .def_property_readonly(
                    "metric_type", [](const GpuIndex& i) { return int(i.metric_type); })
            .def_property_readonly("is_trained", [](const GpuIndex& i) { return i.is_trained; })
            .def_property(
                    "verbose", [](const GpuIndex& i) { return i.verbose; },
                    [](GpuIndex& i, bool v) { i.verbose = v; },
                    "Print the phases of train and add (the Bang graph build) with the "
                    "fraction done and the elapsed time (off by default).")
            .def_readwrite(
                    "use_search_graphs", &GpuIndex::useSearchGraphs,
                    "Small searches without a selector replay a CUDA graph once their "
                    "shape has been seen twice, with the copies of numpy arrays in it "
                    "(GpuIndexIVFFlat: up to 1024 queries; GpuIndexFlat: a few queries "
                    "against a large base; default True).")
            .def_property_readonly(
                    "search_graph_count", &GpuIndex::searchGraphCount,
                    "Search shapes held as CUDA graphs now.")
            .def_property_readonly(
                    "search_graph_bytes", &GpuIndex::searchGraphBytes,
                    "Device bytes the held graphs' temporaries take (at most the temp "
                    "budget).")
            .def("train", &train, py::arg("x"))
            .def("add", &add, py::arg("x"),
                 "Adds (n, d) vectors with ids ntotal, ntotal + 1, ... (an empty batch "
                 "does nothing).")
            .def("add_with_ids", &addWithIds, py::arg("x"), py::arg("ids"),
                 "Adds (n, d) vectors with the given (n,) int64 ids, where the index "
                 "supports it.")
            .def("search", &search, py::arg("x"), py::arg("k"), py::arg("params") = py::none(),
                 "D, I = search(x, k, params=None): (n, k) float32 distances and int64 ids, "
                 "best first; missing results are id -1. numpy for numpy queries; for device "
                 "queries, arrays of their framework (CuPy, PyTorch) on the index's device. "
                 "params: the index's SearchParameters (sel filters the results), or faiss's "
                 "own SearchParameters / SearchParametersIVF with a faiss selector.")
            .def("range_search", &rangeSearch, py::arg("x"), py::arg("radius"),
                 py::arg("params") = py::none(),
                 "lims, D, I = range_search(x, radius, params=None), as faiss: the results "
                 "of query i are D[lims[i]:lims[i+1]], I[...] (L2: squared distance < "
                 "radius; inner product: > radius).")
            .def("remove_ids", &removeIds, py::arg("sel"),
                 "Removes the vectors an IDSelector (faiss_ext's or faiss's) or an array of "
                 "ids selects; returns how many.")
            .def(
                    "reset",
                    [](GpuIndex& index) {
                        DeviceCall call(index);
                        index.reset();
                    },
                    "Removes every vector.")
            .def("reconstruct", &reconstruct, py::arg("key"),
                 "Stored vector `key` as a (d,) float32 array.")
            .def("reconstruct_n", &reconstructN, py::arg("i0"), py::arg("n"),
                 "Stored vectors i0 .. i0 + n - 1 as an (n, d) float32 array.")
            .def(
                    "device_memory_bytes",
                    [](const GpuIndex& index) {
                        DeviceCall call(index);
                        return index.deviceMemoryBytes();
                    },
                    "Device memory the index holds (not counting temporaries).")
            .def_property_readonly(
                    "resources",
                    [](const GpuIndex& index) -> PyGpuResources& { return pyResources(index); },
                    py::return_value_policy::reference)
            .def("__repr__", [](py::object self) {
                const auto& index = self.cast<const GpuIndex&>();
                std::string name = py::str(self.get_type().attr("__name__"));
                return "<faiss_ext." + name + " d=" + std::to_string(index.d) +
                        " ntotal=" + std::to_string(index.ntotal) +
                        " metric=" + metricName(index.metric_type) + ">";
            });
}

} // namespace python
} // namespace faiss_ext
