#include <cstdint>
#include <memory>

#include <faiss_ext/utils/DeviceScope.h>

#include "bind.h"
#include "resources.h"

namespace faiss_ext {
namespace python {

void bindResources(py::module_& m) {
    m.def("get_num_gpus", &GpuResources::deviceCount,
          "Number of CUDA devices usable here (0 without a device or driver).");

    py::class_<PyGpuResources>(
            m, "GpuResources",
            "One CUDA device as the indexes use it: a stream, a cuBLAS handle and a "
            "bound on the temporary device memory of one call. Raises FaissException "
            "when the device does not exist. Indexes keep their GpuResources alive; "
            "calls of the indexes sharing one GpuResources run one at a time.")
            .def(py::init([](int device, size_t tempMemoryBytes, bool plainProducts) {
                     GpuResourcesConfig config;
                     config.device = device;
                     config.tempMemoryBytes = tempMemoryBytes;
                     config.plainProducts = plainProducts;
                     return std::make_unique<PyGpuResources>(config);
                 }),
                 py::arg("device") = GpuResourcesConfig().device,
                 py::arg("temp_memory_bytes") = GpuResourcesConfig().tempMemoryBytes,
                 py::arg("plain_products") = GpuResourcesConfig().plainProducts)
            .def_property_readonly("device", &GpuResources::device)
            .def_property_readonly("temp_memory_bytes", &GpuResources::tempMemoryBytes)
            .def_property_readonly(
                    "plain_products", &GpuResources::plainProducts,
                    "Whether the products run on faiss_ext's plain kernel instead of cuBLAS "
                    "(for compute-sanitizer runs; FAISS_EXT_PLAIN_PRODUCTS=1 sets it too).")
            .def(
                    "synchronize",
                    [](PyGpuResources& res) {
                        DeviceCall call(res);
                        res.synchronize();
                    },
                    "Waits for all work queued on the stream.")
            .def(
                    "_pool_peak_bytes",
                    [](PyGpuResources& res, bool reset) {
                        DeviceCall call(res);
                        DeviceScope scope(res.device());
                        res.synchronize();
                        cudaMemPool_t pool;
                        FAISS_EXT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, res.device()));
                        uint64_t peak = 0;
                        FAISS_EXT_CUDA_CHECK(
                                cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &peak));
                        if (reset) {
                            uint64_t zero = 0;
                            FAISS_EXT_CUDA_CHECK(cudaMemPoolSetAttribute(
                                    pool, cudaMemPoolAttrUsedMemHigh, &zero));
                        }
                        return peak;
                    },
                    py::arg("reset") = false,
                    "For tests: the most device memory the library's stream-ordered pool "
                    "has held at once (since the last reset), and reset it.")
            .def("__repr__", [](const PyGpuResources& res) {
                return "<faiss_ext.GpuResources device=" + std::to_string(res.device()) +
                        " temp_memory_bytes=" + std::to_string(res.tempMemoryBytes()) + ">";
            });
}

} // namespace python
} // namespace faiss_ext
