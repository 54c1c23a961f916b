#include <faiss_ext/impl/DeviceFinite.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace faiss_ext {

namespace {

/// Elements summed by one cuBLAS call (its counts are int); a block that fails is
/// copied to the host, so blocks stay small.
constexpr int64_t kBlockElements = int64_t(1) << 24;

} // namespace

void checkFiniteOnDevice(
        const GpuResources& res,
        int64_t n,
        int d,
        const float* x,
        const char* what) {
    const int64_t rowsPerBlock = std::max<int64_t>(1, kBlockElements / d);
    for (int64_t r0 = 0; r0 < n; r0 += rowsPerBlock) {
        const int64_t rows = std::min(rowsPerBlock, n - r0);
        const float* block = x + r0 * d;
        float sum = 0;
        // Host pointer mode (the handle's default): the call waits for its result.
        FAISS_EXT_CUBLAS_CHECK(cublasSasum(res.cublas(), int(rows * d), block, 1, &sum));
        if (std::isfinite(sum)) {
            continue;
        }
        const std::vector<float> host = copyToHostVector(block, size_t(rows) * d, res.stream());
        for (int64_t i = 0; i < rows; ++i) {
            const float* v = host.data() + size_t(i) * d;
            FAISS_THROW_IF_NOT_FMT(
                    std::all_of(v, v + d, [](float c) { return std::isfinite(c); }),
                    "%s: vector %lld has a NaN or infinite component", what, (long long)(r0 + i));
        }
    }
}

} // namespace faiss_ext
