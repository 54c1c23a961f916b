#include "call_args.h"

#include <pybind11/numpy.h>

namespace faiss_ext {
namespace python {

VectorsArg::VectorsArg(py::handle x, const GpuIndex& index, const char* what) {
    if (isDeviceArray(x)) {
        device_ = deviceVectors(x, index.d, index.resources().stream(), what);
        onDevice_ = true;
        n_ = device_.desc.shape[0];
        data_ = static_cast<const float*>(device_.data);
    } else {
        host_ = checkVectors(x, index.d, what);
        n_ = host_.shape(0);
        data_ = host_.data();
    }
}

IdsArg::IdsArg(py::handle ids, int64_t n, const GpuIndex& index, const char* what) {
    if (isDeviceArray(ids)) {
        device_ = deviceIds(ids, n, index.resources().stream(), what);
        data_ = static_cast<const int64_t*>(device_.data);
    } else {
        host_ = checkIds(ids, n, what);
        data_ = host_.data();
    }
}

SearchResults::SearchResults(
        const VectorsArg& queries,
        py::handle source,
        int64_t k,
        const GpuIndex& index) {
    const int64_t n = queries.n();
    if (!queries.onDevice()) {
        py::array_t<float> d({n, k});
        py::array_t<int64_t> i({n, k});
        distances_ = d.mutable_data();
        labels_ = i.mutable_data();
        distancesObject_ = d;
        labelsObject_ = i;
        return;
    }
    const int device = index.resources().device();
    distancesObject_ = emptyDeviceLike(source, n, k, "float32", device, "search");
    labelsObject_ = emptyDeviceLike(source, n, k, "int64", device, "search");
    cudaStream_t stream = index.resources().stream();
    distances_ = static_cast<float*>(readDeviceArray(distancesObject_, stream).data);
    labels_ = static_cast<int64_t*>(readDeviceArray(labelsObject_, stream).data);
}

} // namespace python
} // namespace faiss_ext
