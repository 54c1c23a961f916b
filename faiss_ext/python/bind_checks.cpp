// The argument rules of the module as functions of their own, so that tests reach
// them on machines without a GPU.
#include <cstdint>

#include "bind.h"
#include "device_array.h"
#include "numpy_util.h"

namespace faiss_ext {
namespace python {

void bindArgumentChecks(py::module_& m) {
    m.def("_check_vectors", &checkVectors, py::arg("x"), py::arg("d"), py::arg("what") = "check",
          "x as the C-contiguous float32 (n, d) array the indexes receive, or "
          "TypeError / ValueError.");
    m.def("_check_ids", &checkIds, py::arg("ids"), py::arg("n"), py::arg("what") = "check",
          "ids as the C-contiguous int64 (n,) array add_with_ids receives, or "
          "TypeError / ValueError.");
    m.def(
            "_check_device_vectors",
            [](py::handle x, int64_t d, const char* what) {
                DeviceArray a = deviceVectors(x, d, nullptr, what);
                return py::make_tuple(reinterpret_cast<uintptr_t>(a.data), a.desc.shape[0]);
            },
            py::arg("x"), py::arg("d"), py::arg("what") = "check",
            "(data pointer, n) of a device array as the indexes receive it (converted by "
            "CuPy or PyTorch where needed), or TypeError / ValueError.");
    m.def("_check_k", &checkK, py::arg("k"), "ValueError unless 1 <= k <= MAX_SEARCH_K.");
    m.def(
            "_check_metric", [](int metric) { return int(checkMetric(metric)); }, py::arg("metric"),
            "The metric if the indexes support it, else ValueError.");
    m.def(
            "_serialized_bytes",
            [](py::handle data) {
                std::vector<uint8_t> b = serializedBytes(data);
                return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
            },
            py::arg("data"),
            "The bytes a serialized-index argument holds, or TypeError / ValueError.");
}

} // namespace python
} // namespace faiss_ext
