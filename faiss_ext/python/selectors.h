// IDSelectors in the Python module: the module's own (IDSelectorRange, IDSelectorBatch,
// IDSelectorBitmap, IDSelectorNot, IDSelectorAll: faiss's C++ classes), and the
// conversion of the `faiss` module's selector and SearchParameters objects, which live in
// another copy of faiss (never shared as pointers: read through their Python API).
#pragma once

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include <faiss/Index.h>
#include <faiss/IndexIVF.h>
#include <faiss/impl/IDSelector.h>

#include <faiss_ext/GpuIndex.h>

namespace faiss_ext {
namespace python {

namespace py = pybind11;

/// The selectors and parameters one call built (owning), and what to pass on.
struct CallSelection {
    std::vector<std::unique_ptr<faiss::IDSelector>> owned;
    std::unique_ptr<faiss::SearchParameters> ownedParams;
    const faiss::SearchParameters* params = nullptr;
    const faiss::IDSelector* sel = nullptr;
};

/// The SearchParameters of a search / range_search call: None, one of the module's
/// parameter objects, or a `faiss` module SearchParameters / SearchParametersIVF
/// (nprobe and sel are read; its selector converted). TypeError otherwise.
CallSelection searchParamsFrom(const GpuIndex& index, py::handle params);

/// The selector of a remove_ids call: one of the module's selectors, a `faiss` module
/// selector, or an array of ids (as faiss's Python remove_ids). TypeError otherwise.
CallSelection selectorFrom(const GpuIndex& index, py::handle sel);

void bindSelectors(py::module_& m);

/// The `sel` attribute of a parameter class (kept alive by the parameters object).
template <typename Class>
void addSelProperty(Class& cls) {
    cls.def_property(
            "sel",
            py::cpp_function(
                    [](const faiss::SearchParameters& p) { return p.sel; },
                    py::return_value_policy::reference),
            py::cpp_function(
                    [](faiss::SearchParameters& p, faiss::IDSelector* sel) { p.sel = sel; },
                    py::keep_alive<1, 2>()),
            "IDSelector filtering the results (None: every vector).");
}

} // namespace python
} // namespace faiss_ext
