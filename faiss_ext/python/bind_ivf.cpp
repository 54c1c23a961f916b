#include <memory>
#include <string>

#include <faiss/IndexIVFFlat.h>

#include <faiss_ext/GpuIndexIVFFlat.h>

#include "bind.h"
#include "faiss_bytes.h"
#include "numpy_util.h"
#include "selectors.h"

namespace faiss_ext {
namespace python {

namespace {

IvfScanPath parseScanPath(const std::string& name) {
    if (name == "auto") {
        return IvfScanPath::kAuto;
    }
    if (name == "per_query") {
        return IvfScanPath::kPerQuery;
    }
    if (name == "list_major") {
        return IvfScanPath::kListMajor;
    }
    if (name == "list_major_keys") {
        return IvfScanPath::kListMajorKeys;
    }
    throw py::value_error(
            "scan_path must be 'auto', 'per_query', 'list_major' or 'list_major_keys', not '" +
            name + "'");
}

} // namespace

void bindIvf(py::module_& m) {
    py::class_<faiss::SearchParametersIVF, faiss::SearchParameters>(
            m, "SearchParametersIVF",
            "Per-call parameters of GpuIndexIVFFlat.search: nprobe (lists probed).")
            .def(py::init([](size_t nprobe, faiss::IDSelector* sel) {
                     auto params = std::make_unique<faiss::SearchParametersIVF>();
                     params->nprobe = nprobe;
                     params->sel = sel;
                     return params;
                 }),
                 py::arg("nprobe") = 1, py::arg("sel") = nullptr, py::keep_alive<1, 3>())
            .def_readwrite("nprobe", &faiss::SearchParametersIVF::nprobe);

    py::class_<GpuIndexIVFFlat, GpuIndex>(
            m, "GpuIndexIVFFlat",
            "Inverted file over uncompressed vectors on the GPU, like "
            "faiss.IndexIVFFlat: train (k-means), add / add_with_ids, search probing "
            "nprobe lists (or SearchParametersIVF(nprobe=...) per call).")
            .def(py::init([](PyGpuResources& res, int d, int64_t nlist, int metric,
                             size_t pageBytes, const std::string& scanPath) {
                     faiss::MetricType metricType = checkMetric(metric);
                     GpuIndexIVFFlatConfig config;
                     config.pageBytes = pageBytes;
                     config.scanPath = parseScanPath(scanPath);
                     DeviceCall call(res);
                     return std::make_unique<GpuIndexIVFFlat>(res, d, nlist, metricType, config);
                 }),
                 py::arg("res"), py::arg("d"), py::arg("nlist"),
                 py::arg("metric") = int(faiss::METRIC_L2), py::kw_only(),
                 py::arg("page_bytes") = GpuIndexIVFFlatConfig().pageBytes,
                 py::arg("scan_path") = "auto", py::keep_alive<1, 2>(),
                 "GpuIndexIVFFlat(res, d, nlist, metric=METRIC_L2, *, page_bytes=256 MiB, "
                 "scan_path='auto'): scan_path 'per_query', 'list_major' or "
                 "'list_major_keys' (L2 keys re-ranked exactly, k <= 32) forces the list "
                 "scan ('auto': list-major when the batch's queries share lists); all give "
                 "the same results.")
            .def_readwrite(
                    "nprobe", &GpuIndexIVFFlat::nprobe,
                    "Lists probed per query when search gets no params.")
            .def_property(
                    "coarse_precision",
                    [](const GpuIndexIVFFlat& index) {
                        return precisionName(index.coarsePrecision);
                    },
                    [](GpuIndexIVFFlat& index, const std::string& name) {
                        index.coarsePrecision = parsePrecision(name);
                    },
                    "The coarse search's product: 'auto' (3xTF32 on tensor cores from "
                    "1024 queries on devices of compute capability 8.0 and newer, FP32 "
                    "else), 'fp32' or 'tf32x3'. Not saved with the index.")
            .def_property_readonly("nlist", &GpuIndexIVFFlat::nlist)
            .def(
                    "list_length",
                    [](const GpuIndexIVFFlat& index, int64_t list) {
                        DeviceCall call(index);
                        return index.listLength(list);
                    },
                    py::arg("list"));

    CpuConverter ivf;
    ivf.gpuClass = "GpuIndexIVFFlat";
    ivf.accepts = [](const faiss::Index& cpu) {
        return dynamic_cast<const faiss::IndexIVFFlat*>(&cpu) != nullptr;
    };
    ivf.fromCpu = [](PyGpuResources& res, const faiss::Index& cpu) -> std::unique_ptr<GpuIndex> {
        return std::make_unique<GpuIndexIVFFlat>(
                res, dynamic_cast<const faiss::IndexIVFFlat*>(&cpu));
    };
    ivf.toCpu = [](const GpuIndex& gpu) -> std::unique_ptr<faiss::Index> {
        auto* index = dynamic_cast<const GpuIndexIVFFlat*>(&gpu);
        if (index == nullptr) {
            return nullptr;
        }
        auto cpu = std::make_unique<faiss::IndexIVFFlat>();
        index->copyTo(cpu.get());
        return cpu;
    };
    registerCpuConverter(std::move(ivf));
}

} // namespace python
} // namespace faiss_ext
