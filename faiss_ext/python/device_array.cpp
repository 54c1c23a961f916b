#include "device_array.h"

#include <cstring>
#include <string>

#include <pybind11/numpy.h>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {
namespace python {

namespace {

// DLPack's ABI (dlpack.h, stable since v0.6): the capsule "dltensor" holds a
// DLManagedTensor whose deleter the capsule's own destructor calls.
struct DLDevice {
    int32_t device_type;
    int32_t device_id;
};
struct DLDataType {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
};
struct DLTensor {
    void* data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t* shape;
    int64_t* strides;
    uint64_t byte_offset;
};
struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(DLManagedTensor*);
};
constexpr int32_t kDLCUDA = 2;
constexpr int32_t kDLCUDAManaged = 13;

std::string typeName(py::handle x) {
    return Py_TYPE(x.ptr())->tp_name;
}

/// The top-level module of x's type ("cupy", "torch", ...).
std::string frameworkOf(py::handle x) {
    std::string module = py::str(py::type::handle_of(x).attr("__module__"));
    return module.substr(0, module.find('.'));
}

bool dlpackOnCuda(py::handle x) {
    if (!py::hasattr(x, "__dlpack__") || !py::hasattr(x, "__dlpack_device__")) {
        return false;
    }
    py::tuple dev = x.attr("__dlpack_device__")();
    const int type = dev[0].cast<int>();
    return type == kDLCUDA || type == kDLCUDAManaged;
}

/// C order in element strides (dimensions of extent 1 may have any stride; an empty
/// array, whose strides frameworks report freely, is contiguous).
bool cContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    for (int64_t extent : shape) {
        if (extent == 0) {
            return true;
        }
    }
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && strides[i] != expected) {
            return false;
        }
        expected *= shape[i];
    }
    return true;
}

std::string dlpackTypeName(const DLDataType& t) {
    const std::string bits = std::to_string(int(t.bits));
    switch (t.code) {
        case 0:
            return "int" + bits;
        case 1:
            return "uint" + bits;
        case 2:
            return "float" + bits;
        case 4:
            return "bfloat" + bits;
        case 5:
            return "complex" + bits;
        case 6:
            return "bool";
        default:
            return "DLPack type code " + std::to_string(int(t.code));
    }
}

char dlpackKind(const DLDataType& t) {
    switch (t.code) {
        case 0:
            return 'i';
        case 1:
            return 'u';
        case 2:
        case 4:
            return 'f';
        case 5:
            return 'c';
        case 6:
            return 'b';
        default:
            return 'V';
    }
}

DeviceArray readDlpack(py::handle x, cudaStream_t stream) {
    DeviceArray a;
    a.object = py::reinterpret_borrow<py::object>(x);
    a.capsule = x.attr("__dlpack__")(py::arg("stream") = reinterpret_cast<uintptr_t>(stream));
    auto* managed =
            static_cast<DLManagedTensor*>(PyCapsule_GetPointer(a.capsule.ptr(), "dltensor"));
    if (managed == nullptr) {
        throw py::error_already_set();
    }
    const DLTensor& t = managed->dl_tensor;
    a.desc.kind = t.dtype.lanes == 1 ? dlpackKind(t.dtype) : 'V';
    a.desc.dtype = dlpackTypeName(t.dtype) +
            (t.dtype.lanes == 1 ? "" : " x " + std::to_string(int(t.dtype.lanes)));
    a.desc.shape.assign(t.shape, t.shape + t.ndim);
    a.itemsize = int(t.dtype.bits) / 8;
    a.data = static_cast<char*>(t.data) + t.byte_offset;
    a.cContiguous = t.strides == nullptr ||
            cContiguous(a.desc.shape, std::vector<int64_t>(t.strides, t.strides + t.ndim));
    return a;
}

/// Makes `stream` wait for the work queued on the producer's stream (the interface's
/// "stream" entry: 1 the legacy default stream, 2 the per-thread one, else a handle).
void waitForProducer(py::handle producerStream, cudaStream_t stream) {
    if (producerStream.is_none()) {
        return;
    }
    const uintptr_t s = producerStream.cast<uintptr_t>();
    cudaStream_t producer = s == 1 ? cudaStreamLegacy
            : s == 2               ? cudaStreamPerThread
                                   : reinterpret_cast<cudaStream_t>(s);
    cudaEvent_t ready;
    FAISS_EXT_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    cudaError_t err = cudaEventRecord(ready, producer);
    if (err == cudaSuccess) {
        err = cudaStreamWaitEvent(stream, ready, 0);
    }
    cudaEventDestroy(ready);
    FAISS_EXT_CUDA_CHECK(err);
}

DeviceArray readCudaArrayInterface(py::handle x, cudaStream_t stream) {
    DeviceArray a;
    a.object = py::reinterpret_borrow<py::object>(x);
    py::dict cai = x.attr("__cuda_array_interface__");
    if (cai.contains("mask") && !cai["mask"].is_none()) {
        throw py::type_error("masked device arrays are not supported (got " + typeName(x) + ")");
    }
    const std::string typestr = py::str(cai["typestr"]);
    a.desc.kind = typestr.size() > 1 ? typestr[1] : 'V';
    a.desc.dtype = py::str(py::module_::import("numpy").attr("dtype")(typestr));
    a.itemsize = py::module_::import("numpy").attr("dtype")(typestr).attr("itemsize").cast<int>();
    for (py::handle e : py::tuple(cai["shape"])) {
        a.desc.shape.push_back(e.cast<int64_t>());
    }
    a.data = reinterpret_cast<void*>(py::tuple(cai["data"])[0].cast<uintptr_t>());
    if (cai.contains("strides") && !cai["strides"].is_none()) {
        std::vector<int64_t> strides;
        for (py::handle e : py::tuple(cai["strides"])) {
            const int64_t bytes = e.cast<int64_t>();
            // A stride that is not a whole number of elements is never C order.
            strides.push_back(bytes % a.itemsize == 0 ? bytes / a.itemsize : -1);
        }
        a.cContiguous = cContiguous(a.desc.shape, strides);
    }
    if (cai.contains("stream")) {
        waitForProducer(cai["stream"], stream);
    }
    return a;
}

/// x converted by its own framework to a C-contiguous array of `dtype`.
py::object convertWithFramework(py::handle x, const char* dtype, const char* what) {
    const std::string fw = frameworkOf(x);
    if (fw == "cupy") {
        py::module_ cupy = py::module_::import("cupy");
        return cupy.attr("ascontiguousarray")(x, py::arg("dtype") = dtype);
    }
    if (fw == "torch") {
        py::module_ torch = py::module_::import("torch");
        return x.attr("to")(py::arg("dtype") = torch.attr(dtype)).attr("contiguous")();
    }
    throw py::type_error(
            std::string(what) + ": a " + typeName(x) + " that is not C-contiguous " + dtype +
            " (faiss_ext converts CuPy and PyTorch device arrays only; convert it first)");
}

bool layoutIs(const DeviceArray& a, char kind, int itemsize) {
    return a.desc.kind == kind && a.itemsize == itemsize && a.desc.dtype.rfind("bfloat", 0) != 0 &&
            a.cContiguous;
}

/// The framework's conversion gave what was asked for.
void expectLayout(
        const DeviceArray& a,
        char kind,
        int itemsize,
        const char* dtype,
        const char* what) {
    if (!layoutIs(a, kind, itemsize)) {
        throw py::type_error(
                std::string(what) + ": converting to C-contiguous " + dtype + " gave dtype " +
                a.desc.dtype + (a.cContiguous ? "" : ", not C-contiguous"));
    }
}

} // namespace

bool isDeviceArray(py::handle x) {
    // numpy arrays offer __dlpack_device__ too (the CPU): settle them without a call.
    if (py::isinstance<py::array>(x)) {
        return false;
    }
    return dlpackOnCuda(x) || py::hasattr(x, "__cuda_array_interface__");
}

DeviceArray readDeviceArray(py::handle x, cudaStream_t stream) {
    // The interface where it names the producer's stream (version 3: CuPy), as it also
    // gives numpy's exact dtype; else DLPack, whose producer orders its work before
    // `stream` (PyTorch's interface names no stream); else the interface alone.
    bool caiNamesStream = false;
    if (py::hasattr(x, "__cuda_array_interface__")) {
        py::dict cai = x.attr("__cuda_array_interface__");
        caiNamesStream = cai.contains("stream");
    }
    if (!caiNamesStream && dlpackOnCuda(x)) {
        return readDlpack(x, stream);
    }
    return readCudaArrayInterface(x, stream);
}

DeviceArray deviceVectors(py::handle x, int64_t d, cudaStream_t stream, const char* what) {
    DeviceArray a = readDeviceArray(x, stream);
    checkVectorsDesc(a.desc, d, what);
    if (!layoutIs(a, 'f', 4)) {
        a = readDeviceArray(convertWithFramework(x, "float32", what), stream);
        expectLayout(a, 'f', 4, "float32", what);
    }
    return a;
}

DeviceArray deviceIds(py::handle x, int64_t n, cudaStream_t stream, const char* what) {
    DeviceArray a = readDeviceArray(x, stream);
    checkIdsDesc(a.desc, n, what);
    if (!layoutIs(a, 'i', 8)) {
        a = readDeviceArray(convertWithFramework(x, "int64", what), stream);
        expectLayout(a, 'i', 8, "int64", what);
    }
    return a;
}

py::object emptyDeviceLike(
        py::handle like,
        int64_t n,
        int64_t k,
        const char* dtype,
        int device,
        const char* what) {
    const std::string fw = frameworkOf(like);
    if (fw == "cupy") {
        py::module_ cupy = py::module_::import("cupy");
        // cupy.empty allocates on CuPy's current device: make it the index's.
        py::object scope = cupy.attr("cuda").attr("Device")(device);
        scope.attr("__enter__")();
        py::object out;
        try {
            out = cupy.attr("empty")(py::make_tuple(n, k), py::arg("dtype") = dtype);
        } catch (...) {
            scope.attr("__exit__")(py::none(), py::none(), py::none());
            throw;
        }
        scope.attr("__exit__")(py::none(), py::none(), py::none());
        return out;
    }
    if (fw == "torch") {
        py::module_ torch = py::module_::import("torch");
        return torch.attr("empty")(
                py::make_tuple(n, k), py::arg("dtype") = torch.attr(dtype),
                py::arg("device") = "cuda:" + std::to_string(device));
    }
    throw py::type_error(
            std::string(what) +
            ": results on the device are made as CuPy arrays or PyTorch "
            "tensors; got queries of type " +
            typeName(like) + " (pass a CuPy array, a PyTorch tensor or a numpy array)");
}

} // namespace python
} // namespace faiss_ext
