// faiss_ext's own file format (faiss_ext/index_io.h), distinct from faiss's: these
// functions save and load faiss_ext GPU indexes; index_to_faiss_bytes /
// index_from_faiss_bytes (faiss_bytes.cpp) speak faiss's format.
#include <string>

#include <faiss_ext/index_io.h>

#include "bind.h"
#include "numpy_util.h"
#include "resources.h"

namespace faiss_ext {
namespace python {

void bindIndexIo(py::module_& m) {
    m.def(
            "write_index",
            [](const GpuIndex& index, const std::string& path) {
                DeviceCall call(index);
                write_index(&index, path.c_str());
            },
            py::arg("index"), py::arg("path"),
            "Saves a faiss_ext index to a file (faiss_ext's format; FaissException on "
            "I/O errors).");
    m.def(
            "read_index",
            [](const std::string& path, PyGpuResources& res) {
                DeviceCall call(res);
                return read_index(path.c_str(), res);
            },
            py::arg("path"), py::arg("res"), py::keep_alive<0, 2>(),
            "Loads an index saved by write_index onto the device of `res`.");
    m.def(
            "serialize_index",
            [](const GpuIndex& index) {
                std::vector<uint8_t> bytes;
                {
                    DeviceCall call(index);
                    bytes = serialize_index(&index);
                }
                return toUint8Array(bytes);
            },
            py::arg("index"), "write_index's bytes as a uint8 array.");
    m.def(
            "deserialize_index",
            [](py::handle data, PyGpuResources& res) {
                std::vector<uint8_t> bytes = serializedBytes(data);
                DeviceCall call(res);
                return deserialize_index(bytes.data(), bytes.size(), res);
            },
            py::arg("data"), py::arg("res"), py::keep_alive<0, 2>(),
            "Loads an index from serialize_index's bytes onto the device of `res`.");
    m.def(
            "inspect_index",
            [](py::handle data) {
                const std::vector<uint8_t> bytes = serializedBytes(data);
                const IndexFileInfo info = inspect_index(bytes.data(), bytes.size());
                py::dict out;
                out["kind"] = info.kind;
                out["version"] = info.version;
                out["d"] = info.d;
                out["metric"] = int(info.metric);
                out["ntotal"] = info.ntotal;
                return out;
            },
            py::arg("data"),
            "Reads and checks serialize_index's bytes on the host (no device): a dict "
            "of kind, version, d, metric and ntotal, or FaissException as "
            "deserialize_index would raise.");
}

} // namespace python
} // namespace faiss_ext
