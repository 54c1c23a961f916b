// The `faiss_ext` Python module: faiss-like API over numpy arrays.
#include <cstdint>

#include <faiss/MetricType.h>
#include <faiss/impl/FaissException.h>

#include <faiss_ext/impl/ArgChecks.h>

#include "bind.h"
#include "selectors.h"

PYBIND11_MODULE(faiss_ext, m) {
    using namespace faiss_ext::python;
    m.doc() =
            "faiss_ext: GPU vector-search indexes with a faiss-like API "
            "(numpy float32 in and out; CUDA device arrays of CuPy or PyTorch in and out "
            "on the device).";

    // Every C++ error of the library (bad arguments, CUDA failures, no device).
    py::register_exception<faiss::FaissException>(m, "FaissException", PyExc_RuntimeError);

    m.attr("METRIC_INNER_PRODUCT") = int(faiss::METRIC_INNER_PRODUCT);
    m.attr("METRIC_L2") = int(faiss::METRIC_L2);
    // Largest k a search accepts.
    m.attr("MAX_SEARCH_K") = faiss_ext::kMaxSearchK;

    bindResources(m);
    bindSelectors(m);
    bindIndex(m);
    bindFlat(m);
    bindIvf(m);
    bindBang(m);
    bindIndexIo(m);
    bindParts(m);
    bindFaissBytes(m);
    bindArgumentChecks(m);
}
