// Helpers of the flat suites: one flatSearch on a forced path and precision.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/FlatRerankSearch.h>
#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/utils/DeviceBuffer.h>

namespace faiss_ext {
namespace test {

/// search(in, outD, outI) for the queries xq over base rows xb (host, stored with their
/// copy of `copy`'s kind) in metric and precision p, results to the host; returns what
/// search returns.
template <typename Search>
auto searchOnDevice(
        GpuResources& res,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int d,
        int k,
        faiss::MetricType metric,
        GpuFlatPrecision p,
        std::vector<float>& D,
        std::vector<int64_t>& I,
        Search search,
        kernels::CopyCode copy = kernels::CopyCode::kFloat16) {
    const int64_t nb = int64_t(xb.size()) / d, nq = int64_t(xq.size()) / d;
    // With a copy, for FlatSearchPath::kRadixCopy (the other paths do not read it).
    FlatStorage base(res, d, copy);
    base.append(nb, xb.data());
    auto q = res.alloc<float>(xq.size());
    auto dDev = res.alloc<float>(size_t(nq) * k);
    auto iDev = res.alloc<int64_t>(size_t(nq) * k);
    copyToDevice(q.data(), xq.data(), xq.size(), res.stream());
    FlatSearchInput in;
    in.queries = q.data();
    in.nq = nq;
    in.base = base.vectors();
    in.baseNorms = base.norms();
    in.nb = nb;
    in.d = d;
    in.metric = metric;
    in.precision = p;
    in.copy.code = copy;
    in.copy.rows = base.copyRows();
    in.copy.scales = base.copyScales();
    in.copy.maxRelError = base.copyMaxRelError();
    in.copy.maxSquaredNorm = base.copyMaxSquaredNorm();
    auto out = search(in, dDev.data(), iDev.data());
    D = copyToHostVector(dDev.data(), size_t(nq) * k, res.stream());
    I = copyToHostVector(iDev.data(), size_t(nq) * k, res.stream());
    return out;
}

/// flatSearch on `path` in precision p over base rows xb (host, with a copy of `copy`'s
/// kind for kRadixCopy), results to the host.
inline void searchPath(
        GpuResources& res,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int d,
        int k,
        faiss::MetricType metric,
        FlatSearchPath path,
        GpuFlatPrecision p,
        std::vector<float>& D,
        std::vector<int64_t>& I,
        kernels::CopyCode copy = kernels::CopyCode::kFloat16) {
    searchOnDevice(
            res, xb, xq, d, k, metric, p, D, I,
            [&](FlatSearchInput& in, float* oD, int64_t* oI) {
                in.path = path;
                flatSearch(res, in, k, oD, oI);
                return 0;
            },
            copy);
}

/// The rerank path in precision p; returns how many queries it searched again in FP32.
inline int64_t searchRerank(
        GpuResources& res,
        const std::vector<float>& xb,
        const std::vector<float>& xq,
        int d,
        int k,
        faiss::MetricType metric,
        GpuFlatPrecision p,
        std::vector<float>& D,
        std::vector<int64_t>& I) {
    return searchOnDevice(
            res, xb, xq, d, k, metric, p, D, I, [&](FlatSearchInput& in, float* oD, int64_t* oI) {
                return flatSearchRerank(res, in, k, res.tempMemoryBytes(), oD, oI);
            });
}

} // namespace test
} // namespace faiss_ext
