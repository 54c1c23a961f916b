// Copies between device memory and pinned, mapped host memory by a kernel: a search
// graph's queries in and results out. In a CUDA graph a copy kernel is cheaper than a
// memcpy node (H100, 512 KB in and 120 KB out around 10 kernels: 10 us less device time
// and 5 us less launch time; benchs/NOTES.md).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace faiss_ext {
namespace kernels {

/// One contiguous copy: `bytes` (a multiple of 4) from src to dst, both 4-byte aligned.
struct CopySpan {
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
};

constexpr int kMaxCopySpans = 2;

/// Copies every span (at most kMaxCopySpans) in one kernel; either side may be the
/// device address of mapped host memory (MappedHostBuffer::deviceData()).
void copySpans(const CopySpan* spans, int count, int smCount, cudaStream_t stream);

} // namespace kernels
} // namespace faiss_ext
