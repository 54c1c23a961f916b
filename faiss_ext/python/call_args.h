// The arrays of one index call as the C++ API takes them: numpy arrays (host memory,
// numpy_util.h) or CUDA device arrays (device_array.h), under the same rules and
// errors, as a pointer with its count.
#pragma once

#include <cstdint>

#include <pybind11/pybind11.h>

#include <faiss_ext/GpuIndex.h>

#include "device_array.h"
#include "numpy_util.h"

namespace faiss_ext {
namespace python {

namespace py = pybind11;

/// (n, d) float32 vectors for `index`: a numpy array (converted with a copy where its
/// dtype or layout differ) or a device array (read in place; converted on the device
/// by its framework where they differ).
class VectorsArg {
   public:
    VectorsArg(py::handle x, const GpuIndex& index, const char* what);

    int64_t n() const {
        return n_;
    }
    const float* data() const {
        return data_;
    }
    bool onDevice() const {
        return onDevice_;
    }

   private:
    FloatMatrix host_;
    DeviceArray device_;
    bool onDevice_ = false;
    int64_t n_ = 0;
    const float* data_ = nullptr;
};

/// (n,) int64 ids, numpy or device, like VectorsArg.
class IdsArg {
   public:
    IdsArg(py::handle ids, int64_t n, const GpuIndex& index, const char* what);

    const int64_t* data() const {
        return data_;
    }

   private:
    IdVector host_;
    DeviceArray device_;
    const int64_t* data_ = nullptr;
};

/// The (n, k) distances and labels of a search: numpy arrays for host queries, arrays
/// of the queries' framework on the index's device for device queries.
class SearchResults {
   public:
    SearchResults(const VectorsArg& queries, py::handle source, int64_t k, const GpuIndex& index);

    float* distances() const {
        return distances_;
    }
    int64_t* labels() const {
        return labels_;
    }
    py::tuple take() const {
        return py::make_tuple(distancesObject_, labelsObject_);
    }

   private:
    py::object distancesObject_;
    py::object labelsObject_;
    float* distances_ = nullptr;
    int64_t* labels_ = nullptr;
};

} // namespace python
} // namespace faiss_ext
