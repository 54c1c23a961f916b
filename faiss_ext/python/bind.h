// One function per file that adds its part of the `faiss_ext` module. A new index
// type is one more bind_<index>.cpp: its class, and a CpuConverter (faiss_bytes.h)
// so that it moves to and from faiss through serialized bytes.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include <faiss_ext/IndexConfig.h>

namespace faiss_ext {
namespace python {

namespace py = pybind11;

void bindResources(py::module_& m); // GpuResources, get_num_gpus
void bindIndex(py::module_& m);     // GpuIndex base, SearchParameters
// bindSelectors (selectors.h): IDSelector and its subclasses
void bindFlat(py::module_& m);           // GpuIndexFlat
void bindIvf(py::module_& m);            // GpuIndexIVFFlat, SearchParametersIVF
void bindBang(py::module_& m);           // GpuIndexBang, SearchParametersBang
void bindIndexIo(py::module_& m);        // write_index / read_index (faiss_ext format)
void bindParts(py::module_& m);          // GpuIndexShards, GpuIndexReplicas (several GPUs)
void bindFaissBytes(py::module_& m);     // interop with faiss through bytes
void bindArgumentChecks(py::module_& m); // _check_* (the numpy rules, for tests)

/// GpuFlatPrecision by its Python name ('auto', 'fp32', 'tf32x3'; bind_flat.cpp), and
/// back; an unknown name is a ValueError.
GpuFlatPrecision parsePrecision(const std::string& name);
std::string precisionName(GpuFlatPrecision p);

} // namespace python
} // namespace faiss_ext
