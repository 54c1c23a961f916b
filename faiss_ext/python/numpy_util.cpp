#include "numpy_util.h"

#include <cstring>
#include <string>

#include <faiss_ext/impl/ArgChecks.h>

namespace faiss_ext {
namespace python {

namespace {

/// numpy's name of a's dtype. The native-order real and integer types are named here
/// (str(dtype) runs Python code, a microsecond or two of every call), the others by numpy.
std::string dtypeString(const py::array& a) {
    py::dtype dt = a.dtype();
    const char order = dt.byteorder();
    if (order == '=' || order == '|') {
        // The attribute, not dtype::itemsize(): older pybind11 reads numpy 1's struct.
        const std::string bits = std::to_string(8 * dt.attr("itemsize").cast<int>());
        switch (dt.kind()) {
            case 'f':
                return "float" + bits;
            case 'i':
                return "int" + bits;
            case 'u':
                return "uint" + bits;
            default:
                break;
        }
    }
    return py::str(dt).cast<std::string>();
}

std::string typeName(py::handle x) {
    return Py_TYPE(x.ptr())->tp_name;
}

template <typename Array>
Array convert(const py::array& a) {
    Array r = Array::ensure(a);
    if (!r) {
        throw py::error_already_set();
    }
    return r;
}

std::string shapeString(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        s += std::to_string(shape[i]);
        s += (shape.size() == 1 || i + 1 < shape.size()) ? "," : "";
        s += (i + 1 < shape.size()) ? " " : "";
    }
    return s + ")";
}

ArrayDesc describe(const py::array& a) {
    ArrayDesc desc;
    desc.kind = a.dtype().kind();
    desc.dtype = dtypeString(a);
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
        desc.shape.push_back(a.shape(i));
    }
    return desc;
}

} // namespace

void checkVectorsDesc(const ArrayDesc& a, int64_t d, const char* what) {
    const std::string expected = "(n, " + std::to_string(d) + ")";
    if (a.kind != 'f' && a.kind != 'i' && a.kind != 'u') {
        throw py::type_error(
                std::string(what) + ": expected float32 vectors, got dtype " + a.dtype +
                " (real numbers are converted, other types are not)");
    }
    if (a.shape.size() != 2) {
        std::string hint = a.shape.size() == 1 ? " (for one vector use x.reshape(1, -1))" : "";
        throw py::value_error(
                std::string(what) + ": expected a 2-D array of shape " + expected + ", got shape " +
                shapeString(a.shape) + hint);
    }
    if (a.shape[1] != d) {
        throw py::value_error(
                std::string(what) + ": vectors have dimension " + std::to_string(a.shape[1]) +
                " but the index has d=" + std::to_string(d));
    }
}

void checkIdsDesc(const ArrayDesc& a, int64_t n, const char* what) {
    if (a.kind != 'i' && a.kind != 'u') {
        throw py::type_error(std::string(what) + ": expected integer ids, got dtype " + a.dtype);
    }
    if (a.shape.size() != 1 || a.shape[0] != n) {
        throw py::value_error(
                std::string(what) + ": expected " + std::to_string(n) + " ids of shape (" +
                std::to_string(n) + ",), got shape " + shapeString(a.shape));
    }
}

FloatMatrix checkVectors(py::handle x, int64_t d, const char* what) {
    if (!py::isinstance<py::array>(x)) {
        throw py::type_error(
                std::string(what) +
                ": expected a numpy array or a CUDA device array of shape (n, " +
                std::to_string(d) + "), got " + typeName(x));
    }
    auto a = py::reinterpret_borrow<py::array>(x);
    checkVectorsDesc(describe(a), d, what);
    return convert<FloatMatrix>(a);
}

IdVector checkIds(py::handle ids, int64_t n, const char* what) {
    if (!py::isinstance<py::array>(ids)) {
        throw py::type_error(
                std::string(what) +
                ": expected ids as a numpy int64 array or a CUDA device array of shape (" +
                std::to_string(n) + ",), got " + typeName(ids));
    }
    auto a = py::reinterpret_borrow<py::array>(ids);
    checkIdsDesc(describe(a), n, what);
    return convert<IdVector>(a);
}

void checkK(int64_t k) {
    if (k < 1 || k > kMaxSearchK) {
        throw py::value_error(
                "search: k=" + std::to_string(k) + " is outside [1, " +
                std::to_string(kMaxSearchK) + "]");
    }
}

faiss::MetricType checkMetric(int metric) {
    if (metric != faiss::METRIC_L2 && metric != faiss::METRIC_INNER_PRODUCT) {
        throw py::value_error(
                "metric " + std::to_string(metric) +
                " is not supported (METRIC_L2 = 1 or METRIC_INNER_PRODUCT = 0)");
    }
    return faiss::MetricType(metric);
}

std::vector<uint8_t> serializedBytes(py::handle data) {
    std::vector<uint8_t> out;
    if (PyBytes_Check(data.ptr()) || PyByteArray_Check(data.ptr())) {
        const bool isBytes = PyBytes_Check(data.ptr());
        const char* p = isBytes ? PyBytes_AS_STRING(data.ptr()) : PyByteArray_AS_STRING(data.ptr());
        const py::ssize_t size =
                isBytes ? PyBytes_GET_SIZE(data.ptr()) : PyByteArray_GET_SIZE(data.ptr());
        out.assign(p, p + size);
    } else if (py::isinstance<py::array>(data)) {
        auto a = py::reinterpret_borrow<py::array>(data);
        // dtype equality goes through NumPy's C API; pybind11 before 2.12 reads
        // itemsize() from where NumPy 1 kept it, which NumPy 2 moved.
        if (!a.dtype().equal(py::dtype::of<uint8_t>()) || a.ndim() != 1) {
            throw py::type_error(
                    "serialized index: expected a 1-D uint8 array (as returned by "
                    "faiss.serialize_index), got dtype " +
                    dtypeString(a) + " and shape " + shapeString(describe(a).shape));
        }
        auto bytes = convert<py::array_t<uint8_t, py::array::c_style>>(a);
        out.assign(bytes.data(), bytes.data() + bytes.size());
    } else {
        throw py::type_error(
                "serialized index: expected bytes, bytearray or a uint8 numpy array, got " +
                typeName(data));
    }
    if (out.empty()) {
        throw py::value_error("serialized index: no bytes");
    }
    return out;
}

py::array_t<uint8_t> toUint8Array(const std::vector<uint8_t>& bytes) {
    py::array_t<uint8_t> out(py::ssize_t(bytes.size()));
    if (!bytes.empty()) {
        std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
    }
    return out;
}

} // namespace python
} // namespace faiss_ext
