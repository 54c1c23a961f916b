#include <memory>
#include <string>

#include <faiss/IndexFlat.h>

#include <faiss_ext/GpuIndexFlat.h>

#include "bind.h"
#include "faiss_bytes.h"
#include "numpy_util.h"

namespace faiss_ext {
namespace python {

GpuFlatPrecision parsePrecision(const std::string& name) {
    if (name == "auto") {
        return GpuFlatPrecision::kAuto;
    }
    if (name == "fp32") {
        return GpuFlatPrecision::kFloat32;
    }
    if (name == "tf32x3") {
        return GpuFlatPrecision::kTF32x3;
    }
    throw py::value_error("precision must be 'auto', 'fp32' or 'tf32x3', not '" + name + "'");
}

std::string precisionName(GpuFlatPrecision p) {
    return p == GpuFlatPrecision::kFloat32   ? "fp32"
            : p == GpuFlatPrecision::kTF32x3 ? "tf32x3"
                                             : "auto";
}

void bindFlat(py::module_& m) {
    py::class_<GpuIndexFlat, GpuIndex>(
            m, "GpuIndexFlat",
            "Exact k-NN (L2 or inner product) on the GPU, like faiss.IndexFlat. "
            "add_with_ids is refused (ids are sequential).")
            .def(py::init([](PyGpuResources& res, int d, int metric, size_t pageBytes,
                             const std::string& precision, bool float16Copy, bool int8Copy) {
                     faiss::MetricType metricType = checkMetric(metric);
                     GpuIndexFlatConfig config;
                     config.pageBytes = pageBytes;
                     config.precision = parsePrecision(precision);
                     config.float16Copy = float16Copy;
                     config.int8Copy = int8Copy;
                     DeviceCall call(res);
                     return std::make_unique<GpuIndexFlat>(res, d, metricType, config);
                 }),
                 py::arg("res"), py::arg("d"), py::arg("metric") = int(faiss::METRIC_L2),
                 py::kw_only(), py::arg("page_bytes") = GpuIndexFlatConfig().pageBytes,
                 py::arg("precision") = "auto", py::arg("float16_copy") = false,
                 py::arg("int8_copy") = false, py::keep_alive<1, 2>(),
                 "GpuIndexFlat(res, d, metric=METRIC_L2, *, page_bytes=256 MiB, "
                 "precision='auto', float16_copy=False, int8_copy=False): page_bytes bounds the "
                 "device memory "
                 "staging host queries; precision 'fp32' or 'tf32x3' forces how the products "
                 "are computed ('auto': exact results, tensor cores with an FP32 re-rank for "
                 "large batches); float16_copy keeps a float16 copy of the vectors (+50% device "
                 "memory) that single queries read first, with the same exact results; "
                 "int8_copy the same with an int8 copy (+25%; at most one of the two).")
            .def_property_readonly(
                    "float16_copy",
                    [](const GpuIndexFlat& index) { return index.flatConfig().float16Copy; },
                    "Whether the index keeps a float16 copy of its vectors.")
            .def_property_readonly(
                    "int8_copy",
                    [](const GpuIndexFlat& index) { return index.flatConfig().int8Copy; },
                    "Whether the index keeps an int8 copy of its vectors.");

    CpuConverter flat;
    flat.gpuClass = "GpuIndexFlat";
    flat.accepts = [](const faiss::Index& cpu) {
        return dynamic_cast<const faiss::IndexFlat*>(&cpu) != nullptr;
    };
    flat.fromCpu = [](PyGpuResources& res, const faiss::Index& cpu) -> std::unique_ptr<GpuIndex> {
        return std::make_unique<GpuIndexFlat>(res, dynamic_cast<const faiss::IndexFlat*>(&cpu));
    };
    flat.toCpu = [](const GpuIndex& gpu) -> std::unique_ptr<faiss::Index> {
        auto* index = dynamic_cast<const GpuIndexFlat*>(&gpu);
        if (index == nullptr) {
            return nullptr;
        }
        std::unique_ptr<faiss::IndexFlat> cpu;
        if (index->metric_type == faiss::METRIC_L2) {
            cpu = std::make_unique<faiss::IndexFlatL2>(index->d);
        } else {
            cpu = std::make_unique<faiss::IndexFlatIP>(index->d);
        }
        index->copyTo(cpu.get());
        return cpu;
    };
    registerCpuConverter(std::move(flat));
}

} // namespace python
} // namespace faiss_ext
