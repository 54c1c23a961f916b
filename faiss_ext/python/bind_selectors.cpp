#include "selectors.h"

#include <string>

#include <pybind11/numpy.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexIVFFlat.h>

#include "bind.h"
#include "numpy_util.h"
#include "resources.h"

namespace faiss_ext {
namespace python {

namespace {

/// faiss::IDSelectorBitmap over bytes it owns.
struct OwnedBitmap : faiss::IDSelectorBitmap {
    explicit OwnedBitmap(std::vector<uint8_t> b)
            : faiss::IDSelectorBitmap(0, nullptr), bytes(std::move(b)) {
        n = bytes.size();
        bitmap = bytes.data();
    }
    std::vector<uint8_t> bytes;
};

std::unique_ptr<faiss::IDSelector> batchOf(const IdVector& ids) {
    return std::make_unique<faiss::IDSelectorBatch>(size_t(ids.size()), ids.data());
}

/// Whether h is an object of the `faiss` module (SWIG), by its class's module.
bool isFaissObject(py::handle h) {
    const std::string mod = py::str(py::type::of(h).attr("__module__"));
    return mod == "faiss" || mod.rfind("faiss.", 0) == 0;
}

std::string typeName(py::handle h) {
    return py::str(py::type::of(h).attr("__name__"));
}

/// Every id the index stores (the ids a selector is asked about).
IdVector storedIds(const GpuIndex& index) {
    std::vector<int64_t> ids;
    if (auto ivf = dynamic_cast<const GpuIndexIVFFlat*>(&index)) {
        DeviceCall call(index);
        for (int64_t l = 0; l < ivf->nlist(); ++l) {
            const std::vector<int64_t> li = ivf->listIds(l);
            ids.insert(ids.end(), li.begin(), li.end());
        }
    } else {
        auto bang = dynamic_cast<const GpuIndexBang*>(&index);
        const int64_t n = bang ? bang->nodeCount() : index.ntotal;
        ids.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i) {
            ids[size_t(i)] = i;
        }
    }
    IdVector out(py::ssize_t(ids.size()));
    std::copy(ids.begin(), ids.end(), out.mutable_data());
    return out;
}

/// A faiss-module selector as one of ours: the simple types by their fields, anything
/// else (And, Or, XOr, a subclass) evaluated by faiss itself over the stored ids.
const faiss::IDSelector* convertFaiss(const GpuIndex& index, py::handle sel, CallSelection& out) {
    py::module_ faiss = py::module_::import("faiss");
    const std::string name = typeName(sel);
    std::unique_ptr<faiss::IDSelector> made;
    if (name == "IDSelectorRange") {
        made = std::make_unique<faiss::IDSelectorRange>(
                sel.attr("imin").cast<int64_t>(), sel.attr("imax").cast<int64_t>());
    } else if (name == "IDSelectorAll") {
        made = std::make_unique<faiss::IDSelectorAll>();
    } else if (name == "IDSelectorNot") {
        const faiss::IDSelector* inner = convertFaiss(index, sel.attr("sel"), out);
        made = std::make_unique<faiss::IDSelectorNot>(inner);
    } else if (name == "IDSelectorBitmap" || name == "IDSelectorArray") {
        const bool bitmap = name == "IDSelectorBitmap";
        const size_t n = sel.attr("n").cast<size_t>();
        py::object view = faiss.attr("rev_swig_ptr")(sel.attr(bitmap ? "bitmap" : "ids"), n);
        if (bitmap) {
            auto bytes =
                    py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(view);
            made = std::make_unique<OwnedBitmap>(
                    std::vector<uint8_t>(bytes.data(), bytes.data() + bytes.size()));
        } else {
            made = batchOf(IdVector::ensure(view));
        }
    } else {
        // faiss evaluates the selector: an IndexIDMap over the stored ids removes what
        // it selects, and the ids it keeps are the others.
        IdVector ids = storedIds(index);
        py::module_ np = py::module_::import("numpy");
        py::object map = faiss.attr("IndexIDMap")(faiss.attr("IndexFlatL2")(1));
        map.attr("add_with_ids")(np.attr("zeros")(py::make_tuple(ids.size(), 1), "float32"), ids);
        map.attr("remove_ids")(sel);
        py::object kept = faiss.attr("vector_to_array")(map.attr("id_map"));
        py::object chosen = ids[np.attr("isin")(ids, kept, py::arg("invert") = true)];
        made = batchOf(IdVector::ensure(chosen));
    }
    out.owned.push_back(std::move(made));
    return out.owned.back().get();
}

const faiss::IDSelector* selectorOf(const GpuIndex& index, py::handle sel, CallSelection& out) {
    if (sel.is_none()) {
        return nullptr;
    }
    if (py::isinstance<faiss::IDSelector>(sel)) {
        return sel.cast<const faiss::IDSelector*>();
    }
    if (isFaissObject(sel)) {
        return convertFaiss(index, sel, out);
    }
    throw py::type_error(
            "expected an IDSelector of faiss_ext or of the faiss module, got " + typeName(sel));
}

} // namespace

CallSelection searchParamsFrom(const GpuIndex& index, py::handle params) {
    CallSelection out;
    if (params.is_none()) {
        return out;
    }
    if (py::isinstance<faiss::SearchParameters>(params)) {
        out.params = params.cast<const faiss::SearchParameters*>();
        return out;
    }
    if (!isFaissObject(params) || !py::hasattr(params, "sel")) {
        throw py::type_error(
                "params: expected faiss_ext or faiss SearchParameters, got " + typeName(params));
    }
    const std::string name = typeName(params);
    if (name == "SearchParametersIVF" || name == "IVFSearchParameters") {
        auto p = std::make_unique<faiss::SearchParametersIVF>();
        p->nprobe = params.attr("nprobe").cast<size_t>();
        p->max_codes = params.attr("max_codes").cast<size_t>();
        out.ownedParams = std::move(p);
    } else if (name == "SearchParameters") {
        out.ownedParams = std::make_unique<faiss::SearchParameters>();
    } else {
        throw py::type_error("params: faiss's " + name + " is not supported by faiss_ext");
    }
    out.ownedParams->sel =
            const_cast<faiss::IDSelector*>(selectorOf(index, params.attr("sel"), out));
    out.params = out.ownedParams.get();
    return out;
}

CallSelection selectorFrom(const GpuIndex& index, py::handle sel) {
    CallSelection out;
    if (py::isinstance<py::array>(sel) || py::isinstance<py::list>(sel)) {
        IdVector ids = IdVector::ensure(sel);
        if (!ids || ids.ndim() != 1) {
            throw py::value_error("remove_ids: expected a 1-D array of int64 ids");
        }
        out.owned.push_back(batchOf(ids));
        out.sel = out.owned.back().get();
        return out;
    }
    if (sel.is_none()) {
        throw py::type_error("remove_ids: expected an IDSelector or an array of ids, got None");
    }
    out.sel = selectorOf(index, sel, out);
    return out;
}

void bindSelectors(py::module_& m) {
    py::class_<faiss::IDSelector>(
            m, "IDSelector",
            "Base of the selectors (faiss's IDSelector): is_member(id). Search parameters "
            "take one as `sel`; remove_ids takes one.")
            .def("is_member", &faiss::IDSelector::is_member, py::arg("id"));
    py::class_<faiss::IDSelectorRange, faiss::IDSelector>(
            m, "IDSelectorRange", "Ids in [imin, imax).")
            .def(py::init<int64_t, int64_t>(), py::arg("imin"), py::arg("imax"))
            .def_readonly("imin", &faiss::IDSelectorRange::imin)
            .def_readonly("imax", &faiss::IDSelectorRange::imax);
    py::class_<faiss::IDSelectorBatch, faiss::IDSelector>(
            m, "IDSelectorBatch", "The ids of an int64 array (copied).")
            .def(py::init([](py::handle ids) {
                     IdVector v = IdVector::ensure(ids);
                     if (!v || v.ndim() != 1) {
                         throw py::value_error("IDSelectorBatch: expected a 1-D array of ids");
                     }
                     return std::make_unique<faiss::IDSelectorBatch>(size_t(v.size()), v.data());
                 }),
                 py::arg("ids"));
    py::class_<OwnedBitmap, faiss::IDSelector>(
            m, "IDSelectorBitmap",
            "Id i is selected when bit i % 8 of byte i // 8 of the uint8 array is set "
            "(copied), as faiss.IDSelectorBitmap.")
            .def(py::init([](py::handle bitmap) {
                     auto b = py::array_t<uint8_t, py::array::c_style>::ensure(bitmap);
                     if (!b || b.ndim() != 1) {
                         throw py::value_error("IDSelectorBitmap: expected a 1-D uint8 array");
                     }
                     return std::make_unique<OwnedBitmap>(
                             std::vector<uint8_t>(b.data(), b.data() + b.size()));
                 }),
                 py::arg("bitmap"));
    py::class_<faiss::IDSelectorNot, faiss::IDSelector>(
            m, "IDSelectorNot", "The ids another selector does not select.")
            .def(py::init<const faiss::IDSelector*>(), py::arg("sel"), py::keep_alive<1, 2>());
    py::class_<faiss::IDSelectorAll, faiss::IDSelector>(m, "IDSelectorAll", "Every id.")
            .def(py::init<>());
}

} // namespace python
} // namespace faiss_ext
