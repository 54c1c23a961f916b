// Checks and conversions of the numpy arrays handed to the module. Pure host code
// (no device): the rules are tested on machines without a GPU through the
// `faiss_ext._check_*` functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <faiss/MetricType.h>

namespace faiss_ext {
namespace python {

namespace py = pybind11;

using FloatMatrix = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IdVector = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

/// What the argument rules look at in an array, numpy or device (device_array.h).
struct ArrayDesc {
    char kind = 0;              ///< numpy's dtype kind: 'f', 'i', 'u', 'b', 'c', ...
    std::string dtype;          ///< its name, for messages ("float64")
    std::vector<int64_t> shape; ///< one entry per dimension
};

/// The rules of checkVectors on an array's description: TypeError unless its dtype is
/// real, ValueError unless its shape is (n, d).
void checkVectorsDesc(const ArrayDesc& a, int64_t d, const char* what);
/// The rules of checkIds: TypeError unless its dtype is integer, ValueError unless its
/// shape is (n,).
void checkIdsDesc(const ArrayDesc& a, int64_t n, const char* what);

/// `x` as a C-contiguous float32 (n, d) array. A numpy array of another real dtype
/// (float64, float16, integers) or another layout is converted with a copy; anything
/// else raises TypeError; a shape other than (n, d) raises ValueError. `what` names
/// the call in the messages.
FloatMatrix checkVectors(py::handle x, int64_t d, const char* what);

/// `ids` as a C-contiguous int64 array of n elements (TypeError for non-integer
/// dtypes, ValueError for another shape).
IdVector checkIds(py::handle ids, int64_t n, const char* what);

/// 1 <= k <= kMaxSearchK, else ValueError.
void checkK(int64_t k);

/// METRIC_L2 or METRIC_INNER_PRODUCT (the metrics the indexes support), else ValueError.
faiss::MetricType checkMetric(int metric);

/// The bytes of a serialized index: `bytes`, `bytearray`, or a 1-D uint8 numpy array
/// (what `faiss.serialize_index` returns); TypeError otherwise.
std::vector<uint8_t> serializedBytes(py::handle data);

/// A uint8 numpy array holding a copy of `bytes`.
py::array_t<uint8_t> toUint8Array(const std::vector<uint8_t>& bytes);

} // namespace python
} // namespace faiss_ext
