// What a GpuIndexBang of n vectors holds once built and what the add that builds it
// takes at its peak (GpuIndexBang::estimateMemory): the arrays of impl/BangGraph.h and
// of each stage of impl/BangBuild.h, counted from their sizes, plus the temporaries'
// caps. Plain C++ (no device), so it is tested against the device's own high-water mark
// on the GPU machine and its arithmetic on any machine.
#pragma once

#include <cstddef>
#include <cstdint>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuIndexBang.h>

namespace faiss_ext {

/// The estimate for n vectors of d components (n >= 1), temporaries capped at
/// tempMemoryBytes (GpuResourcesConfig) and the config's pageBytes.
BangMemoryEstimate estimateBangMemory(
        int64_t n,
        int d,
        faiss::MetricType metric,
        const GpuIndexBangConfig& config,
        size_t tempMemoryBytes);

} // namespace faiss_ext
