#include "faiss_bytes.h"

#include <cxxabi.h>

#include <cstdlib>
#include <typeinfo>

#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include "bind.h"
#include "numpy_util.h"

namespace faiss_ext {
namespace python {

namespace {

std::vector<CpuConverter>& converters() {
    static std::vector<CpuConverter> all;
    return all;
}

std::string supportedList() {
    std::string s;
    for (const CpuConverter& c : converters()) {
        s += (s.empty() ? "" : ", ") + c.gpuClass;
    }
    return s;
}

/// The converter that loads `index`, or null.
const CpuConverter* converterFor(const faiss::Index& index) {
    for (const CpuConverter& c : converters()) {
        if (c.accepts(index)) {
            return &c;
        }
    }
    return nullptr;
}

std::unique_ptr<GpuIndex> fromBytes(PyGpuResources& res, py::handle data) {
    std::vector<uint8_t> bytes = serializedBytes(data);
    std::unique_ptr<faiss::Index> cpu;
    {
        py::gil_scoped_release noGil;
        cpu = readFaissIndex(bytes);
    }
    const CpuConverter* converter = converterFor(*cpu);
    if (converter == nullptr) {
        throw py::value_error(
                "index_from_faiss_bytes: faiss_ext cannot load a " + className(*cpu) +
                " (it loads the CPU counterparts of: " + supportedList() + ")");
    }
    DeviceCall call(res);
    return converter->fromCpu(res, *cpu);
}

py::array_t<uint8_t> toBytes(const GpuIndex& index) {
    std::vector<uint8_t> bytes;
    {
        DeviceCall call(index);
        std::unique_ptr<faiss::Index> cpu;
        for (const CpuConverter& c : converters()) {
            if ((cpu = c.toCpu(index))) {
                break;
            }
        }
        FAISS_THROW_IF_NOT_MSG(cpu, "index_to_faiss_bytes: no faiss counterpart for this index");
        bytes = writeFaissIndex(*cpu);
    }
    return toUint8Array(bytes);
}

py::dict bytesInfo(py::handle data) {
    std::unique_ptr<faiss::Index> cpu = readFaissIndex(serializedBytes(data));
    const CpuConverter* converter = converterFor(*cpu);
    py::dict info;
    info["faiss_class"] = className(*cpu);
    info["d"] = cpu->d;
    info["ntotal"] = cpu->ntotal;
    info["metric_type"] = int(cpu->metric_type);
    info["is_trained"] = cpu->is_trained;
    info["faiss_ext_class"] =
            converter ? py::object(py::str(converter->gpuClass)) : py::object(py::none());
    return info;
}

} // namespace

void registerCpuConverter(CpuConverter converter) {
    converters().push_back(std::move(converter));
}

std::unique_ptr<faiss::Index> readFaissIndex(const std::vector<uint8_t>& bytes) {
    faiss::VectorIOReader reader;
    reader.data = bytes;
    return std::unique_ptr<faiss::Index>(faiss::read_index(&reader));
}

std::vector<uint8_t> writeFaissIndex(const faiss::Index& index) {
    faiss::VectorIOWriter writer;
    faiss::write_index(&index, &writer);
    return std::move(writer.data);
}

std::string className(const faiss::Index& index) {
    const char* mangled = typeid(index).name();
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string name = (status == 0 && demangled) ? demangled : mangled;
    std::free(demangled);
    return name;
}

void bindFaissBytes(py::module_& m) {
    // Called after every bind_<index>.cpp has registered its converter.
    static const std::string fromBytesDoc =
            "A new faiss_ext GPU index holding a copy of the faiss CPU index serialized "
            "in `data` (bytes, or the uint8 array faiss.serialize_index returns). Loads "
            "the CPU counterparts of: " +
            supportedList() +
            ". ValueError for other faiss types, FaissException for malformed data.";
    m.def("index_from_faiss_bytes", &fromBytes, py::arg("res"), py::arg("data"),
          py::keep_alive<0, 1>(), fromBytesDoc.c_str());
    m.def("index_to_faiss_bytes", &toBytes, py::arg("index"),
          "The index copied to its faiss CPU counterpart and serialized: a uint8 "
          "array that faiss.deserialize_index accepts.");
    m.def("faiss_bytes_info", &bytesInfo, py::arg("data"),
          "What a serialized faiss index holds: dict with faiss_class, d, ntotal, "
          "metric_type, is_trained and faiss_ext_class (the class "
          "index_from_faiss_bytes would load it as, or None).");
    m.def(
            "index_cpu_to_gpu",
            [](PyGpuResources& res, py::object index) {
                py::object bytes = py::module_::import("faiss").attr("serialize_index")(index);
                return fromBytes(res, bytes);
            },
            py::arg("res"), py::arg("index"), py::keep_alive<0, 1>(),
            "index_from_faiss_bytes(res, faiss.serialize_index(index)): a faiss CPU "
            "index (from the `faiss` module) to a faiss_ext GPU index.");
    m.def(
            "index_gpu_to_cpu",
            [](const GpuIndex& index) {
                py::array_t<uint8_t> bytes = toBytes(index);
                return py::module_::import("faiss").attr("deserialize_index")(bytes);
            },
            py::arg("index"),
            "faiss.deserialize_index(index_to_faiss_bytes(index)): a faiss CPU index "
            "(of the `faiss` module) holding a copy of the GPU index.");
}

} // namespace python
} // namespace faiss_ext
