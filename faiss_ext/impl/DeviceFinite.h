// The finiteness check of vectors that the caller holds in device memory, without
// bringing them to the host (the host arrays' check is checkFinite, ArgChecks.h).
#pragma once

#include <cstdint>

#include <faiss_ext/GpuResources.h>

namespace faiss_ext {

/// Throws, as checkFinite does (the message names the first bad row), if one of the n
/// x d device vectors has a NaN or infinite component. Sums |x| per block of rows with
/// cuBLAS on res.stream() (a NaN or infinity makes the sum non-finite); only a block
/// whose sum is not finite is copied to the host and scanned, so a finite block whose
/// sum overflows is accepted after that scan.
void checkFiniteOnDevice(
        const GpuResources& res,
        int64_t n,
        int d,
        const float* x,
        const char* what);

} // namespace faiss_ext
