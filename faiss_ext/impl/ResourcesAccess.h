// The library's own way to the pinned staging buffers of a GpuResources: kept out of the
// public API as IndexAccess.h keeps the indexes' device state (GpuResources grants
// GpuResourcesAccess friendship).
#pragma once

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/PinnedStaging.h>

namespace faiss_ext {

struct GpuResourcesAccess {
    /// The pinned host buffers through which searches copy host queries in and results
    /// out (8 MiB, allocated on first use).
    static PinnedStaging& pinnedStaging(const GpuResources& res) {
        return *res.staging_;
    }
};

} // namespace faiss_ext
