// Helpers shared by the GpuIndexBang GPU suites (exact and PQ mode).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/impl/BangGraph.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <kernels/BangSearch.h>
#include <kernels/BangStepwise.h>

namespace faiss_ext {
namespace test {

/// x mapped linearly onto [0, 255] and rounded: byte-valued rows of the same shape, which
/// GpuIndexBang stores as bytes (BangVectorStorage).
inline std::vector<float> byteValued(std::vector<float> x) {
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    const float low = *lo, scale = *hi > *lo ? 255.f / (*hi - *lo) : 0.f;
    for (float& v : x) {
        v = std::round((v - low) * scale);
    }
    return x;
}

/// The search kernel a test runs: the persistent one the library runs, or the
/// stepwise comparison kernel (kernels/BangStepwise.h).
enum class BangKernel { kPersistent, kStepwise };

/// Distances of every query to every base row, by the kernels' distance function.
/// The peak use of the device's default pool (every faiss_ext allocation comes from it)
/// since construction, above its use then.
class PoolPeak {
   public:
    explicit PoolPeak(const GpuResources& res) {
        res.synchronize();
        EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool_, res.device()), cudaSuccess);
        before_ = attribute(cudaMemPoolAttrUsedMemCurrent);
        uint64_t zero = 0;
        EXPECT_EQ(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero), cudaSuccess);
    }
    /// Read once the work is done (after a synchronisation).
    uint64_t bytes() const {
        return attribute(cudaMemPoolAttrUsedMemHigh) - before_;
    }

   private:
    uint64_t attribute(cudaMemPoolAttr attr) const {
        uint64_t v = 0;
        EXPECT_EQ(cudaMemPoolGetAttribute(pool_, attr, &v), cudaSuccess);
        return v;
    }

    cudaMemPool_t pool_ = nullptr;
    uint64_t before_ = 0;
};

/// Device bytes of the entry hubs' rows and norms (BangGraph keeps them beside the
/// vectors) for n stored rows `width` floats wide.
inline size_t entryHubBytes(int64_t n, int width) {
    return size_t(bangEntryHubCount(n)) * size_t(width + 1) * sizeof(float);
}

inline std::vector<float> distanceTable(
        const GpuResources& res,
        const std::vector<float>& xq,
        const std::vector<float>& xb,
        int d) {
    const int64_t nq = int64_t(xq.size()) / d, nb = int64_t(xb.size()) / d;
    auto q = res.alloc<float>(xq.size());
    auto b = res.alloc<float>(xb.size());
    auto out = res.alloc<float>(size_t(nq * nb));
    copyToDevice(q.data(), xq.data(), xq.size(), res.stream());
    copyToDevice(b.data(), xb.data(), xb.size(), res.stream());
    kernels::bangDistanceTable(q.data(), nq, b.data(), nb, d, out.data(), res.stream());
    std::vector<float> t(size_t(nq * nb));
    copyToHost(t.data(), out.data(), t.size(), res.stream());
    return t;
}

/// What one search of the kernels returns, copied to the host.
struct DeviceResults {
    std::vector<float> D;
    std::vector<int64_t> I;
    std::vector<int32_t> iters;
};

/// Searches xq (host) with worklist L on the device state of `index` with one kernel.
inline DeviceResults searchWith(
        const GpuIndexBang& index,
        const std::vector<float>& xq,
        int k,
        int L,
        BangKernel kernel) {
    const GpuResources& res = index.resources();
    const int64_t nq = int64_t(xq.size()) / index.d;
    auto q = res.alloc<float>(xq.size());
    auto dD = res.alloc<float>(size_t(nq) * k);
    auto dI = res.alloc<int64_t>(size_t(nq) * k);
    auto dIt = res.alloc<int32_t>(size_t(nq));
    copyToDevice(q.data(), xq.data(), xq.size(), res.stream());
    const BangGraph& state = GpuIndexBangAccess::deviceState(index);
    if (kernel == BangKernel::kPersistent) {
        state.search(q.data(), nq, k, L, dD.data(), dI.data(), dIt.data());
    } else {
        kernels::BangSearchArgs a;
        a.queries = q.data();
        a.nq = nq;
        a.L = L;
        a.k = k;
        a.outD = dD.data();
        a.outI = dI.data();
        a.iterations = dIt.data();
        kernels::bangSearchStepwise(state.view(), a, res.tempMemoryBytes(), res.stream());
    }
    DeviceResults r{
            std::vector<float>(size_t(nq) * k), std::vector<int64_t>(size_t(nq) * k),
            std::vector<int32_t>(size_t(nq))};
    copyToHost(r.D.data(), dD.data(), r.D.size(), res.stream());
    copyToHost(r.I.data(), dI.data(), r.I.size(), res.stream());
    copyToHost(r.iters.data(), dIt.data(), r.iters.size(), res.stream());
    return r;
}

} // namespace test
} // namespace faiss_ext
